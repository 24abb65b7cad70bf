import { createHash } from 'node:crypto';
import { Observable, merge, share } from 'rxjs';
import type { WatchedResource } from '../config/controller-config.ts';
import type { RawConfig } from '../config/template-dir.ts';
import type { Endpoint } from '../events.ts';
import type { KubeApi } from './api.ts';
import { configMapToRaw } from './config-map.ts';
import { type CredentialsResult, credentialsFromSecret } from './credentials.ts';
import { type DataplaneAddressing, EndpointSet } from './discovery.ts';
import { type LoadBalancerIngress, serviceAddresses } from './addresses.ts';
import { type ListWatchOptions, listWatch } from './list-watch.ts';
import { namedOnDemandSet, onDemandSet } from './on-demand.ts';
import type { KubeObject, ResourceChange } from './resource.ts';

export interface NamedObject {
  apiVersion: string;
  resource: string;
  namespace: string;
  name: string;
}

/**
 * The change sources of every watched set, merged: what the graph's `changes$`
 * takes. A set with `referencedBy` is held on demand, fed by the changes of the
 * sets that reference it (listed and watched once for both): each referenced object
 * read and watched by name (namedOnDemandSet), or, when the set has a labelSelector,
 * the labelled objects listed and watched and only the referenced ones kept
 * (onDemandSet).
 */
export function kubeChanges(api: KubeApi, watch: readonly WatchedResource[], options: ListWatchOptions = {}): Observable<ResourceChange> {
  const referenced = new Set(watch.flatMap((w) => (w.referencedBy ?? []).map((r) => r.set)));
  const streams = new Map<string, Observable<ResourceChange>>();
  for (const w of watch) {
    const source = listWatch(
      api,
      {
        name: w.name,
        apiVersion: w.apiVersion,
        resource: w.resource,
        ...(w.namespace !== undefined && { namespace: w.namespace }),
        ...(w.labelSelector !== undefined && { labelSelector: w.labelSelector }),
        ...(w.fieldSelector !== undefined && { fieldSelector: w.fieldSelector }),
        ...(w.strip !== undefined && { strip: w.strip }),
      },
      options,
    );
    streams.set(w.name, referenced.has(w.name) ? source.pipe(share()) : source);
  }
  return merge(
    ...watch.map((w) => {
      const own$ = streams.get(w.name)!;
      if (!w.referencedBy?.length) return own$;
      const references$ = merge(...w.referencedBy.flatMap((r) => streams.get(r.set) ?? []));
      // With a label the user set, the labelled objects are listed and watched; otherwise each referenced one by name.
      if (w.labelSelector !== undefined) {
        return onDemandSet(api, { name: w.name, apiVersion: w.apiVersion, resource: w.resource, referencedBy: w.referencedBy, ...(w.strip !== undefined && { strip: w.strip }) }, own$, references$);
      }
      const watchOne = (namespace: string | undefined, name: string) =>
        listWatch(
          api,
          {
            name: w.name,
            apiVersion: w.apiVersion,
            resource: w.resource,
            named: name,
            ...(namespace !== undefined && { namespace }),
            ...(w.fieldSelector !== undefined && { fieldSelector: w.fieldSelector }),
            ...(w.strip !== undefined && { strip: w.strip }),
          },
          options,
        );
      return namedOnDemandSet({ name: w.name, referencedBy: w.referencedBy, ...(w.namespace !== undefined && { namespace: w.namespace }) }, watchOne, references$);
    }),
  );
}

export type ObjectState = { type: 'object'; object: KubeObject | undefined } | { type: 'problem'; message: string };

/**
 * One object by name, watched (a list and watch narrowed by a metadata.name field
 * selector): its state after the first list, then after every change, `undefined`
 * while it does not exist. Failures to reach it arrive as problems in between.
 */
export function watchObject(api: KubeApi, target: NamedObject, options: ListWatchOptions = {}): Observable<ObjectState> {
  return new Observable<ObjectState>((subscriber) => {
    let current: KubeObject | undefined;
    let synced = false;
    const subscription = listWatch(
      api,
      { name: target.name, apiVersion: target.apiVersion, resource: target.resource, namespace: target.namespace, serverFieldSelector: `metadata.name=${target.name}`, strip: ['metadata.managedFields'] },
      options,
    ).subscribe((change) => {
      switch (change.type) {
        case 'problem':
          subscriber.next({ type: 'problem', message: change.message });
          return;
        case 'synced':
          synced = true;
          break;
        case 'replace':
          current = change.objects.find((o) => o.metadata.name === target.name);
          break;
        case 'upsert':
          current = change.object;
          break;
        case 'delete':
          current = undefined;
          break;
      }
      if (synced) subscriber.next({ type: 'object', object: current });
    });
    return () => subscription.unsubscribe();
  });
}

/** Emits only when `signature` of the value differs from the last one emitted. */
function distinctBy<T>(source: Observable<T>, signature: (value: T) => string): Observable<T> {
  return new Observable<T>((subscriber) => {
    let last: string | undefined;
    return source.subscribe({
      next: (value) => {
        const s = signature(value);
        if (s === last) return;
        last = s;
        subscriber.next(value);
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => subscriber.complete(),
    });
  });
}

export interface ConfigMapState {
  raw: RawConfig;
  /** The ConfigMap's uid, for Events that regard it; undefined while it does not exist. */
  uid?: string;
}

/**
 * The controller ConfigMap as raw controller configurations: one when it is first
 * read, then one per change of its data. A relist or a metadata-only update (a label,
 * an annotation) emits nothing, so it never rebuilds the graph.
 */
export function controllerConfigSource(api: KubeApi, namespace: string, name: string, options: ListWatchOptions = {}): Observable<ConfigMapState> {
  const source = `${namespace}/${name}`;
  const states = new Observable<ConfigMapState>((subscriber) =>
    watchObject(api, { apiVersion: 'v1', resource: 'configmaps', namespace, name }, options).subscribe((state) => {
      // A ConfigMap that cannot be read keeps the running configuration: only a read one counts.
      if (state.type === 'problem') return;
      const uid = state.object?.metadata.uid;
      subscriber.next({ raw: configMapToRaw(state.object, source), ...(uid !== undefined && { uid }) });
    }),
  );
  return distinctBy(states, (state) => contentHash({ uid: state.uid, raw: state.raw }));
}

/** The Data Plane credentials Secret, decoded, once per change of its content. */
export function credentialsSource(api: KubeApi, namespace: string, name: string, options: ListWatchOptions = {}): Observable<CredentialsResult> {
  const label = `${namespace}/${name}`;
  const states = new Observable<CredentialsResult>((subscriber) =>
    watchObject(api, { apiVersion: 'v1', resource: 'secrets', namespace, name }, options).subscribe((state) => {
      if (state.type === 'object') subscriber.next(credentialsFromSecret(state.object, label));
    }),
  );
  return distinctBy(states, (result) => (result.ok ? `ok:${result.credentials.version}` : `error:${result.message}`));
}

/** The addresses of the HAProxy Service; undefined while it does not exist. */
export function serviceAddressSource(api: KubeApi, namespace: string, name: string, options: ListWatchOptions = {}): Observable<LoadBalancerIngress[] | undefined> {
  const states = new Observable<LoadBalancerIngress[] | undefined>((subscriber) =>
    watchObject(api, { apiVersion: 'v1', resource: 'services', namespace, name }, options).subscribe((state) => {
      if (state.type === 'object') subscriber.next(state.object ? serviceAddresses(state.object) : undefined);
    }),
  );
  return distinctBy(states, (addresses) => JSON.stringify(addresses ?? null));
}

/**
 * The HAProxy instances: pods that match the selector (applied by the API server)
 * whose Data Plane container is Ready, as Data Plane API endpoints. Emits after the
 * first list, then whenever the set of endpoints changes.
 */
export function haproxyEndpoints(api: KubeApi, namespace: string, podSelector: string, addressing: DataplaneAddressing, options: ListWatchOptions = {}): Observable<readonly Endpoint[]> {
  return new Observable<readonly Endpoint[]>((subscriber) => {
    const set = new EndpointSet(addressing);
    return listWatch(api, { name: 'haproxy-pods', apiVersion: 'v1', resource: 'pods', namespace, labelSelector: podSelector, strip: ['metadata.managedFields', 'spec'] }, options).subscribe((change) => {
      const endpoints = set.apply(change);
      if (endpoints) subscriber.next(endpoints);
    });
  });
}

function contentHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}
