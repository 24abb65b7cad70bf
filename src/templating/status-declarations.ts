/**
 * `h.status(subject, declaration)`: what a template says about an object, checked
 * and copied out of the template realm, and the declarations of one render merged
 * into one ObjectStatus per object.
 *
 * A declaration that is not well formed (an unknown key, a condition type or reason
 * the API would refuse) is a fault of the templates and fails the render; a subject
 * that is not a Kubernetes object skips the object being rendered.
 */
import type { ObjectRef } from '../events.ts';
import { type ConditionStatus, type DeclaredCondition, type DeclaredEntry, ENTRY_LISTS, type EntryList, type ObjectStatus, entryKey, statusKey } from '../status/types.ts';
import { abort, abortRender, describeValue } from './abort.ts';

/** One h.status call, checked. */
export interface Declaration {
  key: string;
  ref: ObjectRef;
  generation?: number;
  served?: boolean;
  conditions: DeclaredCondition[];
  fields: Record<string, unknown>;
  entry?: Pick<DeclaredEntry, 'list' | 'key'>;
}

// metav1.Condition's validation, as the API server applies it.
const CONDITION_TYPE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
// GatewayController: DOMAIN "/" PATH.
const CONTROLLER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;
const KEYS = new Set(['conditions', 'served', 'fields', 'listener', 'parentRef', 'ancestorRef', 'controllerName']);
/** Fields haprx writes itself, or that conditions and entries fill. */
const RESERVED_FIELDS = new Set(['conditions', 'listeners', 'parents', 'ancestors', 'loadBalancer', 'addresses']);
/** A message longer than this is cut: status is for reading, and objects have a size limit. */
export const MAX_CONDITION_MESSAGE = 1024;
const MAX_FIELDS_BYTES = 64 * 1024;

/** Checks one h.status call; `describe` names the subject as warnings do. */
export function declare(subject: unknown, spec: unknown, describe: (subject: unknown) => { ref?: ObjectRef }): Declaration {
  const { ref } = describe(subject);
  if (!ref || ref.kind === undefined) abort(`status(): the subject must be a Kubernetes object with kind and metadata.name, got ${describeValue(subject)}`);
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) abortRender(`status(): the declaration must be an object, got ${describeValue(spec)}`);
  const s = spec as Record<string, unknown>;
  for (const k of Object.keys(s)) if (!KEYS.has(k)) abortRender(`status(): unknown key ${JSON.stringify(k)} (known: ${[...KEYS].join(', ')})`);
  const generation = readGeneration(subject);
  const declaration: Declaration = { key: statusKey(ref), ref, ...(generation !== undefined && { generation }), conditions: conditionsOf(s.conditions), fields: fieldsOf(s.fields) };
  const entries = (['listener', 'parentRef', 'ancestorRef'] as const).filter((k) => s[k] !== undefined);
  if (entries.length > 1) abortRender(`status(): one of listener, parentRef and ancestorRef at a time, got ${entries.join(' and ')}`);
  const at = entries[0];
  if (s.served !== undefined) {
    if (typeof s.served !== 'boolean') abortRender(`status(): served must be true or false, got ${describeValue(s.served)}`);
    if (at) abortRender('status(): served is about the whole object, not one entry of its status');
    declaration.served = s.served;
  }
  if (at === 'listener') {
    if (typeof s.listener !== 'string' || s.listener === '' || s.listener.length > 253) abort(`status(): listener must be a listener name, got ${describeValue(s.listener)}`);
    declaration.entry = { list: 'listeners', key: { name: s.listener } };
  } else if (at) {
    const list: EntryList = at === 'parentRef' ? 'parents' : 'ancestors';
    const ref = copyJson(s[at], `status(): ${at}`);
    if (ref === null || typeof ref !== 'object' || Array.isArray(ref)) abort(`status(): ${at} must be an object, got ${describeValue(s[at])}`);
    if (typeof s.controllerName !== 'string' || !CONTROLLER_NAME.test(s.controllerName)) abortRender(`status(): a ${at} entry needs controllerName, a DOMAIN/PATH, got ${describeValue(s.controllerName)}`);
    declaration.entry = { list, key: { [ENTRY_LISTS[list].key]: ref, controllerName: s.controllerName } };
  } else if (s.controllerName !== undefined) abortRender('status(): controllerName goes with a parentRef or ancestorRef entry');
  return declaration;
}

function readGeneration(subject: unknown): number | undefined {
  const metadata = (subject as { metadata?: unknown }).metadata;
  const generation = metadata !== null && typeof metadata === 'object' ? (metadata as { generation?: unknown }).generation : undefined;
  return typeof generation === 'number' && Number.isSafeInteger(generation) && generation >= 0 ? generation : undefined;
}

const STATUS: Readonly<Record<string, ConditionStatus>> = { true: 'True', false: 'False', True: 'True', False: 'False', Unknown: 'Unknown' };

function conditionsOf(value: unknown): DeclaredCondition[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) abortRender(`status(): conditions must be a list, got ${describeValue(value)}`);
  return value.map((c: unknown, i): DeclaredCondition => {
    const at = `status(): conditions[${i}]`;
    if (c === null || typeof c !== 'object' || Array.isArray(c)) abortRender(`${at} must be an object, got ${describeValue(c)}`);
    const { type, status, reason, message, live } = c as Record<string, unknown>;
    if (typeof type !== 'string' || type.length > 316 || !CONDITION_TYPE.test(type)) abortRender(`${at}.type ${describeValue(type)} is not a condition type (e.g. Accepted)`);
    const normal = typeof status === 'string' || typeof status === 'boolean' ? STATUS[String(status)] : undefined;
    if (!normal) abortRender(`${at}.status must be true, false, "True", "False" or "Unknown", got ${describeValue(status)}`);
    if (typeof reason !== 'string' || reason.length > 1024 || !REASON.test(reason)) abortRender(`${at}.reason ${describeValue(reason)} is not a reason (CamelCase, e.g. NoMatchingParent)`);
    if (message !== undefined && typeof message !== 'string') abortRender(`${at}.message must be text, got ${describeValue(message)}`);
    if (live !== undefined && typeof live !== 'boolean') abortRender(`${at}.live must be true or false, got ${describeValue(live)}`);
    const text = message ?? '';
    return { type, status: normal, reason, message: text.length > MAX_CONDITION_MESSAGE ? `${text.slice(0, MAX_CONDITION_MESSAGE)}…` : text, ...(live === true && { live: true }) };
  });
}

function fieldsOf(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  const copy = copyJson(value, 'status(): fields');
  if (copy === null || typeof copy !== 'object' || Array.isArray(copy)) abortRender(`status(): fields must be an object, got ${describeValue(value)}`);
  for (const k of Object.keys(copy)) if (RESERVED_FIELDS.has(k)) abortRender(`status(): fields.${k} is not declared as a field (conditions, entries and addresses have their own way)`);
  return copy as Record<string, unknown>;
}

/** A plain JSON copy, out of the template realm; bounded in size. */
function copyJson(value: unknown, what: string): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    abort(`${what} is not plain data: ${(err as Error).message}`);
  }
  if (text === undefined) abort(`${what} is not plain data, got ${describeValue(value)}`);
  if (text.length > MAX_FIELDS_BYTES) abort(`${what} is larger than ${MAX_FIELDS_BYTES} characters`);
  return JSON.parse(text) as unknown;
}

/**
 * The declarations of a render, one ObjectStatus per object in key order: conditions
 * merged by type and fields by name (a later declaration wins), entries by their key.
 */
export function collectStatuses(declarations: readonly Declaration[]): ObjectStatus[] {
  type Building = { ref: ObjectRef; generation?: number; served?: boolean; conditions: Map<string, DeclaredCondition>; fields: Record<string, unknown>; entries: Map<string, { list: EntryList; key: Readonly<Record<string, unknown>>; conditions: Map<string, DeclaredCondition>; fields: Record<string, unknown> }> };
  const objects = new Map<string, Building>();
  for (const d of declarations) {
    let o = objects.get(d.key);
    if (!o) {
      o = { ref: d.ref, ...(d.generation !== undefined && { generation: d.generation }), conditions: new Map(), fields: {}, entries: new Map() };
      objects.set(d.key, o);
    }
    if (d.served !== undefined) o.served = d.served;
    if (d.entry) {
      const k = entryKey(d.entry);
      let e = o.entries.get(k);
      if (!e) {
        e = { list: d.entry.list, key: d.entry.key, conditions: new Map(), fields: {} };
        o.entries.set(k, e);
      }
      for (const c of d.conditions) e.conditions.set(c.type, c);
      Object.assign(e.fields, d.fields);
    } else {
      for (const c of d.conditions) o.conditions.set(c.type, c);
      Object.assign(o.fields, d.fields);
    }
  }
  return [...objects.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, o]): ObjectStatus => ({
      ref: o.ref,
      ...(o.generation !== undefined && { generation: o.generation }),
      ...(o.served !== undefined && { served: o.served }),
      conditions: [...o.conditions.values()],
      fields: o.fields,
      // Entries in the order first declared: the templates' order, e.g. the listeners' in the spec.
      entries: [...o.entries.values()].map((e) => ({ list: e.list, key: e.key, conditions: [...e.conditions.values()], fields: e.fields })),
    }));
}
