import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { KubeObject, ResourceChange } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { type CompiledTemplates, type RenderInput, type RenderOptions, type RenderResult, type TemplateSet, renderTemplates } from '../../src/templating/engine.ts';
import { CallCache, type EntriesCall, type ServerCall } from '../../src/templating/call-cache.ts';
import { selfSigned } from '../support/certificates.ts';
import { shippedTemplates } from '../webhook/support.ts';
import { compiled, mainThreadCluster, noInput, storeOf, shopIngress as ingress, shopService as service, shopSlice as slice } from './support.ts';

/** What a render says, whole: any difference between a render that reused lines and one that did not shows here. */
const outcome = (result: RenderResult) => (result.ok ? { main: result.config.main, maps: result.config.maps, warnings: result.warnings, statuses: result.statuses } : { error: result.error });

/** Renders with the caches and without them, and asserts that what `view` shows of the two is the same. */
function sameAsFresh(templates: CompiledTemplates, input: RenderInput, caches: RenderOptions, view: (result: RenderResult) => unknown, what: string): void {
  const reusing = renderTemplates(templates, input, caches);
  const fresh = renderTemplates(templates, input);
  assert.ok(fresh.ok, `${what}: ${JSON.stringify(!fresh.ok && fresh.error)}`);
  assert.deepEqual(view(reusing), view(fresh), what);
}

describe('CallCache, server lines (shipped templates)', () => {
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
    const cache = new CallCache<ServerCall>();
    const input = (): RenderInput => ({ resources: Object.fromEntries(stores), values });
    const both = (what: string) => {
      sameAsFresh(loaded.templates, input(), { serverCache: cache }, outcome, what);
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
    const cache = new CallCache<ServerCall>();
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

describe('CallCache, Ingress readings (shipped templates)', () => {
  let loaded: LoadedConfig;
  before(async () => {
    loaded = await shippedTemplates();
  });
  /** All a render tells the fast path and the status writer too: its map declarations and what it looked up outside server lines. */
  const whole = (result: RenderResult) => (result.ok ? { ...outcome(result), mapEntries: result.config.mapEntries, reads: [...(result.config.serverSets?.reads ?? [])].sort() } : { error: result.error });
  const named = (i: number, port: string): KubeObject => ({ ...ingress(i), spec: { rules: [{ host: `app-${i}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: `svc-${i}`, port: { name: port } } } }] } }] } });
  const withTls = (i: number): KubeObject => ({ ...ingress(i), spec: { ...(ingress(i).spec as object), tls: [{ hosts: [`app-${i}.example.com`], secretName: `tls-${i}` }] } });
  const tlsSecret = (i: number, cn = `app-${i}.example.com`): KubeObject => {
    const pair = selfSigned(cn);
    return { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { namespace: 'shop', name: `tls-${i}` }, data: { 'tls.crt': Buffer.from(pair.crt).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64') } };
  };

  it('renders exactly what a render without it renders, and reads again only the Ingresses whose object or lookups changed', () => {
    // As the render thread keeps them: sealed as stored, so an unchanged object is the same object in every render.
    const stores = new Map(loaded.config.watch.map((w) => [w.name, new Store(w.name, w)]));
    const apply = (change: ResourceChange) => stores.get(change.type === 'problem' ? '' : change.resource)!.apply(change);
    const values = { ...loaded.config.values, httpPort: 18080 };
    for (let i = 0; i < 12; i++) {
      apply({ type: 'upsert', resource: 'services', object: service(i) });
      apply({ type: 'upsert', resource: 'endpointslices', object: slice(i, [`10.0.${i}.1`]) });
    }
    for (let i = 0; i < 8; i++) apply({ type: 'upsert', resource: 'ingresses', object: ingress(i) });
    // Ingress 8 names its port: it reads every Service (the service model). 9 has a certificate: it looks its Secret up.
    apply({ type: 'upsert', resource: 'ingresses', object: named(8, 'http') });
    apply({ type: 'upsert', resource: 'ingresses', object: withTls(9) });
    apply({ type: 'upsert', resource: 'secrets', object: tlsSecret(9) });
    // Ingress 10 is not valid: skipped with a warning, so read again in every render.
    apply({ type: 'upsert', resource: 'ingresses', object: { ...ingress(10), spec: { rules: [{ host: 'not a host', http: { paths: [] } }] } } });
    const caches = { serverCache: new CallCache<ServerCall>(), entriesCache: new CallCache<EntriesCall>() };
    const input = (): RenderInput => ({ resources: Object.fromEntries(stores), values });
    const both = (what: string) => {
      sameAsFresh(loaded.templates, input(), caches, whole, what);
      return caches.entriesCache.reused;
    };
    assert.equal(both('first render'), 0);
    assert.equal(caches.entriesCache.size, 10, 'the ten valid Ingresses are kept, not the skipped one');
    assert.equal(both('nothing changed'), 10);

    apply({ type: 'upsert', resource: 'ingresses', object: { ...ingress(2), spec: { rules: [{ host: 'moved-2.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'svc-2', port: { number: 80 } } } }] } }] } } });
    assert.equal(both('an Ingress changed'), 9);

    // Another Service: the model of every Service changes, so the Ingress naming a port is read again, alone.
    apply({ type: 'upsert', resource: 'services', object: service(11, 'web') });
    assert.equal(both('a Service added'), 9);
    apply({ type: 'upsert', resource: 'services', object: service(8, 'web') });
    assert.equal(both('its Service renamed the port'), 9);

    apply({ type: 'upsert', resource: 'secrets', object: tlsSecret(9, 'renewed.example.com') });
    assert.equal(both('its certificate renewed'), 9);
    apply({ type: 'delete', resource: 'secrets', object: tlsSecret(9) });
    assert.equal(both('its Secret deleted: the certificate skipped, with a warning'), 9);
    assert.equal(both('the Secret still missing'), 9, 'a warning keeps that Ingress from being kept');

    // The classes decide which Ingresses are ours: every reading depends on them.
    apply({ type: 'upsert', resource: 'ingressclasses', object: { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'other' }, spec: { controller: 'example.com/other' } } });
    assert.equal(both('an IngressClass added'), 0);

    apply({ type: 'upsert', resource: 'ingresses', object: ingress(10) });
    apply({ type: 'delete', resource: 'ingresses', object: ingress(0) });
    both('the bad Ingress mended, another deleted');
    // Ten Ingresses; the one whose Secret is missing still warns, so it is read in every render.
    assert.equal(both('settled'), 9);
    assert.ok(caches.entriesCache.size <= 10, `what the last render did not use is dropped (${caches.entriesCache.size} kept)`);

    const other = renderTemplates(loaded.templates, { resources: Object.fromEntries(stores), values: { ...values } }, caches);
    assert.ok(other.ok);
    assert.equal(caches.entriesCache.reused, 0, 'other values start over');
  });
});

describe('CallCache, mapEntries calls', () => {
  const items = (names: string[]) => storeOf('items', names.map((name) => ({ kind: 'Item', metadata: { namespace: 'a', name } })));
  const snippetJson = `<%- JSON.stringify({ maps: { 'm.map': [[locals.object.metadata.name, 'be']] }, mapsOnly: true }) -%>`;
  const setOf = (snippet: string, main = `<% for (const o of resources.items.list()) { const r = h.mapEntries('items', o, 'item', {}) -%>
<%- o.metadata.name %> <%- r === undefined ? '-' : JSON.stringify(r) %> <%- r !== null && typeof r === 'object' && Object.isFrozen(r) && Object.isFrozen(r.tags) ? 'frozen' : 'open' %>
<% } -%>
`): TemplateSet => ({ main, maps: { 'm.map': '' }, snippets: { item: snippet + snippetJson } });
  const run = (set: TemplateSet, input: RenderInput, rounds = 2) => {
    const templates = compiled(set);
    const cache = new CallCache<EntriesCall>();
    const results = Array.from({ length: rounds }, () => renderTemplates(templates, input, { entriesCache: cache }));
    return { results, cache };
  };

  it('keeps a call that gives its value, and hands the next render the same frozen value', () => {
    const { results, cache } = run(setOf(`<% h.result({ name: locals.object.metadata.name, tags: ['x'] }) -%>`), { resources: { items: items(['p', 'q']) }, values: {} });
    assert.ok(results.every((r) => r.ok));
    assert.equal(cache.reused, 2);
    const [first, second] = results.map((r) => (r.ok ? r.config.main : ''));
    assert.equal(second, first);
    assert.match(first!, /^p \{"name":"p","tags":\["x"\]\} frozen$/m);
    assert.deepEqual(results[1]!.ok && results[1]!.config.mapEntries?.objects.map((o) => o.maps), [{ 'm.map': [['p', 'be']] }, { 'm.map': [['q', 'be']] }]);
  });

  it('never keeps a call whose snippet gives no value, nor one that warned', () => {
    const silent = run(setOf(''), { resources: { items: items(['p']) }, values: {} });
    assert.ok(silent.results.every((r) => r.ok));
    assert.equal(silent.cache.size, 0);
    const warning = run(setOf(`<% h.warn(locals.object, 'odd'); h.result({ tags: [] }) -%>`), { resources: { items: items(['p']) }, values: {} });
    assert.equal(warning.cache.size, 0);
    assert.equal(warning.cache.reused, 0);
    assert.ok(warning.results.every((r) => r.ok && r.warnings.length === 1), 'the warning is said in every render');
  });

  it('reads again a call whose h.once value was built from a set that changed since', () => {
    const store = items(['p', 'q']);
    const set = setOf(`<% const all = h.once('count', () => resources.items.size); h.result({ all, tags: [] }) -%>`);
    const templates = compiled(set);
    const cache = new CallCache<EntriesCall>();
    const input = { resources: { items: store }, values: {} };
    const render = () => {
      const result = renderTemplates(templates, input, { entriesCache: cache });
      assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
      return result.config.main;
    };
    assert.match(render(), /^p \{"all":2,/m);
    assert.match(render(), /^p \{"all":2,/m);
    assert.equal(cache.reused, 2);
    store.apply({ type: 'upsert', resource: 'items', object: { kind: 'Item', metadata: { namespace: 'a', name: 'r' } } });
    assert.match(render(), /^p \{"all":3,/m, 'not the value of the render before');
    assert.equal(cache.reused, 0);
  });

  it('keeps what it had when a render fails after some calls, and the next render reuses it', () => {
    const store = items(['p', 'q']);
    const main = `<% for (const o of resources.items.list()) h.mapEntries('items', o, 'item', {}) -%>
<% if (resources.items.first('a', 'boom')) h.fail('an item named the render to fail') -%>
done
`;
    const templates = compiled(setOf(`<% h.result({ tags: [] }) -%>`, main));
    const cache = new CallCache<EntriesCall>();
    const input = { resources: { items: store }, values: {} };
    assert.ok(renderTemplates(templates, input, { entriesCache: cache }).ok);
    assert.equal(cache.size, 2);
    store.apply({ type: 'upsert', resource: 'items', object: { kind: 'Item', metadata: { namespace: 'a', name: 'boom' } } });
    assert.equal(renderTemplates(templates, input, { entriesCache: cache }).ok, false);
    assert.equal(cache.size, 2, 'the failed render\'s calls (boom among them) are not kept');
    store.apply({ type: 'delete', resource: 'items', object: { kind: 'Item', metadata: { namespace: 'a', name: 'boom' } } });
    const after = renderTemplates(templates, input, { entriesCache: cache });
    assert.ok(after.ok);
    assert.equal(cache.reused, 2);
    assert.deepEqual(after.config.mapEntries?.objects.map((o) => o.key), ['a/p', 'a/q']);
  });

  it('is given once, and from a mapEntries snippet only', () => {
    const twice = renderTemplates(compiled(setOf(`<% h.result(1); h.result(2) -%>`)), { resources: { items: items(['p']) }, values: {} });
    assert.ok(!twice.ok);
    assert.match(twice.error.message, /result\(\): a mapEntries snippet gives one value/);
    const outside = renderTemplates(compiled({ main: `<% h.result(1) -%>` }), noInput);
    assert.ok(!outside.ok);
    assert.match(outside.error.message, /from its snippet only/);
  });
});

describe('CallCache, server lines', () => {
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
    const cache = new CallCache<ServerCall>();
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
    const cache = new CallCache<ServerCall>();
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
