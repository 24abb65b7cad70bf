import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { ChangeRef } from '../../src/events.ts';
import { planDeployment } from '../../src/haproxy/plan.ts';
import { Store } from '../../src/k8s/store.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { type FastPlan, planFast, prepareFast, rehearseServerEdit } from '../../src/templating/fast-path.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import { type RenderedConfig, serverLines } from '../../src/templating/rendered.ts';
import { changeRef } from '../../streams/trigger.ts';
import { shippedTemplates } from '../webhook/support.ts';
import { compiled, mainThreadCluster, shopIngress as ingress, shopService as service, shopSlice as slice } from './support.ts';

/** The main thread's side, as the graph keeps it, and the fast path's plan on it. */
function cluster(loaded: LoadedConfig) {
  const { stores, apply, values, full } = mainThreadCluster(loaded);
  const fast = (base: RenderedConfig, changes: ChangeRef[]): FastPlan => planFast(base, changes, { templates: loaded.templates, values, timeoutMs: 10_000, resources: stores });
  return { stores, apply, full, fast };
}

function runtime(plan: FastPlan) {
  assert.equal(plan.kind, 'runtime', JSON.stringify(plan.kind === 'unsupported' ? plan.reason : plan.kind));
  return plan as Extract<FastPlan, { kind: 'runtime' }>;
}

describe('planFast (shipped templates)', () => {
  let loaded: LoadedConfig;
  before(async () => {
    loaded = await shippedTemplates();
  });

  const start = () => {
    const c = cluster(loaded);
    for (let i = 0; i < 5; i++) {
      c.apply({ type: 'upsert', resource: 'services', object: service(i) });
      c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(i, [`10.0.${i}.1`, `10.0.${i}.2`]) });
      c.apply({ type: 'upsert', resource: 'ingresses', object: ingress(i) });
    }
    return c;
  };

  it('plans on the full render that agrees with its last plan as on that plan, and from the full render\'s own server sets', () => {
    const c = start();
    const planned = runtime(c.fast(c.full(), [c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.0.3.1', '10.0.3.9']) })]));
    const agreeing = c.full();
    assert.equal(agreeing.hash, planned.config.hash);
    const next = c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.0.3.7']) });
    const fromAgreeing = runtime(c.fast(agreeing, [next]));
    assert.equal(fromAgreeing.config.hash, c.full().hash);
    assert.deepEqual(fromAgreeing.ops, runtime(c.fast(planned.config, [next])).ops);
    // Made ready beforehand (as when it becomes the base), it plans the same.
    const ready = c.full();
    prepareFast(ready);
    const last = c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.0.3.6']) });
    assert.equal(runtime(c.fast(ready, [last])).config.hash, c.full().hash);
  });

  it('takes over its own plan\'s index for a full render with the same bytes only when the render recorded the same server sets', () => {
    const c = start();
    const planned = runtime(c.fast(c.full(), [c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.0.3.1', '10.0.3.9']) })]));
    const agreeing = c.full();
    assert.equal(agreeing.hash, planned.config.hash);
    // The same bytes, but the render recorded no lookups for svc-2's lines (as when what
    // they read changed and they came out the same): a change of svc-2's slice is then
    // none of theirs, whatever the plan made from the same bytes recorded.
    const otherLookups: RenderedConfig = { ...agreeing, serverSets: { ...agreeing.serverSets!, sets: agreeing.serverSets!.sets.map((set) => (set.backend === 'be_shop_svc-2_80' ? { ...set, reads: [] } : set)) } };
    const change = c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(2, ['10.0.2.7']) });
    assert.equal(c.fast(otherLookups, [change]).kind, 'none');
    assert.equal(runtime(c.fast(agreeing, [change])).config.hash, c.full().hash);
  });

  it('rehearses the removal of a server line on a base and keeps nothing of it: the next real change plans as without it', () => {
    const rehearsed = start();
    const plain = start();
    const base = rehearsed.full();
    assert.deepEqual(rehearseServerEdit(base), { backend: 'be_shop_svc-0_80', plan: 'runtime' });
    // The rehearsed edit is not the base's own: a real change is planned from the base as it is.
    const change = (c: typeof rehearsed) => c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(0, ['10.0.0.1', '10.0.0.9']) });
    const after = runtime(rehearsed.fast(base, [change(rehearsed)]));
    const without = runtime(plain.fast(plain.full(), [change(plain)]));
    assert.equal(after.config.hash, without.config.hash);
    assert.equal(after.config.hash, rehearsed.full().hash);
    assert.deepEqual(after.ops, without.ops);
    // Server lines kept in the new configuration: the rehearsed removal is not among them.
    assert.match(serverLines(after.config, 'be_shop_svc-0_80') ?? '', /10\.0\.0\.1[\s\S]*10\.0\.0\.9/);
  });

  it('rehearses nothing where no server set writes a server line', () => {
    assert.equal(rehearseServerEdit(sealRendered({ main: 'global\n', maps: {}, files: {}, certs: {} })), undefined);
    // Sets that write only comments (a Service without endpoints) are passed over.
    const c = cluster(loaded);
    c.apply({ type: 'upsert', resource: 'services', object: service(0) });
    c.apply({ type: 'upsert', resource: 'ingresses', object: ingress(0) });
    const base = c.full();
    assert.ok((base.serverSets?.sets.length ?? 0) > 0);
    assert.equal(rehearseServerEdit(base), undefined);
  });

  it('turns an endpoint change into runtime operations and the very configuration a full render gives', () => {
    const c = start();
    const base = c.full();
    const change = c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.0.3.1', '10.0.3.9']) });
    const plan = runtime(c.fast(base, [change]));
    assert.equal(plan.config.hash, c.full().hash);
    assert.deepEqual(plan.backends, ['be_shop_svc-3_80']);
    // Its server lines come with it, as the configuration has them.
    assert.deepEqual(plan.lines, { 'be_shop_svc-3_80': serverLines(plan.config, 'be_shop_svc-3_80') });
    assert.match(plan.lines['be_shop_svc-3_80']!, /server srv_10\.0\.3\.9_8080 10\.0\.3\.9:8080/);
    assert.deepEqual(plan.ops.map((op) => `${op.kind} ${'server' in op ? op.server : ''}`), ['server-add srv_10.0.3.9_8080', 'server-del srv_10.0.3.2_8080']);
    // The plan a target makes from the base is the same.
    assert.deepEqual(planDeployment(base, plan.config), { kind: 'runtime', ops: plan.ops });
  });

  it('builds on its own predictions: every step equals a full render', () => {
    const c = start();
    let base = c.full();
    for (let step = 0; step < 4; step++) {
      const i = step % 5;
      const change = c.apply({ type: 'upsert', resource: 'endpointslices', object: slice(i, Array.from({ length: step + 1 }, (_, e) => `10.9.${i}.${e}`), 8080 + step) });
      const plan = runtime(c.fast(base, [change]));
      assert.equal(plan.config.hash, c.full().hash, `step ${step}`);
      base = plan.config;
    }
  });

  it('declines what it cannot do: a change read outside the server lines, a deletion', () => {
    const c = start();
    const base = c.full();
    const svc = c.apply({ type: 'upsert', resource: 'services', object: { ...service(1), spec: { ports: [{ name: 'web', port: 80 }] } } });
    assert.deepEqual(c.fast(base, [svc]), { kind: 'unsupported', reason: 'Service shop/svc-1 is read outside the server lines' });
    const gone = c.apply({ type: 'delete', resource: 'endpointslices', object: slice(2, []) });
    assert.deepEqual(c.fast(base, [gone]), { kind: 'unsupported', reason: 'EndpointSlice shop/svc-2-abc: a delete takes the full path' });
  });

  it('has nothing to do for a change no server lines read, or that leaves them as they were', () => {
    const c = start();
    const base = c.full();
    const stray = c.apply({ type: 'upsert', resource: 'endpointslices', object: { ...slice(7, ['10.7.0.1']), metadata: { namespace: 'other', name: 'x', labels: { 'kubernetes.io/service-name': 'nobody' } } } });
    assert.deepEqual(c.fast(base, [stray]), { kind: 'none' });
    const same = c.apply({ type: 'upsert', resource: 'endpointslices', object: { ...slice(0, ['10.0.0.2', '10.0.0.1']), metadata: { ...slice(0, []).metadata, resourceVersion: '2' } } });
    assert.deepEqual(c.fast(base, [same]), { kind: 'none' });
  });
});

describe('planFast (its own templates)', () => {
  const slices = () => new Store('slices', { indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'], seal: false });
  const main = `global
  maxconn 10
defaults
  timeout connect 1s
backend be
  balance <%- values.balance %>
<%- h.servers('be', 'servers', {}) -%>
`;

  it('declines lines other than server lines, and servers that need a reload', () => {
    for (const [snippet, balance, reason] of [
      ["<% for (const s of resources.slices.get('shop', 'web')) { %>  timeout server 5s\n<% } %>", 'roundrobin', /wrote "timeout server 5s" for backend be/],
      ["<% for (const s of resources.slices.get('shop', 'web')) { %>  server <%= s.metadata.name %> 10.0.0.1:80\n<% } %>", 'static-rr', /needs a reload: backend be: uses balance static-rr/],
    ] as const) {
      const templates = compiled({ main, snippets: { servers: snippet } });
      const store = slices();
      const values = { balance };
      const result = renderTemplates(templates, { resources: { slices: store }, values });
      assert.ok(result.ok);
      const object = slice(1, ['10.0.0.1']);
      object.metadata.labels = { 'kubernetes.io/service-name': 'web' };
      store.apply({ type: 'upsert', resource: 'slices', object });
      const plan = planFast(result.config, [changeRef({ type: 'upsert', resource: 'slices', object })], { templates, values, timeoutMs: 1_000, resources: new Map([['slices', store]]) });
      assert.equal(plan.kind, 'unsupported');
      assert.match((plan as { reason: string }).reason, reason);
    }
  });
});
