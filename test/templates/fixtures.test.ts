/**
 * `haprx test`: the shipped library's own fixtures pass, every feature has one,
 * and the runner reports what fails (so that a passing run means something).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runFixtures, stubBackends } from '../../src/cli/test-command.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const TEMPLATES = join(ROOT, 'templates');

/** Each feature of the library and the fixture that shows it. */
const FEATURES: Record<string, string> = {
  'IngressClass: ingressClassName, legacy annotation, other classes': 'ingress-class.yaml',
  'IngressClass: the default class': 'ingress-default-class.yaml',
  'Ingress: exact, wildcard and catch-all hosts': 'ingress-hosts.yaml',
  'Ingress: pathType Exact': 'ingress-path-exact.yaml',
  'Ingress: pathType Prefix': 'ingress-path-prefix.yaml',
  'Ingress: pathType ImplementationSpecific': 'ingress-path-implementation-specific.yaml',
  'Ingress: precedence': 'ingress-precedence.yaml',
  'Ingress: defaultBackend': 'ingress-default-backend.yaml',
  'Ingress: Service ports by name or number, EndpointSlices': 'ingress-service-ports.yaml',
  'Ingress: TLS with SNI': 'ingress-tls.yaml',
  'Ingress: HTTP to HTTPS redirect': 'ingress-ssl-redirect.yaml',
  'Ingress: a Server header, absolute-form requests without a path': 'ingress-server-header.yaml',
  'Annotations: timeouts, load-balance': 'ingress-annotations-backend.yaml',
  'Annotations: source allowlist': 'ingress-annotations-allowlist.yaml',
  'Annotations: basic auth': 'ingress-annotations-auth.yaml',
  'Annotations: rate limit': 'ingress-annotations-rate-limit.yaml',
  'GatewayClass': 'gateway-class.yaml',
  'Gateway listeners: HTTP, HTTPS with certificateRefs': 'gateway-listeners.yaml',
  'Gateway allowedRoutes': 'httproute-allowed-routes.yaml',
  'HTTPRoute hostnames': 'httproute-hostnames.yaml',
  'HTTPRoute path matches': 'httproute-paths.yaml',
  'HTTPRoute header, query and method matches': 'httproute-matches.yaml',
  'HTTPRoute precedence': 'httproute-precedence.yaml',
  'HTTPRoute header modifiers': 'httproute-header-modifiers.yaml',
  'HTTPRoute RequestRedirect': 'httproute-redirect.yaml',
  'HTTPRoute URLRewrite': 'httproute-rewrite.yaml',
  'HTTPRoute weighted backendRefs': 'httproute-weights.yaml',
  'HTTPRoute backendRefs and ReferenceGrant': 'httproute-backend-refs.yaml',
  'HTTPRoute features haproxy cannot serve: refused with UnsupportedValue': 'httproute-unsupported.yaml',
  'HTTPRoute CORS': 'httproute-cors.yaml',
  'HTTPRoute timeouts and retries': 'httproute-timeouts-retries.yaml',
  'HTTPRoute filters on backendRefs': 'httproute-backend-filters.yaml',
  'HTTPRoute backends by appProtocol: h2c, WebSocket': 'httproute-backend-protocols.yaml',
  'Gateway: 421 for misdirected requests': 'gateway-misdirected.yaml',
  'Gateway: Gateways isolated by port': 'gateway-isolation.yaml',
  'GRPCRoute': 'grpcroute.yaml',
  'TLSRoute and TCPRoute': 'tlsroute-tcproute.yaml',
  'BackendTLSPolicy': 'backendtlspolicy.yaml',
  'Invalid values skip their object with a warning': 'invalid-values.yaml',
  'ingress-nginx: off without the ingressNginx value': 'nginx-off.yaml',
  'ingress-nginx: IngressClasses and class names': 'nginx-class.yaml',
  'ingress-nginx: path rules, trailing slash, normalisation': 'nginx-paths.yaml',
  'ingress-nginx: use-regex': 'nginx-regex.yaml',
  'ingress-nginx: rewrite-target, x-forwarded-prefix': 'nginx-rewrite.yaml',
  'ingress-nginx: HTTPS redirects': 'nginx-ssl-redirect.yaml',
  'ingress-nginx: ssl-passthrough': 'nginx-ssl-passthrough.yaml',
  'ingress-nginx: backend protocols, proxy-ssl-*': 'nginx-backend-protocol.yaml',
  'ingress-nginx: body size, timeouts': 'nginx-body-timeouts.yaml',
  'ingress-nginx: CORS': 'nginx-cors.yaml',
  'ingress-nginx: source ranges, basic auth': 'nginx-access.yaml',
  'ingress-nginx: external auth': 'nginx-external-auth.yaml',
  'ingress-nginx: client certificates': 'nginx-client-certificates.yaml',
  'ingress-nginx: affinity, hashing, load-balance, upstream-vhost': 'nginx-balance.yaml',
  'ingress-nginx: canaries': 'nginx-canary.yaml',
  'ingress-nginx: redirects, app-root, from-to-www': 'nginx-redirects.yaml',
  'ingress-nginx: rate limits': 'nginx-rate-limit.yaml',
  'ingress-nginx: unsupported annotations, snippets refused': 'nginx-unsupported.yaml',
  'ingress-nginx: snippets ignored by choice': 'nginx-snippets-ignored.yaml',
  'Gateway API status: conditions and reasons of classes, Gateways, listeners and route parents': 'gateway-status.yaml',
};

describe('haprx test: the shipped fixtures', () => {
  it('every feature has a fixture, and every fixture is listed here', async () => {
    const files = (await readdir(join(TEMPLATES, 'tests'))).filter((f) => f.endsWith('.yaml') && !f.startsWith('_')).sort();
    assert.deepEqual(files, [...new Set(Object.values(FEATURES))].sort());
  });

  it('all pass against the real haproxy', async (t) => {
    const started = Date.now();
    const results = await runFixtures(TEMPLATES);
    const failures = results.filter((r) => !r.ok).map((r) => `${r.file}: ${r.error ?? r.results.filter((a) => !a.ok).map((a) => `${a.assertion}: ${a.message}`).join('; ')}`);
    assert.deepEqual(failures, []);
    const assertions = results.reduce((n, r) => n + r.results.length, 0);
    t.diagnostic(`${results.length} fixtures, ${assertions} assertions, ${Date.now() - started} ms`);
    assert.ok(assertions >= 200, `${assertions} assertions`);
  });
});

describe('haprx test: the runner', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-fixtures-'));
    await mkdir(join(dir, 'tests'));
    await writeFile(join(dir, 'haprx.yaml'), 'watch:\n  - {name: services, apiVersion: v1, resource: services}\nvalues: {httpPort: 80, bindAddress: ""}\n');
    await writeFile(
      join(dir, 'haproxy.cfg'),
      [
        'defaults',
        '  mode http',
        '  timeout connect 1s',
        '  timeout client 1s',
        '  timeout server 1s',
        'frontend http',
        '  bind <%= `${values.bindAddress}:${values.httpPort}` %>',
        '<% if (values.extra) { -%>',
        '  <%- values.extra %>',
        '<% } -%>',
        "<% for (const s of resources.services.list()) { if (!h.isPort(s.spec?.ports?.[0]?.port)) { h.warn(s, 'no port'); continue } -%>",
        '  use_backend <%= h.identifier("be", s.metadata.name) %> if { path_beg <%= `/${s.metadata.name}` %> }',
        '<% } -%>',
        '  default_backend be_none',
        'backend be_none',
        '<% for (const s of resources.services.list()) if (h.isPort(s.spec?.ports?.[0]?.port)) { -%>',
        'backend <%= h.identifier("be", s.metadata.name) %>',
        '<% } -%>',
        '',
      ].join('\n'),
    );
    const svc = (name: string, port: unknown) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'x' }, spec: { ports: [{ port }] } });
    const fixture = (name: string, body: Record<string, unknown>) => writeFile(join(dir, 'tests', name), JSON.stringify(body));
    await fixture('pass.yaml', {
      name: 'passes',
      resources: [svc('a', 80), svc('b', 'nope')],
      assert: [
        { valid: true },
        { contains: 'use_backend be_a' },
        { notContains: 'be_b' },
        { warning: 'Service x/b: no port' },
        { request: { path: '/a/x' }, backend: 'be_a', status: 200, uri: '/a/x' },
        { request: { path: '/elsewhere' }, backend: 'be_none' },
      ],
    });
    await fixture('fail.yaml', {
      name: 'fails',
      values: { extra: 'no-such-directive here' },
      resources: [svc('a', 80)],
      assert: [
        { valid: true },
        { contains: 'use_backend be_z' },
        { notContains: 'use_backend be_a' },
        { warning: 'never raised' },
        { noWarnings: true },
        { request: { path: '/a' }, backend: 'be_none' },
      ],
    });
    await fixture('broken.yaml', { name: 'broken', assert: [{ contains: 'x', notContains: 'y' }] });
    await fixture('counted.yaml', {
      name: 'counted',
      resources: [svc('a', 80)],
      assert: [
        { request: { path: '/a' }, repeat: 5, backends: { be_a: [5, 5] }, statuses: { '200': [5, 5] } },
        { request: { path: '/a' }, repeat: 3, backends: { be_a: [0, 1] } },
        { request: { path: '/a' }, headersMatch: { 'x-haprx-backend': '^be_[a-z]$' }, requestHeadersMatch: { host: '^local' } },
        { request: { path: '/a' }, headersMatch: { 'x-haprx-backend': '^be_none$' } },
      ],
    });
    await fixture('misspelt.yaml', { name: 'misspelt', assert: [{ request: { path: '/a' }, backnd: 'be_a' }] });
    await fixture('misspelt-request.yaml', { name: 'misspelt request', assert: [{ request: { pth: '/a' }, status: 200 }] });
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports each assertion, passing or failing, and a fixture that cannot be read', async () => {
    const results = await runFixtures(dir);
    const byFile = Object.fromEntries(results.map((r) => [r.file, r]));
    assert.equal(byFile['pass.yaml']?.ok, true, JSON.stringify(byFile['pass.yaml']));
    assert.equal(byFile['pass.yaml']?.results.length, 6);
    const failed = byFile['fail.yaml']!;
    assert.equal(failed.ok, false);
    const verdicts = failed.results.map((r) => [r.assertion.split(' ')[0], r.ok]);
    // The valid check fails: haproxy -c refuses the unknown directive; the request fails because haproxy cannot start.
    assert.deepEqual(verdicts, [
      ['valid:', false],
      ['contains', false],
      ['notContains', false],
      ['warning', false],
      ['noWarnings', true],
      ['request', false],
    ]);
    assert.match(failed.results[0]!.message!, /no-such-directive/);
    assert.match(failed.results[5]!.message!, /haproxy did not start/);
    assert.equal(byFile['broken.yaml']?.ok, false);
    assert.match(byFile['broken.yaml']!.error!, /exactly one of/);
  });

  it('counts the answers of a repeated request against bounds, matches headers by regex, and refuses a misspelt key', async () => {
    const results = await runFixtures(dir, { match: 'counted' });
    const verdicts = results[0]!.results.map((r) => r.ok);
    assert.deepEqual(verdicts, [true, false, true, false], JSON.stringify(results[0]!.results));
    assert.match(results[0]!.results[1]!.message!, /backend be_a: 3 answers, expected 0 to 1/);
    assert.match(results[0]!.results[3]!.message!, /x-haprx-backend is "be_a", expected to match/);
    const misspelt = await runFixtures(dir, { match: 'misspelt' });
    assert.deepEqual(misspelt.map((r) => r.error).sort(), ['assert[0].request: unknown pth', 'assert[0]: unknown backnd']);
  });

  it('exits 0 when every fixture passes and 1 otherwise, naming the failures', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [join(ROOT, 'src/cli/main.ts'), 'test', ...args], { encoding: 'utf8' });
    const ok = run([dir, '--match', 'pass']);
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /^ok {3}pass\.yaml: passes/m);
    assert.match(ok.stdout, /1 passed, 0 failed/);
    const bad = run([dir]);
    assert.equal(bad.status, 1);
    assert.match(bad.stdout, /FAIL fail\.yaml: fails/);
    assert.match(bad.stdout, /- contains "use_backend be_z" in haproxy\.cfg/);
    assert.match(bad.stdout, /1 passed, 5 failed/);
    assert.equal(run([]).status, 2);
  });

  it('stubs every backend and names the answering backend in every frontend', () => {
    const stubbed = stubBackends('frontend f\n  bind :80\nbackend a\n  server s 10.0.0.1:80\nbackend b\n');
    assert.equal(
      stubbed,
      [
        'frontend f',
        '  bind :80',
        '  http-after-response set-header x-haprx-backend "%[be_name]"',
        'backend a',
        '  server s 10.0.0.1:80',
        '  http-request return status 200 content-type text/plain hdr x-haprx-uri "%[pathq]" lf-string "%[req.hdrs]"',
        'backend b',
        '  http-request return status 200 content-type text/plain hdr x-haprx-uri "%[pathq]" lf-string "%[req.hdrs]"',
        '',
      ].join('\n'),
    );
  });
});
