import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { KubeObject, ResourceChange } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { type CompiledTemplates, type RenderInput, type RenderOptions, type RenderResult, type TemplateSet, renderTemplates } from '../../src/templating/engine.ts';
import { CallCache, type EntriesCall, type OnceCall, type ServerCall } from '../../src/templating/call-cache.ts';
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

/** The item whose presence the custom templates below take as the order to fail the render. */
const BOOM: KubeObject = { kind: 'Item', metadata: { namespace: 'a', name: 'boom' } };

/** All a render tells the fast path and the status writer too: its map declarations and what it looked up outside server lines. */
const whole = (result: RenderResult) => (result.ok ? { ...outcome(result), mapEntries: result.config.mapEntries, reads: [...(result.config.serverSets?.reads ?? [])].sort() } : { error: result.error });

/**
 * The shipped templates' sets as the render thread keeps them (sealed as stored, so an unchanged
 * object is the same object in every render): `services` Services, each with a slice, and the
 * first `ingresses` of their Ingresses.
 */
function renderThreadCluster(loaded: LoadedConfig, services: number, ingresses: number) {
  const stores = new Map(loaded.config.watch.map((w) => [w.name, new Store(w.name, w)]));
  const apply = (change: ResourceChange) => stores.get(change.type === 'problem' ? '' : change.resource)!.apply(change);
  const values = { ...loaded.config.values, httpPort: 18080 };
  for (let i = 0; i < services; i++) {
    apply({ type: 'upsert', resource: 'services', object: service(i) });
    apply({ type: 'upsert', resource: 'endpointslices', object: slice(i, [`10.0.${i}.1`]) });
  }
  for (let i = 0; i < ingresses; i++) apply({ type: 'upsert', resource: 'ingresses', object: ingress(i) });
  return { stores, apply, input: (): RenderInput => ({ resources: Object.fromEntries(stores), values }), values };
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
  const named = (i: number, port: string): KubeObject => ({ ...ingress(i), spec: { rules: [{ host: `app-${i}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: `svc-${i}`, port: { name: port } } } }] } }] } });
  const withTls = (i: number): KubeObject => ({ ...ingress(i), spec: { ...(ingress(i).spec as object), tls: [{ hosts: [`app-${i}.example.com`], secretName: `tls-${i}` }] } });
  const tlsSecret = (i: number, cn = `app-${i}.example.com`): KubeObject => {
    const pair = selfSigned(cn);
    return { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { namespace: 'shop', name: `tls-${i}` }, data: { 'tls.crt': Buffer.from(pair.crt).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64') } };
  };

  it('renders exactly what a render without it renders, and reads again only the Ingresses whose object or lookups changed', () => {
    const { stores, apply, input, values } = renderThreadCluster(loaded, 12, 8);
    // Ingress 8 names its port: it reads every Service (the service model). 9 has a certificate: it looks its Secret up.
    apply({ type: 'upsert', resource: 'ingresses', object: named(8, 'http') });
    apply({ type: 'upsert', resource: 'ingresses', object: withTls(9) });
    apply({ type: 'upsert', resource: 'secrets', object: tlsSecret(9) });
    // Ingress 10 is not valid: skipped with a warning, so read again in every render.
    apply({ type: 'upsert', resource: 'ingresses', object: { ...ingress(10), spec: { rules: [{ host: 'not a host', http: { paths: [] } }] } } });
    const caches = { serverCache: new CallCache<ServerCall>(), entriesCache: new CallCache<EntriesCall>() };
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

describe('CallCache, the kept Ingress model (shipped templates)', () => {
  let loaded: LoadedConfig;
  before(async () => {
    loaded = await shippedTemplates();
  });
  const withRoute = (i: number, host: string, svc = `svc-${i}`): KubeObject => ({ ...ingress(i), spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: svc, port: { number: 80 } } } }] } }] } });

  it('renders exactly what a render without it renders, and builds the model again only when something it read changed', () => {
    const { apply, input } = renderThreadCluster(loaded, 10, 6);
    // What the model says about objects, besides the routes: a host another Ingress holds, a Service that
    // does not exist (both warn), and an Ingress that is skipped (a warning, not served).
    apply({ type: 'upsert', resource: 'ingresses', object: withRoute(6, 'app-1.example.com', 'svc-6') });
    apply({ type: 'upsert', resource: 'ingresses', object: withRoute(7, 'app-7.example.com', 'missing') });
    apply({ type: 'upsert', resource: 'ingresses', object: { ...ingress(8), spec: { rules: [{ host: 'not a host', http: { paths: [] } }] } } });
    const caches = { serverCache: new CallCache<ServerCall>(), entriesCache: new CallCache<EntriesCall>(), onceCache: new CallCache<OnceCall>() };
    const both = (what: string) => {
      sameAsFresh(loaded.templates, input(), caches, whole, what);
      return caches.onceCache.reused;
    };
    assert.equal(both('first render'), 0);
    assert.equal(caches.onceCache.size, 3, 'the Ingress model is kept, and the two map texts made of it');
    const first = renderTemplates(loaded.templates, input(), caches);
    assert.ok(first.ok);
    assert.equal(caches.onceCache.reused, 3);
    // The model's warnings and statuses are said again, not lost with the computation.
    assert.ok(first.warnings.some((w) => /already routed by Ingress shop\/ing-1/.test(w.message)), JSON.stringify(first.warnings.map((w) => w.message)));
    assert.ok(first.warnings.some((w) => /Service shop\/missing does not exist/.test(w.message)));
    assert.ok(first.warnings.some((w) => w.object === 'Ingress shop/ing-8' && w.skipped));
    assert.deepEqual(first.statuses.filter((s) => s.ref.kind === 'Ingress').map((s) => [s.ref.name, s.served]), [...Array.from({ length: 8 }, (_, i) => [`ing-${i}`, true]), ['ing-8', false]]);
    // The entries cache keeps every reading the reused model carried: after the model is built again, they are reused.
    const readings = caches.entriesCache.size;
    assert.equal(readings, 8);

    apply({ type: 'upsert', resource: 'endpointslices', object: slice(3, ['10.9.9.9']) });
    assert.equal(both('a slice moved'), 3, 'an EndpointSlice is nothing the model reads');
    assert.equal(both('nothing changed'), 3);
    assert.equal(caches.entriesCache.size, readings);

    apply({ type: 'upsert', resource: 'ingresses', object: withRoute(2, 'moved-2.example.com') });
    assert.equal(both('an Ingress changed'), 0);
    assert.equal(caches.entriesCache.reused, 7, 'the readings of the other Ingresses come from the entries cache');
    assert.equal(both('settled'), 3);

    apply({ type: 'upsert', resource: 'services', object: { ...service(0), metadata: { namespace: 'shop', name: 'missing' } } });
    both('the missing Service created');
    apply({ type: 'upsert', resource: 'ingresses', object: ingress(8) });
    both('the bad Ingress mended');
    apply({ type: 'upsert', resource: 'ingressclasses', object: { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'other' }, spec: { controller: 'example.com/other' } } });
    assert.equal(both('an IngressClass added'), 0);
    apply({ type: 'delete', resource: 'ingresses', object: ingress(0) });
    both('an Ingress deleted');
    assert.equal(both('settled again'), 3);
  });
});

describe('CallCache, kept h.once values', () => {
  const items = (names: string[]) => storeOf('items', names.map((name) => ({ kind: 'Item', metadata: { namespace: 'a', name } })));
  // Reads every item in isolation: a warning for 'odd', a skip for 'bad' (a field of the wrong shape), a status for each.
  const MODEL = `h.once('model', () => h.each(resources.items.list(), (o) => {
  if (o.metadata.name === 'odd') h.warn(o, 'odd one');
  if (o.metadata.name === 'bad') h.skip('bad one', 'spec');
  h.status(o, { served: true });
  return o.metadata.name;
}), { keep: true })`;
  const SET: TemplateSet = {
    main: `<% const names = ${MODEL} -%>
<%- names.join(',') %> <%- h.skipped(resources.items.first('a', 'bad')) ? 'bad skipped' : 'none skipped' %>
`,
    maps: { 'm.map': `<% const again = ${MODEL} -%><%- again.length %>
` },
  };
  const view = (r: RenderResult) => (r.ok ? { main: r.config.main, maps: r.config.maps, warnings: r.warnings, statuses: r.statuses } : { error: r.error });

  it('hands the next render the same frozen value, and says again what computing it said', () => {
    const store = items(['p', 'odd', 'bad', 'q']);
    const templates = compiled(SET);
    const cache = new CallCache<OnceCall>();
    const input = { resources: { items: store }, values: {} };
    const first = renderTemplates(templates, input, { onceCache: cache });
    assert.ok(first.ok, JSON.stringify(!first.ok && first.error));
    assert.equal(cache.reused, 0);
    assert.equal(cache.size, 1);
    const second = renderTemplates(templates, input, { onceCache: cache });
    assert.equal(cache.reused, 1);
    assert.deepEqual(view(second), view(first));
    assert.match(first.config.main, /^odd,p,q bad skipped$/m);
    assert.deepEqual(first.warnings.map((w) => w.message).sort(), ['odd one', 'skipped: bad one']);
    assert.equal(first.statuses.length, 3);
    assert.deepEqual(view(second), view(renderTemplates(templates, input)), 'the same as a render without the cache');
  });

  it('counts again the isolations and errors of a value it reuses, with those of the same line elsewhere', () => {
    // The snippet reads an item in isolation; an item without spec fails there with a TypeError. The kept
    // value reads four items (one bad), and the render reads three more at the same line outside it.
    const item = (name: string, good: boolean) => ({ kind: 'Item', metadata: { namespace: 'a', name }, ...(good && { spec: { w: 1 } }) });
    const items = storeOf('items', [item('p', true), item('q', true), item('r', true), item('s', false)]);
    const others = storeOf('others', [item('x', true), item('y', true), item('z', true)]);
    const templates = compiled({
      main: `<% const w = h.once('w', () => resources.items.list().map((o) => include('w', { o })).join(','), { keep: true }) -%>
<%- w %> <%- resources.others.list().map((o) => include('w', { o })).join(',') %>
`,
      snippets: { w: `<%- h.isolate(locals.o, () => locals.o.spec.w, { fallback: '-' }) -%>` },
    });
    const cache = new CallCache<OnceCall>();
    const input = { resources: { items, others }, values: {} };
    const render = () => {
      const cached = renderTemplates(templates, input, { onceCache: cache });
      assert.deepEqual(view(cached), view(renderTemplates(templates, input)));
      return cached;
    };
    for (let i = 0; i < 2; i++) {
      const result = render();
      assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
      assert.equal(result.config.main, '1,1,1,- 1,1,1\n');
      assert.deepEqual(result.warnings.map((w) => w.object), ['Item a/s']);
    }
    assert.equal(cache.reused, 1);
    // Every other item bad too: four of the seven read at that line fail, which is the template's fault.
    for (const name of ['x', 'y', 'z']) others.apply({ type: 'upsert', resource: 'others', object: item(name, false) });
    const broken = render();
    assert.equal(cache.reused, 1, 'the kept value was reused');
    assert.ok(!broken.ok);
    assert.match(broken.error.message, /4 of 7 Item objects read there/);
  });

  it('computes it again once a set it read changed', () => {
    const store = items(['p', 'q']);
    const templates = compiled(SET);
    const cache = new CallCache<OnceCall>();
    const input = { resources: { items: store }, values: {} };
    assert.ok(renderTemplates(templates, input, { onceCache: cache }).ok);
    store.apply({ type: 'upsert', resource: 'items', object: { kind: 'Item', metadata: { namespace: 'a', name: 'r' } } });
    const after = renderTemplates(templates, input, { onceCache: cache });
    assert.equal(cache.reused, 0);
    assert.ok(after.ok);
    assert.match(after.config.main, /^p,q,r none skipped$/m);
  });

  it('is frozen with or without a cache, so a template that changes it fails the same way in both', () => {
    const set: TemplateSet = { main: `<% const v = h.once('v', () => ({ list: [1] }), { keep: true }); let state; try { v.list.push(2); state = 'open'; } catch { state = 'frozen'; } -%><%- state %>
` };
    const templates = compiled(set);
    const fresh = renderTemplates(templates, noInput);
    const cache = new CallCache<OnceCall>();
    const cached = [1, 2].map(() => renderTemplates(templates, noInput, { onceCache: cache }));
    for (const r of [fresh, ...cached]) {
      assert.ok(r.ok);
      assert.equal(r.config.main, 'frozen\n');
    }
    assert.equal(cache.reused, 1);
  });

  it('is never kept when computing it added a certificate, read h.skipped or computed a value that said something, nor when it is no plain data', () => {
    const cases: Record<string, string> = {
      certificate: `h.once('c', () => h.certFile('x.pem', 'pem'), { keep: true })`,
      skipped: `h.once('s', () => String(h.skipped(resources.items.first('a', 'p'))), { keep: true })`,
      inner: `h.once('o', () => h.once('i', () => h.warn('x', 'said inside')), { keep: true })`,
      map: `h.once('m', () => new Map([['k', 1]]), { keep: true }).size`,
    };
    for (const [what, code] of Object.entries(cases)) {
      const templates = compiled({ main: `<%- ${code} %>
` });
      const cache = new CallCache<OnceCall>();
      const input = { resources: { items: items(['p']) }, values: {} };
      for (let i = 0; i < 2; i++) assert.ok(renderTemplates(templates, input, { onceCache: cache }).ok, what);
      assert.equal(cache.size, 0, what);
      assert.equal(cache.reused, 0, what);
    }
  });

  it('keeps what it had when a render fails after it, and the next render reuses it', () => {
    const store = items(['p', 'q']);
    const templates = compiled({ main: `<%- h.once('n', () => resources.items.first('a', 'p') ? 'p' : '-', { keep: true }) %>
<% if (resources.items.first('a', 'boom')) h.fail('boom') -%>
` });
    const cache = new CallCache<OnceCall>();
    const input = { resources: { items: store }, values: {} };
    assert.ok(renderTemplates(templates, input, { onceCache: cache }).ok);
    store.apply({ type: 'upsert', resource: 'items', object: BOOM });
    assert.equal(renderTemplates(templates, input, { onceCache: cache }).ok, false);
    store.apply({ type: 'delete', resource: 'items', object: BOOM });
    assert.ok(renderTemplates(templates, input, { onceCache: cache }).ok);
    assert.equal(cache.reused, 1);
  });

  it('drops a value gone stale as soon as a render finds it so, not only when a render completes', () => {
    // The value reads the whole set: 'boom' makes it stale, and fails the render after it was computed anew.
    const store = items(['p', 'q']);
    const templates = compiled({ main: `<%- h.once('n', () => resources.items.size, { keep: true }) %>
<% if (resources.items.first('a', 'boom')) h.fail('boom') -%>
` });
    const cache = new CallCache<OnceCall>();
    const input = { resources: { items: store }, values: {} };
    assert.ok(renderTemplates(templates, input, { onceCache: cache }).ok);
    assert.equal(cache.size, 1);
    store.apply({ type: 'upsert', resource: 'items', object: BOOM });
    assert.equal(renderTemplates(templates, input, { onceCache: cache }).ok, false);
    assert.equal(cache.size, 0, 'the stale value is not held until a render completes');
  });

  it('takes { keep: true } or nothing as options', () => {
    const bad = renderTemplates(compiled({ main: `<%- h.once('k', () => 1, { keep: 'yes' }) %>` }), noInput);
    assert.ok(!bad.ok);
    assert.match(bad.error.message, /options.keep must be true or false/);
    const other = renderTemplates(compiled({ main: `<%- h.once('k', () => 1, { cache: true }) %>` }), noInput);
    assert.ok(!other.ok);
    assert.match(other.error.message, /options must be \{ keep: true \}/);
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
    store.apply({ type: 'upsert', resource: 'items', object: BOOM });
    assert.equal(renderTemplates(templates, input, { entriesCache: cache }).ok, false);
    assert.equal(cache.size, 2, 'the failed render\'s calls (boom among them) are not kept');
    store.apply({ type: 'delete', resource: 'items', object: BOOM });
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
