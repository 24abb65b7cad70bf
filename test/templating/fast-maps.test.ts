import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { ChangeRef } from '../../src/events.ts';
import { parseMapFile } from '../../src/haproxy/map-file.ts';
import { planDeployment } from '../../src/haproxy/plan.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { type FastMapPlan, planFastPath } from '../../src/templating/fast-maps.ts';
import { type RenderedConfig, knowsDigest, sealRendered } from '../../src/templating/rendered.ts';
import { shippedTemplates } from '../webhook/support.ts';
import { mainThreadCluster, shopService as service, shopSlice as slice } from './support.ts';
import { warmFastPath } from '../../src/templating/fast-maps.ts';
import { selfSigned } from '../support/certificates.ts';

const path = (p: string, svc: string, type = 'Prefix') => ({ path: p, pathType: type, backend: { service: { name: svc, port: { number: 80 } } } });
const ingress = (name: string, host: unknown, paths: unknown[], extra: Record<string, unknown> = {}, at = '2026-01-01T00:00:00Z'): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { namespace: 'shop', name, creationTimestamp: at },
  spec: { rules: [{ host, http: { paths } }], ...extra },
});

/** The main thread's side, as the graph keeps it, and the fast path's plan on it. */
function cluster(loaded: LoadedConfig) {
  const { stores, apply, values, full } = mainThreadCluster(loaded);
  const fast = (base: RenderedConfig, changes: ChangeRef[]): FastMapPlan => planFastPath(base, changes, { templates: loaded.templates, values, timeoutMs: 10_000, resources: stores });
  for (let i = 0; i < 3; i++) {
    apply({ type: 'upsert', resource: 'services', object: service(i) });
    apply({ type: 'upsert', resource: 'endpointslices', object: slice(i, [`10.0.${i}.1`]) });
    apply({ type: 'upsert', resource: 'ingresses', object: ingress(`ing-${i}`, `app-${i}.example.com`, [path('/', `svc-${i}`)]) });
  }
  return { stores, apply, full, fast, values };
}

function runtime(plan: FastMapPlan) {
  assert.equal(plan.kind, 'runtime', JSON.stringify(plan.kind === 'unsupported' ? plan.reason : plan.kind));
  return plan as Extract<FastMapPlan, { kind: 'runtime'; entries: unknown }>;
}

/** A map file's entries as a set of lines, whatever their order. */
const entrySet = (text: string | undefined) => new Set(parseMapFile(text ?? '').map((e) => `${e.key} ${e.value}`));

describe('map entries fast path (shipped templates)', () => {
  let loaded: LoadedConfig;
  before(async () => {
    loaded = await shippedTemplates();
  });

  it('adds a new host on an existing backend as map entries at runtime, and the full render that follows agrees', () => {
    const c = cluster(loaded);
    const base = c.full();
    const change = c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('new', 'New.Example.com', [path('/', 'svc-1'), path('/api', 'svc-2', 'Exact')]) });
    const plan = runtime(c.fast(base, [change]));
    assert.deepEqual(
      plan.ops.map((op) => (op.kind === 'map-add' ? `${op.kind} ${op.ref} ${op.key} ${op.value}` : op.kind)),
      ['map-add maps/exact.map new.example.com/api be_shop_svc-2_80', 'map-add maps/prefix.map new.example.com/ be_shop_svc-1_80'],
    );
    assert.deepEqual(plan.entries, [
      { map: 'exact.map', key: 'new.example.com/api', value: 'be_shop_svc-2_80' },
      { map: 'prefix.map', key: 'new.example.com/', value: 'be_shop_svc-1_80' },
    ]);
    assert.equal(plan.config.main, base.main, 'haproxy.cfg is untouched');
    const { main, maps, files, certs } = plan.config;
    assert.equal(plan.config.hash, sealRendered({ main, maps, files, certs }).hash, 'hashed as the same files sealed anew');
    const after = c.full();
    for (const map of ['exact.map', 'prefix.map']) assert.deepEqual(entrySet(plan.config.maps[map]), entrySet(after.maps[map]), map);
    // From what the fast path applied, the full render needs no runtime operation and no reload.
    const next = planDeployment(plan.config, after);
    assert.ok(next.kind === 'none' || (next.kind === 'runtime' && next.ops.length === 0), JSON.stringify(next));
  });

  it('builds on its own prediction: a second path for the new Ingress, then an endpoint change beside a new host', () => {
    const c = cluster(loaded);
    const first = runtime(c.fast(c.full(), [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('new', 'new.example.com', [path('/', 'svc-1')]) })]));
    const second = runtime(c.fast(first.config, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('new', 'new.example.com', [path('/', 'svc-1'), path('/v2', 'svc-0')]) })]));
    assert.deepEqual(second.entries.map((e) => `${e.map} ${e.key}`), ['exact.map new.example.com/v2', 'prefix.map new.example.com/v2/']);
    const both = runtime(
      c.fast(second.config, [
        c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(0, ['10.0.0.1', '10.0.0.7']) }),
        c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('more', 'more.example.com', [path('/', 'svc-0')]) }),
      ]),
    );
    assert.deepEqual(both.ops.map((op) => op.kind), ['server-add', 'map-add']);
    // Each plan's configuration is the base of the next: it carries its digest, so no plan hashes haproxy.cfg again.
    for (const plan of [first, second, both]) assert.ok(knowsDigest(plan.config), 'the planned configuration knows its digest');
    assert.deepEqual(both.backends, ['be_shop_svc-0_80']);
    const after = c.full();
    assert.equal(both.config.main, after.main);
    for (const map of ['exact.map', 'prefix.map']) assert.deepEqual(entrySet(both.config.maps[map]), entrySet(after.maps[map]), map);
  });

  it('never resolves a conflict: a host and path another Ingress holds takes the full path', () => {
    const c = cluster(loaded);
    const base = c.full();
    // Older than ing-1, so the full render would give it the key: only the full path may decide.
    const older = c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('older', 'app-1.example.com', [path('/', 'svc-0')], {}, '2020-01-01T00:00:00Z') });
    assert.deepEqual(c.fast(base, [older]), { kind: 'unsupported', reason: 'Ingress shop/older: prefix.map key app-1.example.com/ is already held by another object' });
    // Two new Ingresses of one batch that want the same key.
    const c2 = cluster(loaded);
    const base2 = c2.full();
    const a = c2.apply({ type: 'upsert', resource: 'ingresses', object: ingress('a', 'same.example.com', [path('/', 'svc-0')]) });
    const b = c2.apply({ type: 'upsert', resource: 'ingresses', object: ingress('b', 'same.example.com', [path('/', 'svc-1')]) });
    assert.equal(c2.fast(base2, [a, b]).kind, 'unsupported');
  });

  it('declines a malformed Ingress, which the full render then skips with a warning', () => {
    const c = cluster(loaded);
    const base = c.full();
    const bad = c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('bad', 'evil.example.com\nbind :9999', [path('/', 'svc-0')]) });
    const plan = c.fast(base, [bad]);
    assert.equal(plan.kind, 'unsupported');
    assert.match(plan.kind === 'unsupported' ? plan.reason : '', /^Ingress shop\/bad: snippets\/ingress-routes:\d+: spec\.rules\[0\]\.host .* is not a DNS name/);
    const result = renderTemplates(loaded.templates, { resources: Object.fromEntries(c.stores), values: { ...loaded.config.values, httpPort: 18080 } });
    assert.ok(result.ok);
    assert.ok(result.warnings.some((w) => w.object === 'Ingress shop/bad' && w.skipped === true));
  });

  it('routes a TLS host first, as a partial plan whose full render brings the certificate; a redirect to HTTPS is not bypassed', () => {
    const c = cluster(loaded);
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const secret = (name: string, host: string) => {
      const pem = selfSigned(host);
      c.apply({ type: 'upsert', resource: 'secrets', object: { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { namespace: 'shop', name }, data: { 'tls.crt': b64(pem.crt), 'tls.key': b64(pem.key) } } });
    };
    // An HTTPS frontend already runs.
    secret('first', 'app-0.example.com');
    secret('cert', 'tls.example.com');
    c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('ing-0', 'app-0.example.com', [path('/', 'svc-0')], { tls: [{ hosts: ['app-0.example.com'], secretName: 'first' }] }) });
    const base = c.full();
    const tls = { tls: [{ hosts: ['tls.example.com'], secretName: 'cert' }] };
    const plan = runtime(c.fast(base, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('tls', 'tls.example.com', [path('/', 'svc-0')], tls, '2026-02-01T00:00:00Z') })]));
    assert.deepEqual(plan.entries, [{ map: 'prefix.map', key: 'tls.example.com/', value: 'be_shop_svc-0_80' }]);
    assert.equal(plan.partial, true);
    // The full render then adds the certificate, at runtime too.
    const next = c.full();
    const after = planDeployment(plan.config, next);
    assert.deepEqual(after.kind === 'runtime' ? after.ops.map((op) => op.kind) : after, ['cert-new', 'crt-list-add']);
    // A plain host is no partial plan: its render only confirms.
    assert.equal(runtime(c.fast(next, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('plain', 'plain.example.com', [path('/', 'svc-0')]) })])).partial, undefined);
    // A missing Secret warns, which the full render tells.
    const missing = c.fast(next, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('nocert', 'nocert.example.com', [path('/', 'svc-0')], { tls: [{ hosts: ['nocert.example.com'], secretName: 'none' }] }) })]);
    assert.deepEqual(missing, { kind: 'unsupported', reason: 'Ingress shop/nocert: its snippet warns about it; the full render tells' });
    // Redirected to HTTPS, its routes go to a backend of their own, which the running configuration lacks.
    const redirected = { ...ingress('tls2', 'tls2.example.com', [path('/', 'svc-0')], tls), metadata: { namespace: 'shop', name: 'tls2', annotations: { 'haprx.io/ssl-redirect': 'true' } } };
    const declined = c.fast(next, [c.apply({ type: 'upsert', resource: 'ingresses', object: redirected })]);
    assert.match(declined.kind === 'unsupported' ? declined.reason : declined.kind, /^backend be_shop_svc-0_80_p\w+ is not in the running configuration$/);
    // A TLS Ingress changed later takes the full path: it asked for more than map entries before.
    const changed = c.fast(next, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('ing-0', 'app-0.example.com', [path('/', 'svc-0'), path('/v2', 'svc-1')], { tls: [{ hosts: ['app-0.example.com'], secretName: 'first' }] }) })]);
    assert.deepEqual(changed, { kind: 'unsupported', reason: 'Ingress shop/ing-0 asked for more than map entries before' });
  });

  it('declines what needs more than map entries: a default backend, a Service with no backend yet, another controller\'s annotations', () => {
    const c = cluster(loaded);
    const base = c.full();
    const reasons = (object: KubeObject) => {
      const plan = c.fast(base, [c.apply({ type: 'upsert', resource: 'ingresses', object })]);
      return plan.kind === 'unsupported' ? plan.reason : plan.kind;
    };
    assert.equal(reasons(ingress('dflt', 'd.example.com', [path('/', 'svc-0')], { defaultBackend: { service: { name: 'svc-0', port: { number: 80 } } } })), 'Ingress shop/dflt asks for more than map entries');
    assert.equal(reasons(ingress('fresh', 'f.example.com', [path('/', 'svc-9')])), 'backend be_shop_svc-9_80 is not in the running configuration');
    assert.equal(reasons({ ...ingress('ngx', 'n.example.com', [path('/', 'svc-0')]), metadata: { namespace: 'shop', name: 'ngx', annotations: { 'nginx.ingress.kubernetes.io/rewrite-target': '/' } } }), 'Ingress shop/ngx asks for more than map entries');
  });

  it('declines a deletion, and a change that drops or moves an entry the Ingress had', () => {
    const c = cluster(loaded);
    const base = c.full();
    const gone = c.apply({ type: 'delete', resource: 'ingresses', object: ingress('ing-1', 'app-1.example.com', []) });
    assert.deepEqual(c.fast(base, [gone]), { kind: 'unsupported', reason: 'Ingress shop/ing-1: a delete takes the full path' });
    const moved = c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('ing-2', 'app-2.example.com', [path('/', 'svc-0')]) });
    assert.deepEqual(c.fast(base, [moved]), { kind: 'unsupported', reason: 'Ingress shop/ing-2 changes or drops its prefix.map entry app-2.example.com/' });
  });

  it('knows what each Ingress it added had, however many plans build on one another', () => {
    const c = cluster(loaded);
    let base = c.full();
    for (let i = 0; i < 40; i++) base = runtime(c.fast(base, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress(`new-${i}`, `new-${i}.example.com`, [path('/', 'svc-1')]) })])).config;
    for (const i of [0, 17, 39]) {
      const moved = c.apply({ type: 'upsert', resource: 'ingresses', object: ingress(`new-${i}`, `new-${i}.example.com`, [path('/', 'svc-2')]) });
      assert.deepEqual(c.fast(base, [moved]), { kind: 'unsupported', reason: `Ingress shop/new-${i} changes or drops its prefix.map entry new-${i}.example.com/` });
    }
    const more = runtime(c.fast(base, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('new-3', 'new-3.example.com', [path('/', 'svc-1'), path('/v2', 'svc-0')]) })]));
    assert.deepEqual(more.entries.map((e) => `${e.map} ${e.key}`), ['exact.map new-3.example.com/v2', 'prefix.map new-3.example.com/v2/']);
  });

  it('warms up on a new base by planning a change of one unchanged object of each kind it takes, which changes nothing, and by rehearsing a server line edit', () => {
    const c = cluster(loaded);
    const base = c.full();
    const tried = warmFastPath(base, { templates: loaded.templates, values: c.values, timeoutMs: 10_000, resources: c.stores });
    assert.deepEqual(tried, [
      { change: 'endpointslices shop/svc-0-abc', plan: 'none' },
      { change: 'ingresses shop/ing-0', plan: 'none' },
      { change: 'a server line fewer in be_shop_svc-0_80, rehearsed', plan: 'runtime' },
    ]);
    // A real change planned after it is what it would have been.
    const plan = runtime(c.fast(base, [c.apply({ type: 'upsert', resource: 'ingresses', object: ingress('new', 'new.example.com', [path('/', 'svc-1')]) })]));
    assert.deepEqual(plan.entries, [{ map: 'prefix.map', key: 'new.example.com/', value: 'be_shop_svc-1_80' }]);
    // Without server lines or map entries declared, there is nothing to plan.
    assert.deepEqual(warmFastPath(sealRendered({ main: 'global\n', maps: {}, files: {}, certs: {} }), { templates: loaded.templates, values: c.values, timeoutMs: 10_000, resources: c.stores }), []);
  });
});
