import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { ResourceChange } from '../src/k8s/resource.ts';
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
});
