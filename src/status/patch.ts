/**
 * From an object's composed status and its status as the cluster holds it, the
 * merge patch of `/status` that makes the first true, touching nothing else:
 *
 * - conditions are merged by type: types haprx does not declare stay as they are,
 *   in place; each declared one gets `observedGeneration` and keeps its
 *   `lastTransitionTime` unless its status changes; one the book marks `keepShown`
 *   stays as the object shows it, and is written only where it shows none;
 * - `listeners` belong to the object's controller: the declared entries, in order;
 * - `parents` and `ancestors` are shared: entries of other controllers stay as they
 *   are; haprx's (by controllerName) are the declared ones, and those it no longer
 *   declares go;
 * - declared fields (e.g. supportedFeatures) are set;
 * - the load balancer's address: Ingress `loadBalancer.ingress`, Gateway
 *   `addresses`, set while served, removed when haprx stops serving the object.
 *
 * Undefined means there is nothing to write. Pure: the caller gives the time.
 */
import type { LoadBalancerIngress } from '../k8s/addresses.ts';
import { normaliseAddresses } from '../k8s/addresses.ts';
import { type DeclaredCondition, type DeclaredEntry, ENTRY_LISTS, type EntryList, type ObjectStatus, canonical } from './types.ts';

type Json = Record<string, unknown>;

export interface PatchInput {
  /** The object's status now (undefined: none). */
  current: Json | undefined;
  /** What it should say; undefined when nothing is declared for the object any more. */
  composed: ObjectStatus | undefined;
  /** Controller names haprx writes parents/ancestors entries as: its entries to keep current or remove. */
  controllers: ReadonlySet<string>;
  /** The load balancer's addresses; undefined while unknown (address fields are then left alone). */
  addresses: readonly LoadBalancerIngress[] | undefined;
  /** Whether haprx set the object's address itself (then it removes it once it no longer serves the object). */
  addressedByUs: boolean;
  /** RFC 3339, for lastTransitionTime. */
  now: string;
}

/** How each kind publishes the load balancer's address. */
const ADDRESS_FIELDS: Readonly<Record<string, { field: string; from: (a: readonly LoadBalancerIngress[]) => unknown[]; read: (status: Json) => unknown }>> = {
  Ingress: {
    field: 'loadBalancer',
    from: (a) => normaliseAddresses(a),
    read: (status) => (status.loadBalancer as { ingress?: unknown } | undefined)?.ingress,
  },
  Gateway: {
    field: 'addresses',
    from: (a) => normaliseAddresses(a).map((x) => (x.ip ? { type: 'IPAddress', value: x.ip } : { type: 'Hostname', value: x.hostname })),
    read: (status) => status.addresses,
  },
};

export function hasAddressField(kind: string | undefined): boolean {
  return kind !== undefined && Object.hasOwn(ADDRESS_FIELDS, kind);
}

/** The status patch, and the address it sets (for the caller to remember), or undefined when there is nothing to write. */
export function statusPatch(input: PatchInput): { patch: Json; addressed: boolean } | undefined {
  const { composed, now } = input;
  const current = input.current ?? {};
  const patch: Json = {};
  const generation = composed?.generation;
  if (composed && composed.conditions.length > 0) {
    const merged = mergeConditions(asList(current.conditions), composed.conditions, generation, now);
    if (!same(merged, current.conditions)) patch.conditions = merged;
  }
  for (const [k, v] of Object.entries(composed?.fields ?? {})) if (!same(v, current[k])) patch[k] = v;
  for (const list of Object.keys(ENTRY_LISTS) as EntryList[]) {
    const declared = (composed?.entries ?? []).filter((e) => e.list === list);
    const next = ENTRY_LISTS[list].shared ? sharedEntries(list, asList(current[list]), declared, input.controllers, generation, now) : ownEntries(asList(current[list]), declared, generation, now);
    if (next !== undefined && !same(next, current[list])) patch[list] = next;
  }
  let addressed = input.addressedByUs;
  const kind = composed?.ref.kind;
  const address = kind !== undefined ? ADDRESS_FIELDS[kind] : undefined;
  if (address && input.addresses !== undefined) {
    const shown = address.read(current);
    const ours = address.from(input.addresses);
    if (composed?.served === true) {
      addressed = true;
      if (!same(shown, ours)) patch[address.field] = kind === 'Ingress' ? { ingress: ours } : ours;
    } else if ((composed?.served === false || (composed === undefined && input.addressedByUs && same(shown, ours))) && asList(shown).length > 0) {
      addressed = false;
      patch[address.field] = kind === 'Ingress' ? { ingress: null } : null;
    }
  }
  return Object.keys(patch).length > 0 ? { patch, addressed } : undefined;
}

/** The same, for an object no longer declared: only what haprx wrote goes (its parents entries, its address). */
export function cleanupPatch(kind: string | undefined, input: Omit<PatchInput, 'composed'>): Json | undefined {
  const current = input.current ?? {};
  const patch: Json = {};
  for (const list of Object.keys(ENTRY_LISTS) as EntryList[]) {
    if (!ENTRY_LISTS[list].shared) continue;
    const entries = asList(current[list]);
    const kept = entries.filter((e) => !input.controllers.has(String((e as Json | null)?.controllerName)));
    if (kept.length !== entries.length) patch[list] = kept;
  }
  const address = kind !== undefined ? ADDRESS_FIELDS[kind] : undefined;
  if (address && input.addresses !== undefined && input.addressedByUs) {
    const shown = address.read(current);
    if (asList(shown).length > 0 && same(shown, address.from(input.addresses))) patch[address.field] = kind === 'Ingress' ? { ingress: null } : null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Whether a status holds entries written as one of these controllers. */
export function hasEntriesOf(status: Json | undefined, controllers: ReadonlySet<string>): boolean {
  if (!status) return false;
  return (Object.keys(ENTRY_LISTS) as EntryList[]).some((list) => ENTRY_LISTS[list].shared && asList(status[list]).some((e) => controllers.has(String((e as Json | null)?.controllerName))));
}

function mergeConditions(current: readonly unknown[], declared: readonly DeclaredCondition[], generation: number | undefined, now: string): Json[] {
  const byType = new Map(declared.map((c) => [c.type, c]));
  const written = new Set<string>();
  const write = (c: DeclaredCondition, before: Json | undefined): Json => ({
    type: c.type,
    status: c.status,
    ...(generation !== undefined && { observedGeneration: generation }),
    lastTransitionTime: before !== undefined && before.status === c.status && typeof before.lastTransitionTime === 'string' ? before.lastTransitionTime : now,
    reason: c.reason,
    message: c.message,
  });
  const out: Json[] = [];
  for (const item of current) {
    const before = item as Json;
    const c = typeof before?.type === 'string' ? byType.get(before.type) : undefined;
    if (c && !written.has(c.type)) {
      written.add(c.type);
      out.push(c.keepShown ? before : write(c, before));
    } else if (!c) out.push(before);
  }
  for (const c of declared) if (!written.has(c.type)) out.push(write(c, undefined));
  return out;
}

function entryFields(entry: DeclaredEntry, before: Json | undefined, generation: number | undefined, now: string): Json {
  return { ...entry.key, ...entry.fields, conditions: mergeConditions(asList(before?.conditions), entry.conditions, generation, now) };
}

/** A listener-like list: exactly the declared entries (none declared: the list is left as it is). */
function ownEntries(current: readonly unknown[], declared: readonly DeclaredEntry[], generation: number | undefined, now: string): Json[] | undefined {
  if (declared.length === 0) return undefined;
  const byName = new Map(current.map((e) => [String((e as Json | null)?.name), e as Json]));
  return declared.map((e) => entryFields(e, byName.get(String(e.key.name)), generation, now));
}

/** A parents-like list: others' entries as they are, then haprx's, as declared. */
function sharedEntries(list: EntryList, current: readonly unknown[], declared: readonly DeclaredEntry[], controllers: ReadonlySet<string>, generation: number | undefined, now: string): Json[] | undefined {
  const mine = new Set([...controllers, ...declared.map((e) => String(e.key.controllerName))]);
  const refField = ENTRY_LISTS[list].key;
  const keyOf = (ref: unknown, controller: unknown) => `${String(controller)}\u0000${canonical(withDefaults(ref))}`;
  const before = new Map<string, Json>();
  const others: Json[] = [];
  for (const item of current) {
    const e = item as Json;
    if (mine.has(String(e?.controllerName))) before.set(keyOf(e[refField], e.controllerName), e);
    else others.push(e);
  }
  if (declared.length === 0 && before.size === 0) return undefined;
  const ours = declared.map((e) => {
    const previous = before.get(keyOf(e.key[refField], e.key.controllerName));
    const entry = entryFields(e, previous, generation, now);
    // The API server fills in a parentRef's defaults: keep its form, so an equal entry compares equal.
    if (previous && canonical(withDefaults(previous[refField])) === canonical(withDefaults(e.key[refField]))) entry[refField] = previous[refField];
    return entry;
  });
  return [...others, ...ours];
}

/** A parentRef with the defaults the API server applies (group, kind), so that both forms compare equal. */
function withDefaults(ref: unknown): unknown {
  if (ref === null || typeof ref !== 'object' || Array.isArray(ref)) return ref;
  return { group: 'gateway.networking.k8s.io', kind: 'Gateway', ...(ref as Json) };
}

function asList(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Deep equality as JSON with sorted keys (undefined and absent alike). */
function same(a: unknown, b: unknown): boolean {
  return canonical(a ?? null) === canonical(b ?? null);
}
