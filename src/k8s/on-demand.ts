import { Observable, type Subscriber, Subscription } from 'rxjs';
import type { KubeApi } from './api.ts';
import { type ReferenceRule, ReferenceIndex } from './references.ts';
import { type KubeObject, type ResourceChange, objectKey } from './resource.ts';
import { DEFAULT_STRIP, stripFields } from './store.ts';

/** An object standing for a key (`namespace/name`, or a name): enough for a delete, or a read by name. */
function stub(key: string): KubeObject {
  const slash = key.indexOf('/');
  return { metadata: slash >= 0 ? { namespace: key.slice(0, slash), name: key.slice(slash + 1) } : { name: key } };
}

/**
 * What both kinds of on-demand set share: nothing is passed on once closed, and
 * `synced` is passed on once, when every set waited for has listed and nothing is
 * `busy` (the first reads of the objects referenced so far).
 */
function syncGate(subscriber: Subscriber<ResourceChange>, name: string, waitingFor: Iterable<string>, busy: () => boolean) {
  const waiting = new Set(waitingFor);
  let synced = false;
  let closed = false;
  const emit = (change: ResourceChange) => {
    if (!closed) subscriber.next(change);
  };
  const maybeSync = () => {
    if (!synced && waiting.size === 0 && !busy()) {
      synced = true;
      emit({ type: 'synced', resource: name });
    }
  };
  return {
    emit,
    maybeSync,
    /** A set waited for has listed. */
    listed(set: string) {
      waiting.delete(set);
      maybeSync();
    },
    get closed() {
      return closed;
    },
    close() {
      closed = true;
    },
  };
}

type SyncGate = ReturnType<typeof syncGate>;

/**
 * Follows the referencing sets: their `synced` ends the wait for them (their
 * problems are theirs to report); any other change says which keys stopped, and
 * which started, being referenced.
 */
function followReferences(index: ReferenceIndex, gate: SyncGate, unreferenced: (key: string) => void, referenced: (key: string) => void) {
  return (change: ResourceChange) => {
    if (change.type === 'problem') return;
    if (change.type === 'synced') return gate.listed(change.resource);
    const { added, removed } = index.apply(change);
    for (const key of removed) unreferenced(key);
    for (const key of added) referenced(key);
    gate.maybeSync();
  };
}

export interface OnDemandSpec {
  name: string;
  apiVersion: string;
  resource: string;
  referencedBy: readonly ReferenceRule[];
  strip?: readonly string[];
}

/**
 * A resource set held on demand, by name: each object the referencing sets point
 * at is read and watched by its own name (`watchOne`, a GET and a watch narrowed by
 * a `metadata.name` field selector), and nothing else of the set is ever read: no
 * list, so neither the API server nor haprx handles the Secrets nobody names. An
 * object that stops being referenced is deleted from the set and its watch closed.
 *
 * `synced` waits for every referencing set's list and the first read of every
 * object they referenced by then, so the first render sees every referenced object.
 * Each referenced object costs one watch: for very many, label them and hold the
 * set by label instead (onDemandSet with a labelSelector).
 */
export function namedOnDemandSet(
  spec: Pick<OnDemandSpec, 'name' | 'referencedBy'> & { namespace?: string },
  watchOne: (namespace: string | undefined, name: string) => Observable<ResourceChange>,
  references$: Observable<ResourceChange>,
): Observable<ResourceChange> {
  return new Observable<ResourceChange>((subscriber) => {
    const index = new ReferenceIndex(spec.referencedBy);
    const watches = new Map<string, Subscription>();
    /** Keys passed on, i.e. in the store. */
    const held = new Set<string>();
    /** Keys whose first read has not answered yet. */
    const pending = new Set<string>();
    const gate = syncGate(subscriber, spec.name, spec.referencedBy.map((r) => r.set), () => pending.size > 0);
    const { emit, maybeSync } = gate;
    const drop = (key: string) => {
      if (held.delete(key)) emit({ type: 'delete', resource: spec.name, object: stub(key) });
    };
    const start = (key: string) => {
      const { metadata } = stub(key);
      // A set limited to one namespace holds nothing from another.
      if (spec.namespace !== undefined && metadata.namespace !== spec.namespace) return;
      pending.add(key);
      // Registered before subscribing, in case the source answers at once.
      watches.set(key, Subscription.EMPTY);
      const subscription = watchOne(metadata.namespace, metadata.name).subscribe((change) => {
        if (gate.closed || !watches.has(key)) return;
        switch (change.type) {
          case 'problem':
            return emit({ ...change, resource: spec.name });
          case 'synced':
            pending.delete(key);
            return maybeSync();
          case 'replace': {
            const object = change.objects.find((o) => objectKey(o) === key);
            if (!object) return drop(key);
            held.add(key);
            return emit({ type: 'upsert', resource: spec.name, object });
          }
          case 'upsert':
            if (objectKey(change.object) !== key) return;
            held.add(key);
            return emit({ ...change, resource: spec.name });
          case 'delete':
            if (objectKey(change.object) === key) drop(key);
        }
      });
      watches.set(key, subscription);
    };
    const stop = (key: string) => {
      watches.get(key)?.unsubscribe();
      watches.delete(key);
      pending.delete(key);
      drop(key);
    };
    const onReference = followReferences(index, gate, stop, (key) => {
      if (!watches.has(key)) start(key);
    });
    const refs = references$.subscribe(onReference);
    return () => {
      gate.close();
      refs.unsubscribe();
      for (const subscription of watches.values()) subscription.unsubscribe();
      watches.clear();
    };
  });
}

/**
 * A resource set held on demand, by label: of everything its list/watch sees, only the
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
    const gate = syncGate(subscriber, spec.name, [spec.name, ...spec.referencedBy.map((r) => r.set)], () => fetching.size > 0);
    const { emit, maybeSync } = gate;
    const abort = new AbortController();
    const fetch = (key: string) => {
      const marker = { stale: false };
      fetching.set(key, marker);
      const { metadata } = stub(key);
      void api
        .request<KubeObject>('GET', { apiVersion: spec.apiVersion, resource: spec.resource, name: metadata.name, ...(metadata.namespace !== undefined && { namespace: metadata.namespace }) }, { signal: abort.signal })
        .then((result) => {
          if (fetching.get(key) === marker) fetching.delete(key);
          if (gate.closed || marker.stale) return maybeSync();
          if (result.ok && index.has(key)) {
            held.add(key);
            emit({ type: 'upsert', resource: spec.name, object: stripFields(result.body, strip) });
          } else if (!result.ok && result.status !== 404) {
            emit({ type: 'problem', resource: spec.name, source: spec.resource, message: `cannot read ${key}: ${result.message}` });
          }
          maybeSync();
        });
    };

    const onReference = followReferences(
      index,
      gate,
      (key) => {
        if (held.delete(key)) emit({ type: 'delete', resource: spec.name, object: stub(key) });
      },
      (key) => {
        if (existing.has(key) && !held.has(key) && !fetching.has(key)) fetch(key);
      },
    );

    const onOwn = (change: ResourceChange) => {
      switch (change.type) {
        case 'problem':
          return emit(change);
        case 'synced':
          return gate.listed(spec.name);
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
      gate.close();
      abort.abort();
      refs.unsubscribe();
      own.unsubscribe();
    };
  });
}
