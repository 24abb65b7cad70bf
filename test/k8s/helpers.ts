import type { Subscription } from 'rxjs';
import type { Observable } from 'rxjs';
import { KubeApi } from '../../src/k8s/api.ts';
import type { KubeObject, ResourceChange } from '../../src/k8s/resource.ts';
import { type KubeApiDouble, kubeConfigFor } from '../support/kube-api-double/index.ts';

/** Waits until `check` holds, polling; fails with `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function apiFor(double: KubeApiDouble, token = 'test-token'): KubeApi {
  return new KubeApi(kubeConfigFor(double, token), { requestTimeoutMs: 5_000 });
}

/** Subscribes and records every emission. */
export function record<T>(source: Observable<T>): { items: T[]; subscription: Subscription } {
  const items: T[] = [];
  const subscription = source.subscribe((item) => items.push(item));
  return { items, subscription };
}

/** The state a store would hold after these changes: key → resourceVersion. */
export function fold(changes: readonly ResourceChange[]): Map<string, string> {
  const state = new Map<string, string>();
  const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  for (const c of changes) {
    if (c.type === 'upsert') state.set(keyOf(c.object), c.object.metadata.resourceVersion ?? '');
    else if (c.type === 'delete') state.delete(keyOf(c.object));
    else if (c.type === 'replace') {
      state.clear();
      for (const o of c.objects) state.set(keyOf(o), o.metadata.resourceVersion ?? '');
    }
  }
  return state;
}

export const configMap = (name: string, data: Record<string, string> = {}, namespace = 'default', labels?: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, ...(labels && { labels }) },
  data,
});
