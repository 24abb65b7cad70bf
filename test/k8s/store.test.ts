import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { Store, stripFields } from '../../src/k8s/store.ts';

const slice = (name: string, service: string, rv = '1', namespace = 'default'): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name, namespace, resourceVersion: rv, labels: { 'kubernetes.io/service-name': service } },
});

describe('Store', () => {
  it('lists objects sorted by namespace/name, whatever the order they arrived in', () => {
    const a = new Store('s');
    const b = new Store('s');
    const objects = [slice('c', 'x'), slice('a', 'x', '1', 'zz'), slice('b', 'x')];
    for (const o of objects) a.apply({ type: 'upsert', resource: 's', object: o });
    for (const o of [...objects].reverse()) b.apply({ type: 'upsert', resource: 's', object: o });
    const keys = (s: Store) => s.list().map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    assert.deepEqual(keys(a), ['default/b', 'default/c', 'zz/a']);
    assert.deepEqual(keys(a), keys(b));
  });

  it('keeps no cache entry for lookups that find nothing, nor for buckets whose objects are gone', () => {
    const store = new Store('slices', { indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'] });
    store.apply({ type: 'upsert', resource: 'slices', object: slice('web-1', 'web') });
    for (let i = 0; i < 10_000; i++) assert.deepEqual(store.get('default', `missing-${i}`), []);
    assert.equal(store.cachedLookups, 0);
    assert.equal(store.get('default', 'web').length, 1);
    assert.equal(store.cachedLookups, 1);
    store.apply({ type: 'delete', resource: 'slices', object: slice('web-1', 'web') });
    assert.deepEqual(store.get('default', 'web'), []);
    assert.equal(store.cachedLookups, 0);
  });

  it('finds objects by every prefix of the configured JSONPath index keys', () => {
    const store = new Store('slices', { indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'] });
    for (const o of [slice('web-1', 'web'), slice('web-2', 'web'), slice('api-1', 'api'), slice('web-1', 'web', '1', 'other')]) {
      store.apply({ type: 'upsert', resource: 'slices', object: o });
    }
    assert.deepEqual(store.get('default', 'web').map((o) => o.metadata.name), ['web-1', 'web-2']);
    assert.deepEqual(store.get('default').map((o) => o.metadata.name), ['api-1', 'web-1', 'web-2']);
    assert.deepEqual(store.get('other', 'web').map((o) => o.metadata.namespace), ['other']);
    assert.deepEqual(store.get('default', 'nothing'), []);
    assert.equal(store.first('default', 'api')?.metadata.name, 'api-1');
  });

  it('re-indexes an object whose key values changed, and forgets deleted ones', () => {
    const store = new Store('slices', { indexBy: ['$.metadata.labels["kubernetes.io/service-name"]'] });
    store.apply({ type: 'upsert', resource: 'slices', object: slice('s1', 'web', '1') });
    store.apply({ type: 'upsert', resource: 'slices', object: slice('s1', 'api', '2') });
    assert.deepEqual(store.get('web'), []);
    assert.equal(store.get('api').length, 1);
    assert.equal(store.apply({ type: 'delete', resource: 'slices', object: slice('s1', 'api', '2') }), true);
    assert.deepEqual(store.get('api'), []);
    assert.equal(store.size, 0);
    assert.equal(store.apply({ type: 'delete', resource: 'slices', object: slice('s1', 'api', '2') }), false);
  });

  it('indexes an object under each value of a multi-valued path', () => {
    const store = new Store('ing', { indexBy: ['$.spec.rules[*].host'] });
    const ingress: KubeObject = { metadata: { name: 'i', namespace: 'd', resourceVersion: '1' }, spec: { rules: [{ host: 'a.example' }, { host: 'b.example' }] } };
    store.apply({ type: 'upsert', resource: 'ing', object: ingress });
    assert.equal(store.get('a.example').length, 1);
    assert.equal(store.get('b.example').length, 1);
  });

  it('reports no change for an object re-sent with the same resourceVersion', () => {
    const store = new Store('s');
    assert.equal(store.apply({ type: 'upsert', resource: 's', object: slice('a', 'x', '5') }), true);
    assert.equal(store.apply({ type: 'upsert', resource: 's', object: slice('a', 'x', '5') }), false);
    assert.equal(store.apply({ type: 'upsert', resource: 's', object: slice('a', 'x', '6') }), true);
  });

  it('replaces the whole set on a relist, deleting what is gone', () => {
    const store = new Store('s');
    store.apply({ type: 'upsert', resource: 's', object: slice('a', 'x') });
    store.apply({ type: 'upsert', resource: 's', object: slice('b', 'x') });
    assert.equal(store.apply({ type: 'replace', resource: 's', objects: [slice('b', 'x'), slice('c', 'x')] }), true);
    assert.deepEqual(store.list().map((o) => o.metadata.name), ['b', 'c']);
    assert.equal(store.apply({ type: 'replace', resource: 's', objects: [slice('b', 'x'), slice('c', 'x')] }), false);
  });

  it('marks itself synced once', () => {
    const store = new Store('s');
    assert.equal(store.synced, false);
    assert.equal(store.apply({ type: 'synced', resource: 's' }), true);
    assert.equal(store.apply({ type: 'synced', resource: 's' }), false);
    assert.equal(store.synced, true);
  });
});

describe('stripFields', () => {
  it('drops managedFields and the last-applied annotation before storing, without touching the input', () => {
    const input: KubeObject = {
      metadata: {
        name: 'a',
        managedFields: [{ manager: 'kubectl' }],
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"huge":true}', keep: 'me' },
      },
    };
    const store = new Store('s');
    store.apply({ type: 'upsert', resource: 's', object: input });
    const stored = store.list()[0]!;
    assert.equal(stored.metadata.managedFields, undefined);
    assert.deepEqual({ ...stored.metadata.annotations }, { keep: 'me' });
    assert.ok(input.metadata.managedFields, 'the caller still has its object');
    assert.ok(input.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']);
  });

  it('leaves objects without the fields as they are (same reference)', () => {
    const o: KubeObject = { metadata: { name: 'a' } };
    assert.equal(stripFields(o, ['metadata.managedFields', 'status.conditions']), o);
  });
});

describe('Store: objects it cannot take', () => {
  const nested = (depth: number, leaf: unknown): unknown => {
    let value = leaf;
    for (let i = 0; i < depth; i++) value = { a: [value] };
    return value;
  };

  it('reports an object too deeply nested to copy, naming it, and keeps the version it had', () => {
    const store = new Store('slices', { indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'] });
    assert.equal(store.apply({ type: 'upsert', resource: 'slices', object: slice('web-1', 'web', '1') }), true);
    const deep = { ...slice('web-1', 'web', '2'), spec: nested(20_000, 'x') };
    const update = store.update({ type: 'upsert', resource: 'slices', object: deep });
    assert.equal(update.changed, false);
    assert.equal(update.problems.length, 1);
    const [problem] = update.problems;
    assert.deepEqual(problem?.object, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: 'default', name: 'web-1' });
    assert.equal(problem?.resource, 'slices');
    assert.match(problem?.message ?? '', /^EndpointSlice default\/web-1: cannot be copied into the store .*; the set keeps what it had for it$/);
    assert.equal(store.first('default', 'web')?.metadata.resourceVersion, '1');
  });

  it('reports an index path that fails on an object, or selects too many values, and goes on with the rest of a relist', () => {
    const store = new Store('slices', { indexBy: ['$..name', '$..v'] });
    const many = { ...slice('many', 'web'), spec: { values: Array.from({ length: 2_000 }, (_, i) => ({ v: `v${i}` })) } };
    const deep = { ...slice('deep', 'web'), spec: nested(300, { name: 'x' }) };
    const update = store.update({ type: 'replace', resource: 'slices', objects: [slice('ok', 'web'), many, deep] });
    assert.equal(update.changed, true);
    assert.deepEqual(update.problems.map((p) => p.object?.name), ['many', 'deep']);
    assert.match(update.problems[0]!.message, /more than 1000 index keys/);
    assert.match(update.problems[1]!.message, /indexBy\[0\]: JSONPath \$\.\.name: .*recursion/i);
    assert.deepEqual(store.list().map((o) => o.metadata.name), ['ok']);
  });

  it('reports an object without a name instead of throwing, for upserts, deletes and relists', () => {
    const store = new Store('s');
    const nameless = { kind: 'Service', metadata: { namespace: 'x' } } as unknown as KubeObject;
    const noMetadata = { kind: 'Service' } as unknown as KubeObject;
    for (const change of [
      { type: 'upsert', resource: 's', object: nameless },
      { type: 'delete', resource: 's', object: noMetadata },
      { type: 'replace', resource: 's', objects: [noMetadata, slice('a', 'web')] },
    ] as const) {
      const update = store.update(change);
      assert.equal(update.problems.length, 1, change.type);
      assert.match(update.problems[0]!.message, /without a metadata\.name/);
    }
    assert.deepEqual(store.list().map((o) => o.metadata.name), ['a']);
  });

  it('refuses an index path that does not compile: the configuration is checked before stores are built', () => {
    assert.throws(() => new Store('s', { indexBy: ['$.metadata.labels["x"'] }), /store s: indexBy \$\.metadata\.labels\["x" is not a JSONPath/);
  });
});
