/**
 * What the templates say about each object they read: the status haprx writes for
 * it. Templates declare it with `h.status` (docs/templates.md, "Status"); the render
 * result carries one ObjectStatus per object declared, and the status writer, the
 * debug endpoint and `haprx status` read it. Nothing here is specific to a kind:
 * conditions at the top of the status, entries of a status list (a Gateway's
 * listeners, a route's parents, a policy's ancestors), other fields, and `served`.
 */
import type { ObjectRef } from '../events.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A condition as a template declares it (metav1.Condition without the times haprx keeps). */
export interface DeclaredCondition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  /**
   * What it says holds only once the configuration of this render is live on every
   * instance (a `Programmed` condition): until then it is written `Unknown` with
   * reason `Pending`, and `False` with reason `Pending` (or `Invalid`) when the
   * deployment failed (or haproxy refused the configuration).
   */
  live?: boolean;
  /**
   * Set by the status book, not by templates, on a held live condition while nothing has
   * been deployed since the start: what the instances run is unknown (after a restart,
   * most likely what the condition the cluster shows was written for), so a condition of
   * this type the object shows stays as it is; only where none is shown is this written.
   */
  keepShown?: boolean;
}

/** The status lists whose entries templates declare, and what keys an entry. */
export const ENTRY_LISTS = {
  /** Gateway and ListenerSet: one entry per listener, by name; the list is the object's controller's. */
  listeners: { key: 'name', shared: false },
  /** Routes: one entry per parentRef and controller; entries of other controllers are theirs. */
  parents: { key: 'parentRef', shared: true },
  /** Policies: one entry per ancestorRef and controller; entries of other controllers are theirs. */
  ancestors: { key: 'ancestorRef', shared: true },
} as const;
export type EntryList = keyof typeof ENTRY_LISTS;

export interface DeclaredEntry {
  list: EntryList;
  /** The entry's identity: `{ name }`, or `{ parentRef | ancestorRef, controllerName }`. */
  key: Readonly<Record<string, unknown>>;
  conditions: readonly DeclaredCondition[];
  /** Further fields of the entry, e.g. a listener's attachedRoutes and supportedKinds. */
  fields: Readonly<Record<string, unknown>>;
}

export interface ObjectStatus {
  /** The object, with its uid when the cluster gave it one. */
  ref: ObjectRef;
  /** metadata.generation of the object the render read: every condition's observedGeneration. */
  generation?: number;
  /** The render serves the object (an Ingress then shows the load balancer's address). */
  served?: boolean;
  conditions: readonly DeclaredCondition[];
  /** Further top-level status fields, e.g. a GatewayClass's supportedFeatures. */
  fields: Readonly<Record<string, unknown>>;
  entries: readonly DeclaredEntry[];
}

/** One key per object, whatever the version it was read as: `Kind namespace/name`. */
export function statusKey(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): string {
  return `${ref.kind ?? ''} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** The key of an entry within its list. */
export function entryKey(entry: Pick<DeclaredEntry, 'list' | 'key'>): string {
  return `${entry.list}\u0000${canonical(entry.key)}`;
}

/** JSON with object keys sorted, so that equal values give equal text. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
