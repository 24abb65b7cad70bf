import assert from 'node:assert/strict';
import { TestScheduler } from 'rxjs/testing';
import type { Endpoint, InstanceOutcome, Reconcile } from '../src/events.ts';
import type { KubeObject, ResourceChange } from '../src/k8s/resource.ts';
import { type RenderedConfig, sealRendered } from '../src/templating/rendered.ts';

/** A TestScheduler whose assertions fail node:test tests with a readable diff. */
export function marbles(): TestScheduler {
  return new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected));
}

export function configNamed(label: string): RenderedConfig {
  return sealRendered({ main: `# ${label}\nglobal\n`, maps: {}, files: {}, certs: {} });
}

export function reconcileNo(seq: number, at = 0): Reconcile {
  return { seq, cause: { reason: 'resources', changes: [] }, at };
}

export function object(name: string, resourceVersion: string, namespace = 'default'): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace, resourceVersion } };
}

export function upsert(resource: string, name: string, resourceVersion: string): ResourceChange {
  return { type: 'upsert', resource, object: object(name, resourceVersion) };
}

export function synced(resource: string): ResourceChange {
  return { type: 'synced', resource };
}

export function endpoint(id: string): Endpoint {
  return { id, address: `http://${id}:5555` };
}

export const OK: InstanceOutcome = { ok: true, reloaded: false, runtimeOps: 1 };
