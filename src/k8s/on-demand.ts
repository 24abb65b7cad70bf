import { Observable } from 'rxjs';
import type { KubeApi } from './api.ts';
import { type ReferenceRule, ReferenceIndex } from './references.ts';
import { type KubeObject, type ResourceChange, objectKey } from './resource.ts';
import { DEFAULT_STRIP, stripFields } from './store.ts';

export interface OnDemandSpec {
  name: string;
  apiVersion: string;
  resource: string;
  referencedBy: readonly ReferenceRule[];
  strip?: readonly string[];
}

/**
 * A resource set held on demand: of everything its list/watch sees, only the
 * objects that the referencing sets point at are passed on (so only they are
 * stored). Of the others only the key and resourceVersion are kept; one that
 * becomes referenced later is fetched with a GET. An object that stops being
 * referenced is deleted from the set.
 *
 * `synced` waits for the set's own list, every referencing set's list, and the
 * fetches they caused, so the first render sees every referenced object.
 */
export function onDemandSet(api: KubeApi, spec: OnDemandSpec, own$: Observable<ResourceChange>, references$: Observable<ResourceChange>): Observable<ResourceChange> {
  const strip = spec.strip ?? DEFAULT_STRIP;
  return new Observable<ResourceChange>((subscriber) => {
    const index = new ReferenceIndex(spec.referencedBy);
    /** Every object of the set known to exist, referenced or not: key → resourceVersion. */
    const existing = new Map<string, string>();
    /** Keys passed on, i.e. in the store. */
    const held = new Set<string>();
    /** Fetches in flight, by key; a watch event for the key makes its result stale. */
    const fetching = new Map<string, { stale: boolean }>();
    const waitingFor = new Set([spec.name, ...spec.referencedBy.map((r) => r.set)]);
    let synced = false;
    let closed = false;
    const abort = new AbortController();
    const emit = (change: ResourceChange) => {
      if (!closed) subscriber.next(change);
    };
    const maybeSync = () => {
      if (!synced && waitingFor.size === 0 && fetching.size === 0) {
        synced = true;
        emit({ type: 'synced', resource: spec.name });
      }
    };
    const stub = (key: string): KubeObject => {
      const slash = key.indexOf('/');
      return { metadata: slash >= 0 ? { namespace: key.slice(0, slash), name: key.slice(slash + 1) } : { name: key } };
    };
    const fetch = (key: string) => {
      const marker = { stale: false };
      fetching.set(key, marker);
      const { metadata } = stub(key);
      void api
        .request<KubeObject>('GET', { apiVersion: spec.apiVersion, resource: spec.resource, name: metadata.name, ...(metadata.namespace !== undefined && { namespace: metadata.namespace }) }, { signal: abort.signal })
        .then((result) => {
          if (fetching.get(key) === marker) fetching.delete(key);
          if (closed || marker.stale) return maybeSync();
          if (result.ok && index.has(key)) {
            held.add(key);
            emit({ type: 'upsert', resource: spec.name, object: stripFields(result.body, strip) });
          } else if (!result.ok && result.status !== 404) {
            emit({ type: 'problem', resource: spec.name, source: spec.resource, message: `cannot read ${key}: ${result.message}` });
          }
          maybeSync();
        });
    };

    const onReference = (change: ResourceChange) => {
      if (change.type === 'problem') return;
      if (change.type === 'synced') {
        waitingFor.delete(change.resource);
        return maybeSync();
      }
      const { added, removed } = index.apply(change);
      for (const key of removed) {
        if (held.delete(key)) emit({ type: 'delete', resource: spec.name, object: stub(key) });
      }
      for (const key of added) if (existing.has(key) && !held.has(key) && !fetching.has(key)) fetch(key);
    };

    const onOwn = (change: ResourceChange) => {
      switch (change.type) {
        case 'problem':
          return emit(change);
        case 'synced':
          waitingFor.delete(spec.name);
          return maybeSync();
        case 'replace': {
          existing.clear();
          const passed: KubeObject[] = [];
          for (const object of change.objects) {
            const key = objectKey(object);
            existing.set(key, object.metadata.resourceVersion ?? '');
            const pending = fetching.get(key);
            if (pending) pending.stale = true;
            if (index.has(key)) passed.push(object);
          }
          held.clear();
          for (const object of passed) held.add(objectKey(object));
          return emit({ type: 'replace', resource: spec.name, objects: passed });
        }
        case 'upsert':
        case 'delete': {
          const key = objectKey(change.object);
          const pending = fetching.get(key);
          if (pending) pending.stale = true;
          if (change.type === 'upsert') {
            existing.set(key, change.object.metadata.resourceVersion ?? '');
            if (index.has(key)) {
              held.add(key);
              emit(change);
            }
          } else {
            existing.delete(key);
            if (held.delete(key)) emit(change);
          }
        }
      }
    };

    // References first: the set's own objects are judged against them.
    const refs = references$.subscribe(onReference);
    const own = own$.subscribe(onOwn);
    return () => {
      closed = true;
      abort.abort();
      refs.unsubscribe();
      own.unsubscribe();
    };
  });
}
