/**
 * Routing through the shipped templates, end to end: `haprx local` on a folder
 * of Ingresses, Gateways and HTTPRoutes, a real haproxy, real requests to echo
 * backends that report what reached them. One haproxy serves every case.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { type ListenerSpec, gatewayYaml } from '../support/gateway-manifests.ts';
import { cliCommand, parseShowProc } from '../../src/local/master-cli.ts';
import { freePort } from '../support/ports.ts';
import { type Reply, type Send, send, startEchoBackend, until } from './support.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const BACKENDS = ['web', 'web2', 'api', 'docs', 'admin', 'v1', 'v2', 'stable', 'canary', 'rw'] as const;
type Backend = (typeof BACKENDS)[number];

const service = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\nspec: {ports: [{name: http, port: 80, targetPort: 8080}]}\n`;
const slice = (name: string, serviceName: string, port: number) =>
  `apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: ${name}, namespace: shop, labels: {kubernetes.io/service-name: ${serviceName}}}\naddressType: IPv4\nports: [{name: http, port: ${port}}]\nendpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]\n`;
const backend = (svc: string) => `{service: {name: ${svc}, port: {number: 80}}}`;

function ingresses(extraPath = ''): string {
  return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: routes, namespace: shop}
spec:
  rules:
    - host: shop.test
      http:
        paths:
          - {path: /, pathType: Prefix, backend: ${backend('web')}}
          - {path: /api, pathType: Prefix, backend: ${backend('api')}}
          - {path: /api/admin, pathType: Prefix, backend: ${backend('admin')}}
          - {path: /status, pathType: Exact, backend: ${backend('docs')}}
          - {path: /docs, pathType: ImplementationSpecific, backend: ${backend('docs')}}
          - {path: /both, pathType: Prefix, backend: ${backend('api')}}
          - {path: /both, pathType: Exact, backend: ${backend('admin')}}
${extraPath}    - host: "*.wild.test"
      http:
        paths:
          - {path: /, pathType: Prefix, backend: ${backend('api')}}
    - http:
        paths:
          - {path: /catchall, pathType: Prefix, backend: ${backend('admin')}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: secure, namespace: shop, annotations: {haprx.io/ssl-redirect: "true"}}
spec:
  tls: [{hosts: [tls.example], secretName: tls-example}]
  rules:
    - host: tls.example
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('web')}}]}
---
# alice:secret
apiVersion: v1
kind: Secret
metadata: {name: users, namespace: shop}
data: {auth: YWxpY2U6JDUkYWJjZGVmZ2gkZ3J1Q3BDN1ZrT1RzcE1RVFRTQVI4bXRsTzlVcG1zLmZ3cUU1eTE2SlZNLgo=}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: private, namespace: shop, annotations: {haprx.io/auth-type: basic, haprx.io/auth-secret: users}}
spec:
  rules:
    - host: private.test
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('admin')}}]}
`;
}

function gateway(httpPort: number, httpsPort: number, routeChange = ''): string {
  const ref = (name: string, weight?: number) => `{name: ${name}, port: 80${weight === undefined ? '' : `, weight: ${weight}`}}`;
  const listeners: ListenerSpec[] = [
    { name: 'http', port: httpPort, protocol: 'HTTP' },
    { name: 'https', port: httpsPort, protocol: 'HTTPS', hostname: '*.gw.example', certificate: 'gw-example' },
  ];
  return `${gatewayYaml({ name: 'gw', namespace: 'shop', listeners })}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: matches, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [match.gw.test]
  rules:
    - matches: [{headers: [{name: x-version, value: "2"}]}, {queryParams: [{name: variant, value: b}]}]
      backendRefs: [${ref('v2')}]
    - matches: [{method: POST, path: {value: /submit}}]
      backendRefs: [${ref('api')}]
    - matches: [{headers: [{name: x-tenant, type: RegularExpression, value: "eu-[a-z]+"}]}]
      backendRefs: [${ref('docs')}]
    - backendRefs: [${ref('v1')}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: paths, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: ["*.paths.gw.test"]
  rules:
    - matches: [{path: {type: Exact, value: /exact}}]
      backendRefs: [${ref('docs')}]
    - matches: [{path: {type: PathPrefix, value: /prefix}}]
      backendRefs: [${ref('api')}]
    - matches: [{path: {type: RegularExpression, value: "/items/[0-9]+"}}]
      backendRefs: [${ref('admin')}]
    - matches: [{path: {type: PathPrefix, value: /a}}]
      backendRefs: [${ref('api')}]
    - matches: [{path: {type: PathPrefix, value: /a/b}}]
      backendRefs: [${ref('docs')}]
    - matches: [{path: {type: Exact, value: /a/b}}]
      backendRefs: [${ref('admin')}]
---
# The exact hostname beats the wildcard of the paths route, whatever its paths.
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: exact-host, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [www.paths.gw.test]
  rules: [{backendRefs: [${ref('v2')}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: canary, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [canary.gw.test]
  rules: [{backendRefs: [${ref('stable', 80)}, ${ref('canary', 20)}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: filters, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [filters.gw.test]
  rules:
    - matches: [{path: {value: /headers}}]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: {set: [{name: x-set, value: "set 100%"}], add: [{name: x-add, value: added}], remove: [x-remove]}
        - type: ResponseHeaderModifier
          responseHeaderModifier: {set: [{name: x-resp, value: "r"}], remove: [x-powered-by]}
      backendRefs: [${ref('rw')}]
    - matches: [{path: {value: /old}}]
      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}, statusCode: 301}}]
    - matches: [{path: {value: /secure}}]
      filters: [{type: RequestRedirect, requestRedirect: {scheme: https, hostname: www.gw.example}}]
    - matches: [{path: {value: /v1}}]
      filters: [{type: URLRewrite, urlRewrite: {hostname: internal.test, path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]
      backendRefs: [${ref('rw')}]
${routeChange}---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: echo, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [grpc.gw.test]
  rules:
    - matches: [{method: {service: echo.Echo, method: Say}}]
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-via, value: haprx}]}}]
      backendRefs: [{name: grpc, port: 50051}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tls, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  hostnames: [www.gw.example]
  rules: [{backendRefs: [${ref('web')}]}]
`;
}

// A unary method whose messages are raw bytes: no .proto needed on either side.
const SAY: grpc.MethodDefinition<Buffer, Buffer> = {
  path: '/echo.Echo/Say',
  requestStream: false,
  responseStream: false,
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};

/** A gRPC server (@grpc/grpc-js, cleartext HTTP/2) whose Say answers with the message and the x-via metadata it got. */
async function startGrpcEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const server = new grpc.Server();
  server.addService({ Say: SAY }, {
    Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => done(null, Buffer.from(`${call.request.toString()} via ${String(call.metadata.get('x-via')[0] ?? 'nothing')}`)),
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { port, close: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}

interface LogRecord {
  msg: string;
  level: number;
}

describe('routing through the shipped templates (haprx local, real haproxy)', () => {
  let dir: string;
  let manifests: string;
  let stateDir: string;
  let haprx: ChildProcess;
  const ports = { http: 0, https: 0, gwHttp: 0, gwHttps: 0 };
  const logs: LogRecord[] = [];
  const echo = {} as Record<Backend, Awaited<ReturnType<typeof startEchoBackend>>>;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let grpcEcho: Awaited<ReturnType<typeof startGrpcEcho>>;

  // The master re-executes on a reload, and its socket is briefly gone.
  const reloads = () => until('the master CLI', async () => parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))?.reloads, 5_000);
  const deployments = () => logs.filter((l) => l.msg.startsWith('deployed to local'));
  const recent = () => logs.slice(-30).map((l) => l.msg).join('\n');
  type Sender = (req: Send) => Promise<Reply>;
  const at = (port: number): Sender => (req) => send(port, req);
  let http: Sender;
  let https: Sender;
  let gw: Sender;
  let gwTls: Sender;
  const who = (r: Reply) => r.echo?.name ?? `status ${r.status}`;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-routing-'));
    manifests = join(dir, 'manifests');
    stateDir = join(dir, 'state');
    await mkdir(manifests);
    for (const name of BACKENDS) echo[name] = await startEchoBackend(name);
    grpcEcho = await startGrpcEcho();
    for (const key of Object.keys(ports) as (keyof typeof ports)[]) ports[key] = await freePort();
    http = at(ports.http);
    https = (req) => send(ports.https, { ...req, tls: true });
    gw = at(ports.gwHttp);
    gwTls = (req) => send(ports.gwHttps, { ...req, tls: true });
    const services = BACKENDS.filter((b) => b !== 'web2').map(service);
    const slices = BACKENDS.filter((b) => b !== 'web2').map((b) => slice(`${b}-1`, b, echo[b].port));
    const grpcService = `apiVersion: v1\nkind: Service\nmetadata: {name: grpc, namespace: shop}\nspec: {ports: [{name: grpc, port: 50051}]}\n`;
    await writeFile(join(manifests, 'services.yaml'), [...services, ...slices, grpcService, slice('grpc-1', 'grpc', grpcEcho.port).replace('name: http', 'name: grpc')].join('---\n'));
    await writeFile(join(manifests, 'certificates.yaml'), await readFile(join(ROOT, 'templates/tests/_certificates.yaml'), 'utf8'));
    await writeFile(join(manifests, 'ingresses.yaml'), ingresses());
    await writeFile(join(manifests, 'gateway.yaml'), gateway(ports.gwHttp, ports.gwHttps));
    const sets = { httpPort: ports.http, httpsPort: ports.https, sslRedirectPort: ports.https, bindAddress: '127.0.0.1' };
    // The TypeScript entry point: bin/haprx.js would prefer a build in dist/, which may be stale.
    haprx = spawn(process.execPath, ['src/cli/main.ts', 'local', manifests, '--templates', 'templates', '--state-dir', stateDir, ...Object.entries(sets).flatMap(([k, v]) => ['--set', `${k}=${v}`])], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HAPRX_LOG_LEVEL: 'debug' },
    });
    createInterface({ input: haprx.stdout!, crlfDelay: Infinity }).on('line', (line) => {
      if (line.startsWith('{')) logs.push(JSON.parse(line) as LogRecord);
    });
    haprx.stderr!.setEncoding('utf8').on('data', (chunk: string) => logs.push({ msg: `stderr: ${chunk}`, level: 50 }));
    await until('the first deployment', () => deployments()[0], 20_000, recent);
  });

  after(async () => {
    agent.destroy();
    if (haprx && haprx.exitCode === null) {
      haprx.kill('SIGTERM');
      await new Promise((r) => haprx.once('exit', r));
    }
    await Promise.all(Object.values(echo).map((e) => e.close()));
    await grpcEcho?.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('Ingress', () => {
    it('routes by exact host, one-label wildcard and catch-all rules, ignoring case and port', async () => {
      assert.equal(who(await http({ host: 'shop.test', path: '/' })), 'web');
      assert.equal(who(await http({ host: 'SHOP.test:80', path: '/cart' })), 'web');
      assert.equal(who(await http({ host: 'eu.wild.test', path: '/x' })), 'api');
      assert.equal(who(await http({ host: 'a.eu.wild.test', path: '/x' })), 'status 404', 'a wildcard covers one label');
      assert.equal(who(await http({ host: 'anything.test', path: '/catchall/x' })), 'admin');
      assert.equal(who(await http({ host: 'anything.test', path: '/' })), 'status 404');
    });

    it('matches each path type as the spec says', async () => {
      assert.equal(who(await http({ host: 'shop.test', path: '/status' })), 'docs', 'Exact');
      assert.equal(who(await http({ host: 'shop.test', path: '/status/' })), 'web', 'Exact does not match a trailing slash');
      assert.equal(who(await http({ host: 'shop.test', path: '/api' })), 'api', 'Prefix, the path itself');
      assert.equal(who(await http({ host: 'shop.test', path: '/api/orders/7?x=1' })), 'api', 'Prefix, below it');
      assert.equal(who(await http({ host: 'shop.test', path: '/apis' })), 'web', 'Prefix matches whole elements');
      assert.equal(who(await http({ host: 'shop.test', path: '/docs/guide' })), 'docs', 'ImplementationSpecific is Prefix');
    });

    it('gives precedence to Exact over Prefix, the longest prefix, and host rules over catch-all rules', async () => {
      assert.equal(who(await http({ host: 'shop.test', path: '/both' })), 'admin');
      assert.equal(who(await http({ host: 'shop.test', path: '/both/x' })), 'api');
      assert.equal(who(await http({ host: 'shop.test', path: '/api/admin/users' })), 'admin');
      assert.equal(who(await http({ host: 'shop.test', path: '/catchall' })), 'web', 'the host rule / wins over the catch-all /catchall');
    });

    it('serves TLS with the certificate for the SNI name, and redirects plain HTTP there', async () => {
      const secure = await https({ host: 'tls.example', path: '/x' });
      assert.equal(who(secure), 'web');
      assert.equal(secure.certificate, 'tls.example');
      assert.equal(secure.echo?.headers['x-forwarded-proto'], 'https');
      const plain = await http({ host: 'tls.example', path: '/x?y=1' });
      assert.equal(plain.status, 308);
      assert.equal(plain.headers.location, `https://tls.example:${ports.https}/x?y=1`);
    });

    it('asks for basic auth where the annotation says so', async () => {
      assert.equal((await http({ host: 'private.test' })).status, 401);
      assert.equal(who(await http({ host: 'private.test', headers: { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` } })), 'admin');
    });
  });

  describe('Gateway API', () => {
    it('matches headers (exact and regex), query parameters and the method', async () => {
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/' })), 'v1');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/', headers: { 'X-Version': '2' } })), 'v2');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/', headers: { 'x-version': '3' } })), 'v1');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/?variant=b' })), 'v2');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/?variant=c' })), 'v1');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/submit', method: 'POST' })), 'api');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/submit' })), 'v1');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/', headers: { 'x-tenant': 'eu-west' } })), 'docs');
      assert.equal(who(await gw({ host: 'match.gw.test', path: '/', headers: { 'x-tenant': 'us-east' } })), 'v1');
    });

    it('matches paths (Exact, PathPrefix, RegularExpression) and hostnames, with the spec precedence', async () => {
      const host = 'x.paths.gw.test';
      assert.equal(who(await gw({ host, path: '/exact' })), 'docs');
      assert.equal(who(await gw({ host, path: '/exact/' })), 'status 404');
      assert.equal(who(await gw({ host, path: '/prefix/a' })), 'api');
      assert.equal(who(await gw({ host, path: '/prefixes' })), 'status 404');
      assert.equal(who(await gw({ host, path: '/items/12' })), 'admin');
      assert.equal(who(await gw({ host, path: '/items/x' })), 'status 404');
      assert.equal(who(await gw({ host, path: '/a/b' })), 'admin', 'Exact before prefixes');
      assert.equal(who(await gw({ host, path: '/a/b/c' })), 'docs', 'the longest prefix');
      assert.equal(who(await gw({ host, path: '/a/c' })), 'api');
      assert.equal(who(await gw({ host: 'a.b.paths.gw.test', path: '/exact' })), 'docs', 'a route wildcard covers several labels');
      assert.equal(who(await gw({ host: 'www.paths.gw.test', path: '/exact' })), 'v2', 'an exact hostname beats a wildcard');
      assert.equal(who(await gw({ host: 'paths.gw.test', path: '/exact' })), 'status 404');
    });

    it('splits traffic by weight, within a tolerance', async () => {
      const counts: Record<string, number> = {};
      const total = 1000;
      for (let i = 0; i < total; i++) {
        const name = who(await gw({ host: 'canary.gw.test', agent }));
        counts[name] = (counts[name] ?? 0) + 1;
      }
      assert.deepEqual(Object.keys(counts).sort(), ['canary', 'stable']);
      // 20% of 1000: the standard deviation is about 12.6, so ±60 is more than 4.5 sigma.
      assert.ok(Math.abs(counts.canary! - 200) <= 60, JSON.stringify(counts));
    });

    it('modifies request and response headers', async () => {
      const reply = await gw({ host: 'filters.gw.test', path: '/headers', headers: { 'x-set': 'old', 'x-add': 'first', 'x-remove': 'bye', 'x-keep': 'kept' } });
      assert.equal(who(reply), 'rw');
      const seen = reply.echo!.headers;
      assert.equal(seen['x-set'], 'set 100%');
      assert.equal(seen['x-add'], 'first, added');
      assert.equal(seen['x-remove'], undefined);
      assert.equal(seen['x-keep'], 'kept');
      assert.equal(reply.headers['x-resp'], 'r');
      assert.equal(reply.headers['x-powered-by'], undefined);
      assert.equal((await gw({ host: 'match.gw.test' })).headers['x-powered-by'], 'echo', 'other routes keep it');
    });

    it('redirects and rewrites', async () => {
      const moved = await gw({ host: 'filters.gw.test', path: '/old/page?q=1' });
      assert.equal(moved.status, 301);
      assert.equal(moved.headers.location, `http://filters.gw.test:${ports.gwHttp}/new/page?q=1`);
      const upgraded = await gw({ host: 'filters.gw.test', path: '/secure' });
      assert.equal(upgraded.status, 302);
      assert.equal(upgraded.headers.location, 'https://www.gw.example/secure');
      const rewritten = await gw({ host: 'filters.gw.test', path: '/v1/items?id=3' });
      assert.equal(who(rewritten), 'rw');
      assert.equal(rewritten.echo!.url, '/v2/items?id=3');
      assert.equal(rewritten.echo!.headers.host, 'internal.test');
    });

    it('routes a gRPC call from a gRPC client (@grpc/grpc-js) over HTTP/2 to a gRPC server, by service and method, with its filter', async () => {
      const Client = grpc.makeGenericClientConstructor({ Say: SAY }, 'Echo');
      const call = (service: string, host: string) => {
        const client = new Client(`127.0.0.1:${ports.gwHttp}`, grpc.credentials.createInsecure(), { 'grpc.default_authority': host });
        const method = service === 'echo.Echo' ? 'Say' : 'Say';
        const path = service === 'echo.Echo' ? SAY.path : `/${service}/Say`;
        return new Promise<{ error?: grpc.ServiceError; reply?: string }>((resolve) => {
          client.makeUnaryRequest(path, SAY.requestSerialize, SAY.responseDeserialize, Buffer.from('hello'), new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (error, reply) => {
            client.close();
            resolve({ error: error ?? undefined, reply: reply?.toString() });
          });
          void method;
        });
      };
      const ok = await call('echo.Echo', 'grpc.gw.test');
      assert.equal(ok.error, undefined, ok.error?.message);
      assert.equal(ok.reply, 'hello via haprx');
      const other = await call('other.Service', 'grpc.gw.test');
      assert.ok(other.error, 'no rule for another service');
      assert.equal(other.error.code, grpc.status.UNIMPLEMENTED, `${other.error.code} ${other.error.message}`);
    });

    it('terminates TLS on an HTTPS listener with its certificateRefs', async () => {
      const reply = await gwTls({ host: 'www.gw.example', path: '/' });
      assert.equal(who(reply), 'web');
      assert.equal(reply.certificate, 'gw.example');
    });
  });

  describe('changes at runtime', () => {
    it('applies a new Ingress path (a map entry) and a new endpoint (a server) without reloading', async () => {
      const before = await reloads();
      await writeFile(join(manifests, 'ingresses.yaml'), ingresses(`    - host: new.test\n      http:\n        paths:\n          - {path: /fresh, pathType: Prefix, backend: ${backend('docs')}}\n`));
      await until('the new route', async () => (who(await http({ host: 'new.test', path: '/fresh/x' })) === 'docs' ? true : undefined), 15_000, recent);
      await writeFile(join(manifests, 'web2.yaml'), slice('web-2', 'web', echo.web2.port));
      await until('traffic on the new endpoint', async () => {
        for (let i = 0; i < 4; i++) if (who(await http({ host: 'shop.test', path: '/' })) === 'web2') return true;
        return undefined;
      }, 15_000, recent);
      assert.equal(await reloads(), before, 'no reload');
    });

    it('applies an HTTPRoute rule added, changed and removed (a path to a backend in use) without reloading', async () => {
      const before = await reloads();
      const rule = (service: string) => `    - matches: [{path: {value: /added}}]\n      backendRefs: [{name: ${service}, port: 80}]\n`;
      await writeFile(join(manifests, 'gateway.yaml'), gateway(ports.gwHttp, ports.gwHttps, rule('admin')));
      await until('the new rule', async () => (who(await gw({ host: 'filters.gw.test', path: '/added' })) === 'admin' ? true : undefined), 15_000, recent);
      await writeFile(join(manifests, 'gateway.yaml'), gateway(ports.gwHttp, ports.gwHttps, rule('docs')));
      await until('the changed rule', async () => (who(await gw({ host: 'filters.gw.test', path: '/added' })) === 'docs' ? true : undefined), 15_000, recent);
      await writeFile(join(manifests, 'gateway.yaml'), gateway(ports.gwHttp, ports.gwHttps));
      await until('the rule gone', async () => (who(await gw({ host: 'filters.gw.test', path: '/added' })) === 'status 404' ? true : undefined), 15_000, recent);
      assert.equal(await reloads(), before, 'no reload');
    });

    it('reloads once for a rule with a filter of its own, and serves it', async () => {
      const before = await reloads();
      const extra = '    - matches: [{path: {value: /filtered}}]\n      filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: x-new, value: "1"}]}}]\n      backendRefs: [{name: admin, port: 80}]\n';
      await writeFile(join(manifests, 'gateway.yaml'), gateway(ports.gwHttp, ports.gwHttps, extra));
      await until('the new rule', async () => ((await gw({ host: 'filters.gw.test', path: '/filtered' })).headers['x-new'] === '1' ? true : undefined), 15_000, recent);
      assert.equal(await reloads(), before + 1);
    });
  });
});
