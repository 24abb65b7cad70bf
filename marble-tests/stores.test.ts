import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { KubeObject, ResourceChange } from '../src/k8s/resource.ts';
import { Store } from '../src/k8s/store.ts';
import { applyToStores } from '../streams/stores.ts';
import { marbles, object, synced, upsert } from './helpers.ts';

describe('applyToStores', () => {
  it('passes on only the changes that altered a watched store', () => {
    const stores = new Map([['services', new Store('services')]]);
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('abcdef', {
        a: upsert('services', 'web', '1'),
        b: upsert('services', 'web', '1'), // same resourceVersion: nothing new
        c: upsert('services', 'web', '2'),
        d: upsert('secrets', 'tls', '1'), // not watched
        e: { type: 'delete', resource: 'services', object: object('web', '2') },
        f: synced('services'),
      });
      expectObservable(applyToStores(changes, stores).pipe(map((c) => c.type))).toBe('a-c-ef', { a: 'upsert', c: 'upsert', e: 'delete', f: 'synced' });
    });
    assert.equal(stores.get('services')!.size, 0);
    assert.equal(stores.get('services')!.synced, true);
  });

  it('turns an object a store cannot take into a problem naming it, keeps the stored version, and goes on', () => {
    const stores = new Map([['slices', new Store('slices', { indexBy: ['$..name'] })]]);
    let deep: unknown = { name: 'leaf' };
    for (let i = 0; i < 3_000; i++) deep = { a: deep };
    const tooDeep: KubeObject = { ...object('web', '2'), kind: 'EndpointSlice', spec: deep };
    const nameless = { kind: 'EndpointSlice', metadata: {} } as unknown as KubeObject;
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('abcde', {
        a: upsert('slices', 'web', '1'),
        b: { type: 'upsert', resource: 'slices', object: tooDeep },
        c: { type: 'upsert', resource: 'slices', object: nameless },
        d: { type: 'problem', source: 'manifests/x.yaml', message: 'does not parse' },
        e: upsert('slices', 'api', '1'),
      });
      const summary = (c: ResourceChange) => (c.type === 'problem' ? `${c.source}|${c.object ? `${c.object.kind} ${c.object.namespace}/${c.object.name}` : '-'}` : `${c.type} ${c.type === 'upsert' ? c.object.metadata.name : ''}`);
      expectObservable(applyToStores(changes, stores).pipe(map(summary))).toBe('abcde', {
        a: 'upsert web',
        b: 'store slices|EndpointSlice default/web',
        c: 'store slices|-',
        d: 'manifests/x.yaml|-',
        e: 'upsert api',
      });
    });
    assert.equal(stores.get('slices')!.first('web')?.metadata.resourceVersion, '1', 'the version it could take stays');
    assert.equal(stores.get('slices')!.size, 2);
  });
});
