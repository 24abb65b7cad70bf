/**
 * The fast path for map entries: a new or changed object of a set the templates declare
 * through h.mapEntries (map-entries.ts) is rendered alone, with its snippet, and what it
 * adds is applied as `add map` on the maps haproxy loaded, ahead of the full render.
 *
 * It takes only what the full render cannot answer otherwise: it declines (the full
 * path then does everything) when an object is deleted or relisted, when its snippet
 * fails, skips it or warns, when it asks for more than map entries and not for them
 * first (`mapsFirst` false, e.g. basic auth, another controller's annotations; a TLS
 * host's entries go first, and its plan is `partial`: the render brings the
 * certificate), when a key it adds is held by another object (a conflict the full
 * render settles by age), when it changes
 * or drops an entry it had, when an entry routes to a backend the running configuration
 * lacks, when something other than its own snippet reads it by key, and when a map is
 * loaded other than once as a map.
 */
import type { ChangeRef } from '../events.ts';
import { type RuntimeOp, shareParse } from '../haproxy/plan.ts';
import { mapEntry } from '../haproxy/map-file.ts';
import { type MapReferences, mapReferencesInText } from '../haproxy/plan-maps.ts';
import { type KubeObject, objectKey } from '../k8s/resource.ts';
import { renderObjectEntries } from './engine.ts';
import { type FastPathInput, type FastPathSet, type FastPlan, planFastSteps, rehearseServerEdit, shareIndex } from './fast-path.ts';
import { type Steps, runSteps } from '../steps.ts';
import type { DeclaredObject, MapDeclarations } from './map-entries.ts';
import { type RenderedConfig, readKey, sealMaps, shareDigest } from './rendered.ts';

/** A set the map fast path reads: also its objects by store key. */
export interface MapFastSet extends FastPathSet {
  object(key: string): KubeObject | undefined;
}

export interface MapFastInput extends Omit<FastPathInput, 'resources'> {
  resources: ReadonlyMap<string, MapFastSet>;
}

/** A map entry the fast path added: the full render must have it too. */
export interface AppliedEntry {
  map: string;
  key: string;
  value: string;
}

export type FastMapPlan =
  | FastPlan
  | { kind: 'runtime'; config: RenderedConfig; ops: readonly RuntimeOp[]; backends: readonly string[]; lines: Readonly<Record<string, string>>; entries: readonly AppliedEntry[]; partial?: true };

const describe = (change: ChangeRef) => `${change.kind ?? change.resource} ${change.namespace ? `${change.namespace}/` : ''}${change.name ?? ''}`.trim();

/** Declared objects by `set\u0001key`, per declarations. */
interface ObjectIndex {
  get(key: string): DeclaredObject | undefined;
  /** How many layers of a plan's records lie over a full render's index. */
  readonly layers: number;
}
const byObject = new WeakMap<MapDeclarations, ObjectIndex>();
function objectsOf(declarations: MapDeclarations): ObjectIndex {
  let index = byObject.get(declarations);
  if (!index) {
    const flat = new Map(declarations.objects.map((o) => [`${o.set}\u0001${o.key}`, o]));
    index = { get: (key) => flat.get(key), layers: 0 };
    byObject.set(declarations, index);
  }
  return index;
}

/** A plan's records lie over its base's index, a few layers at most, rather than copying 10k of them per plan. */
const MAX_LAYERS = 16;

/** The reference lookups of each map in a configuration's haproxy.cfg, found once per text. */
const mapRefs = new WeakMap<RenderedConfig, Map<string, MapReferences>>();
function referencesOf(config: RenderedConfig, name: string): MapReferences {
  let byName = mapRefs.get(config);
  if (!byName) mapRefs.set(config, (byName = new Map()));
  let refs = byName.get(name);
  if (!refs) byName.set(name, (refs = mapReferencesInText(config.main, name)));
  return refs;
}

/** Lookups made outside the server lines, per list of them. */
const readSets = new WeakMap<readonly string[], Set<string>>();
function readsOf(reads: readonly string[]): Set<string> {
  let set = readSets.get(reads);
  if (!set) readSets.set(reads, (set = new Set(reads)));
  return set;
}

/** The value a map file of `config` gives `key`, if any: how the fast path's gate checks a full render. */
export function mapValue(config: RenderedConfig, map: string, key: string): string | undefined {
  const text = config.maps[map];
  return text === undefined ? undefined : mapEntry(text, key);
}

export function planMapEntries(base: RenderedConfig, changes: readonly ChangeRef[], input: MapFastInput): FastMapPlan {
  const declarations = base.mapEntries;
  const reads = base.serverSets?.reads;
  if (!declarations || !reads) return { kind: 'unsupported', reason: 'the templates declare no map entries (h.mapEntries)' };
  const objects = objectsOf(declarations);
  const added = new Map<string, Map<string, string>>();
  const updated: DeclaredObject[] = [];
  const applied: AppliedEntry[] = [];
  const backends = new Set<string>();
  // An object whose entries go first but that asks for more (a certificate): its full render is no mere confirmation.
  let partial = false;
  for (const change of changes) {
    const declaration = declarations.sets[change.resource];
    if (change.type !== 'upsert' || change.name === undefined) return { kind: 'unsupported', reason: `${describe(change)}: a ${change.type} takes the full path` };
    if (!declaration) return { kind: 'unsupported', reason: `${describe(change)}: its set is not declared through h.mapEntries with one snippet` };
    const set = input.resources.get(change.resource);
    const key = objectKey({ metadata: { name: change.name, ...(change.namespace !== undefined && { namespace: change.namespace }) } });
    const object = set?.object(key);
    const touched = set?.touchedKeys(key);
    if (!set || !object || !touched) return { kind: 'unsupported', reason: `${describe(change)} is no longer stored` };
    if (touched.some((k) => readsOf(reads).has(readKey(change.resource, k)))) return { kind: 'unsupported', reason: `${describe(change)} is looked up by key outside its h.mapEntries snippet` };
    const rendered = renderObjectEntries(input.templates, declaration, object, { resources: Object.fromEntries(input.resources), values: input.values }, { timeoutMs: input.timeoutMs });
    if (!rendered.ok) return { kind: 'unsupported', reason: `${describe(change)}: ${rendered.error.template}${rendered.error.line !== undefined ? `:${rendered.error.line}` : ''}: ${rendered.error.message}` };
    if (!rendered.mapsFirst) return { kind: 'unsupported', reason: `${describe(change)} asks for more than map entries` };
    if (!rendered.mapsOnly) partial = true;
    if (rendered.warnings > 0) return { kind: 'unsupported', reason: `${describe(change)}: its snippet warns about it; the full render tells` };
    const before = objects.get(`${change.resource}\u0001${key}`);
    if (before && !before.mapsOnly) return { kind: 'unsupported', reason: `${describe(change)} asked for more than map entries before` };

    for (const name of new Set([...Object.keys(before?.maps ?? {}), ...Object.keys(rendered.maps)])) {
      const text = base.maps[name];
      if (text === undefined) return { kind: 'unsupported', reason: `${describe(change)}: map ${name} is not rendered` };
      const batch = added.get(name) ?? new Map<string, string>();
      added.set(name, batch);
      const had = new Map(before?.maps[name] ?? []);
      const wants = new Map<string, string>();
      for (const [k, v] of rendered.maps[name] ?? []) {
        if (wants.has(k)) return { kind: 'unsupported', reason: `${describe(change)}: its snippet declares ${name} key ${k} twice` };
        wants.set(k, v);
      }
      for (const [k, v] of had) {
        // What it had must stay as it was, and be live: otherwise the full render settles who holds it.
        if (wants.get(k) !== v) return { kind: 'unsupported', reason: `${describe(change)} changes or drops its ${name} entry ${k}` };
        if (mapEntry(text, k) !== v) return { kind: 'unsupported', reason: `${describe(change)}: its ${name} entry ${k} is not the one haproxy has` };
      }
      for (const [k, v] of wants) {
        if (had.has(k)) continue;
        if (batch.has(k) || mapEntry(text, k) !== undefined) return { kind: 'unsupported', reason: `${describe(change)}: ${name} key ${k} is already held by another object` };
        batch.set(k, v);
        applied.push({ map: name, key: k, value: v });
        backends.add(v);
      }
    }
    updated.push({ set: change.resource, key, maps: rendered.maps, mapsOnly: rendered.mapsOnly });
  }
  if (applied.length === 0) return { kind: 'none' };
  for (const backend of backends) {
    // Values route to backends (h.mapEntries' contract): one the running haproxy.cfg lacks needs the full path.
    if (!base.main.includes(`\nbackend ${backend}\n`)) return { kind: 'unsupported', reason: `backend ${backend} is not in the running configuration` };
  }

  const ops: RuntimeOp[] = [];
  const maps: Record<string, string> = { ...base.maps };
  for (const [name, batch] of added) {
    if (batch.size === 0) continue;
    const { refs, other } = referencesOf(base, name);
    if (other.length > 0 || refs.length > 1) return { kind: 'unsupported', reason: `map ${name} is loaded other than once as a map` };
    const text = maps[name]!;
    const lines = [...batch].map(([k, v]) => `${k} ${v}\n`).join('');
    // Added entries land last in haproxy's map, as they do in the file.
    maps[name] = text === '' || text.endsWith('\n') ? text + lines : `${text}\n${lines}`;
    if (refs.length === 1) for (const [k, v] of batch) ops.push({ kind: 'map-add', map: name, ref: refs[0]!, key: k, value: v });
  }

  const sealed = sealMaps(base, maps);
  const config: RenderedConfig = { ...sealed, mapEntries: withObjects(declarations, updated) };
  // The copy is the next plan's base: it takes the digest sealMaps found, and the map references of the same haproxy.cfg.
  shareDigest(sealed, config);
  const refs = mapRefs.get(base);
  if (refs) mapRefs.set(config, refs);
  shareParse(base, config);
  shareIndex(base, config);
  return { kind: 'runtime', config, ops, backends: [], lines: {}, entries: applied, ...(partial && { partial }) };
}

/** The declarations with these objects' new records. */
function withObjects(declarations: MapDeclarations, updated: readonly DeclaredObject[]): MapDeclarations {
  // Records listed twice: the later one is the object's (as the index says); a full render lists each once again.
  const next: MapDeclarations = { sets: declarations.sets, objects: declarations.objects.concat(updated) };
  const under = objectsOf(declarations);
  if (under.layers >= MAX_LAYERS) return next;
  const over = new Map(updated.map((o) => [`${o.set}\u0001${o.key}`, o]));
  byObject.set(next, { get: (key) => over.get(key) ?? under.get(key), layers: under.layers + 1 });
  return next;
}

/**
 * The fast path for a batch: changes of sets declared through h.mapEntries go to
 * planMapEntries, the others to planFast (server lines), the map entries planned on
 * the configuration with the new server lines. Either declining declines the batch.
 */
export function planFastPath(base: RenderedConfig, changes: readonly ChangeRef[], input: MapFastInput): FastMapPlan {
  return runSteps(planFastPathSteps(base, changes, input));
}

/** planFastPath, yielding where planning server lines does (steps.ts). */
export function* planFastPathSteps(base: RenderedConfig, changes: readonly ChangeRef[], input: MapFastInput): Steps<FastMapPlan> {
  const sets = base.mapEntries?.sets;
  const mapChanges = sets ? changes.filter((c) => sets[c.resource]) : [];
  if (mapChanges.length === 0) return withDeclarations(yield* planFastSteps(base, changes, input), base);
  const others = changes.filter((c) => !sets?.[c.resource]);
  const servers = others.length > 0 ? yield* planFastSteps(base, others, input) : ({ kind: 'none' } as const);
  if (servers.kind === 'unsupported') return servers;
  withDeclarations(servers, base);
  const entries = planMapEntries(servers.kind === 'runtime' ? servers.config : base, mapChanges, input);
  if (entries.kind !== 'runtime') return entries.kind === 'none' ? servers : entries;
  if (servers.kind !== 'runtime') return entries;
  return { ...entries, ops: [...servers.ops, ...entries.ops], backends: servers.backends, lines: servers.lines };
}

/** New server lines leave the map declarations as they were: planFast's configuration, new and not handed on yet, takes them. */
function withDeclarations(plan: FastPlan, base: RenderedConfig): FastPlan {
  if (plan.kind === 'runtime' && base.mapEntries) plan.config.mapEntries = base.mapEntries;
  return plan;
}

/**
 * Plans, and throws away, a change of one unchanged object for each kind of change the
 * fast path takes on `base` (the first object the first server set reads, the first
 * object declared through h.mapEntries). Each plans as `none`, and nothing is kept, but
 * the code a plan runs is compiled and its caches are filled: the first real change
 * after a start does not pay for it (at 10k objects some 10 ms). Then it rehearses an
 * edit of server lines, which a change of nothing does not reach (rehearseServerEdit).
 * Says what it tried.
 */
export function warmFastPath(base: RenderedConfig, input: MapFastInput): { change: string; plan: FastMapPlan['kind'] }[] {
  const changes: ChangeRef[] = [];
  const read = base.serverSets?.sets[0]?.reads.find((r) => !r.endsWith('\u0001'));
  if (read !== undefined) {
    const [set, key] = read.split('\u0001') as [string, string];
    const object = input.resources.get(set)?.get(...key.split('\u0000'))[0];
    if (object) changes.push(upsertOf(set, object.metadata.namespace, object.metadata.name));
  }
  const declared = base.mapEntries?.objects[0];
  if (declared) {
    const slash = declared.key.indexOf('/');
    changes.push(upsertOf(declared.set, slash < 0 ? undefined : declared.key.slice(0, slash), declared.key.slice(slash + 1)));
  }
  const tried = changes.map((change) => ({ change: describe(change), plan: planFastPath(base, [change], input).kind }));
  const rehearsed = rehearseServerEdit(base);
  if (rehearsed) tried.push({ change: `a server line fewer in ${rehearsed.backend}, rehearsed`, plan: rehearsed.plan });
  return tried;
}

function upsertOf(resource: string, namespace: string | undefined, name: string | undefined): ChangeRef {
  return { type: 'upsert', resource, ...(namespace !== undefined && { namespace }), ...(name !== undefined && { name }) };
}
