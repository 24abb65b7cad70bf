import type { ObjectRef } from '../events.ts';

/** The slice of a Kubernetes object that haprx relies on; the rest is carried opaquely. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

/**
 * One change to one watched resource set. `resource` is the name the controller
 * configuration gives the set (e.g. "ingresses"), not the Kubernetes kind.
 */
export type ResourceChange =
  | { type: 'upsert'; resource: string; object: KubeObject }
  | { type: 'delete'; resource: string; object: KubeObject }
  /** The set's initial list is complete; before this, renders would see a partial world. */
  | { type: 'synced'; resource: string }
  /** The whole set is replaced at once (a relist). */
  | { type: 'replace'; resource: string; objects: readonly KubeObject[] }
  /**
   * A source could not read something (a manifest that does not parse, a watch that
   * failed), or a store could not take an object (`object` names it). Stores ignore
   * it: what they held stays as it was.
   */
  | { type: 'problem'; resource?: string; source: string; line?: number; message: string; object?: ObjectRef };

/** The store key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(object: Pick<KubeObject, 'metadata'>): string {
  const { namespace, name } = object.metadata;
  return namespace ? `${namespace}/${name}` : name;
}

/** A short human reference, for logs and events: `Kind namespace/name`. */
export function objectRef(object: KubeObject): string {
  return `${object.kind ?? 'Object'} ${objectKey(object)}`;
}

/** The object as an ObjectRef, for problems and warnings that name it. */
export function refOf(object: KubeObject): ObjectRef {
  const { namespace, name } = object.metadata;
  return {
    ...(typeof object.apiVersion === 'string' && { apiVersion: object.apiVersion }),
    ...(typeof object.kind === 'string' && { kind: object.kind }),
    ...(typeof namespace === 'string' && namespace !== '' && { namespace }),
    name,
  };
}
