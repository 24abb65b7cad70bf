import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { type RenderInput, type RenderResult, type TemplateSet, renderTemplates } from '../../src/templating/engine.ts';
import { ServerCache } from '../../src/templating/server-cache.ts';
import { shippedTemplates } from '../webhook/support.ts';
import { compiled, mainThreadCluster, shopIngress as ingress, shopService as service, shopSlice as slice } from './support.ts';

/** What a render says, whole: any difference between a render that reused lines and one that did not shows here. */
const outcome = (result: RenderResult) => (result.ok ? { main: result.config.main, maps: result.config.maps, warnings: result.warnings, statuses: result.statuses } : { error: result.error });

describe('ServerCache (shipped templates)', () => {
  let loaded: LoadedConfig;
  before(async () => {
    loaded = await shippedTemplates();
  });

  it('renders exactly what a render without it renders, through changes of slices, Services and bad objects, and reuses the lines nothing changed', () => {
    const { stores, apply, values } = mainThreadCluster(loaded);
    for (let i = 0; i < 20; i++) {
      apply({ type: 'upsert', resource: 'services', object: service(i) });
      apply({ type: 'upsert', resource: 'endpointslices', object: slice(i, [`10.0.${i}.1`, `10.0.${i}.2`]) });
      apply({ type: 'upsert', resource: 'ingresses', object: ingress(i) });
    }
    const cache = new ServerCache();
    const input = (): RenderInput => ({ resources: Object.fromEntries(stores), values });
    const both = (what: string) => {
      const reusing = renderTemplates(loaded.templates, input(), { serverCache: cache });
      const fresh = renderTemplates(loaded.templates, input());
      assert.ok(fresh.ok, `${what}: ${JSON.stringify(!fresh.ok && fresh.error)}`);
      assert.deepEqual(outcome(reusing), outcome(fresh), what);
      return cache.reused;
    };
    both('first render');
    assert.equal(cache.size, 20, 'each backend\'s lines are kept');
    assert.equal(both('nothing changed'), 20);

    apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.9.9.9']) });
    assert.equal(both('a slice moved'), 19, 'only the moved slice\'s backend is written again');

    // An address that is not one: its backend warns, so its lines are written in every render, warning each time.
    apply({ type: 'upsert', resource: 'endpointslices', object: slice(4, ['10.0.4.1', 'not-an-ip']) });
    assert.equal(both('a bad address'), 19);
    assert.equal(both('the bad address stays'), 19);

    // A slice of the wrong shape fails its isolation (a TypeError): it counts among the slices read at that line.
    apply({ type: 'upsert', resource: 'endpointslices', object: { ...slice(5, []), endpoints: [{ addresses: 'oops' }] } });
    both('a slice of the wrong shape');

    apply({ type: 'upsert', resource: 'services', object: service(6, 'web') });
    both('a Service port renamed');
    apply({ type: 'delete', resource: 'endpointslices', object: slice(7, []) });
    both('a slice deleted');
    apply({ type: 'upsert', resource: 'services', object: service(20) });
    apply({ type: 'upsert', resource: 'endpointslices', object: slice(20, ['10.0.20.1']) });
    apply({ type: 'upsert', resource: 'ingresses', object: ingress(20) });
    both('a new backend');
    apply({ type: 'delete', resource: 'ingresses', object: ingress(0) });
    both('an Ingress deleted');
    assert.ok(cache.size <= 20, `what the last render did not use is dropped (${cache.size} kept)`);
  });

  it('starts over for other values or other sets', () => {
    const { stores, apply, values } = mainThreadCluster(loaded);
    apply({ type: 'upsert', resource: 'services', object: service(1) });
    apply({ type: 'upsert', resource: 'endpointslices', object: slice(1, ['10.0.1.1']) });
    apply({ type: 'upsert', resource: 'ingresses', object: ingress(1) });
    const cache = new ServerCache();
    const resources = Object.fromEntries(stores);
    renderTemplates(loaded.templates, { resources, values }, { serverCache: cache });
    renderTemplates(loaded.templates, { resources, values }, { serverCache: cache });
    assert.equal(cache.reused, 1);
    renderTemplates(loaded.templates, { resources, values: { ...values } }, { serverCache: cache });
    assert.equal(cache.reused, 0, 'other values');
    renderTemplates(loaded.templates, { resources: { ...resources }, values: { ...values } }, { serverCache: cache });
    assert.equal(cache.reused, 0, 'other sets');
  });
});

describe('ServerCache', () => {
  const slicesOf = (objects: KubeObject[]) => {
    const store = new Store('slices', { indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'] });
    for (const object of objects) store.apply({ type: 'upsert', resource: 'slices', object });
    return store;
  };
  const plain = (svc: string, extra: Record<string, unknown> = {}): KubeObject => ({ kind: 'EndpointSlice', metadata: { namespace: 'a', name: `${svc}-1`, labels: { 'kubernetes.io/service-name': svc } }, ...extra });
  // Each slice read in isolation; reading a field of a missing one is a TypeError, which counts towards a template fault.
  const SET: TemplateSet = {
    main: `<% if (resources.slices.get('a', 'boom').length > 0) h.fail('a slice named the render to fail') -%>
<% for (const svc of ['s1', 's2', 's3', 's4']) { -%>
backend be_<%- svc %>
<%- h.servers('be_' + svc, 'servers', { svc }) -%>
<% } -%>
`,
    snippets: {
      servers: `<% for (const s of resources.slices.get('a', locals.svc)) { const line = h.isolate(s, () => '  server ' + s.metadata.name + ' 10.0.0.1:80 weight ' + s.spec.weight + '\\n'); if (line) { %><%- line %><% } } -%>`,
    },
  };

  it('counts the isolations of lines it reuses, so one object at fault is not taken for a fault of the template', () => {
    const templates = compiled(SET);
    const ok = (svc: string) => plain(svc, { spec: { weight: 1 } });
    const store = slicesOf([ok('s1'), ok('s2'), ok('s3'), ok('s4')]);
    const cache = new ServerCache();
    const input = { resources: { slices: store }, values: {} };
    const render = () => renderTemplates(templates, input, { serverCache: cache });
    assert.ok(render().ok);
    // s4 loses its spec: a TypeError for one slice of four. Not a template fault, with or without reuse.
    store.apply({ type: 'upsert', resource: 'slices', object: plain('s4') });
    const result = render();
    assert.equal(cache.reused, 3);
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    assert.deepEqual(
      result.warnings.map((w) => w.object),
      ['EndpointSlice a/s4-1'],
    );
    // Every slice broken: that is the template's fault, reuse or not.
    for (const svc of ['s1', 's2', 's3']) store.apply({ type: 'upsert', resource: 'slices', object: plain(svc) });
    const broken = render();
    assert.equal(broken.ok, false);
  });

  it('keeps what it had when a render fails before it writes server lines, and reuses it in the next', () => {
    const templates = compiled(SET);
    const store = slicesOf(['s1', 's2', 's3', 's4'].map((svc) => plain(svc, { spec: { weight: 1 } })));
    const cache = new ServerCache();
    const input = { resources: { slices: store }, values: {} };
    const render = () => renderTemplates(templates, input, { serverCache: cache });
    assert.ok(render().ok);
    assert.equal(cache.size, 4);
    store.apply({ type: 'upsert', resource: 'slices', object: plain('boom') });
    assert.equal(render().ok, false);
    assert.equal(cache.size, 4);
    store.apply({ type: 'delete', resource: 'slices', object: plain('boom') });
    assert.ok(render().ok);
    assert.equal(cache.reused, 4);
  });
});
