/**
 * The fast path's plan: what a batch of changes does to the server lines of the
 * configuration instances run, found without a full render, and as runtime operations
 * only. The full render records each h.servers call and every lookup (rendered.ts);
 * a change that only lookups inside h.servers read is applied by rendering those
 * snippets alone against the stores as they are now, splicing their new lines into
 * the configuration, and planning just the backends they belong to.
 *
 * It declines (the full path then does everything) when a change is read anywhere
 * else, is not an update of an object the stores hold (a deletion, a relist), when a
 * snippet fails or writes anything but `server` lines, or when the new lines need a
 * reload.
 */
import type { ChangeRef } from '../events.ts';
import { type TextEdit, tokenize } from '../haproxy/config.ts';
import { type RuntimeOp, configOfSteps, planEditSteps, planEdits, shareParse } from '../haproxy/plan.ts';
import { type Steps, runSteps } from '../steps.ts';
import { objectKey } from '../k8s/resource.ts';
import type { ResourceView } from '../k8s/store.ts';
import { type CompiledTemplates, renderServerSets } from './engine.ts';
import { type RenderedConfig, firstSetOf, firstSetsOf, type ServerSet, type ServerSets, prepareDigest, readKey, sealEdited, shareDigest, shareFirstSets } from './rendered.ts';

/** A set the fast path reads: lookups, and which index keys a change moved. */
export interface FastPathSet extends ResourceView {
  touchedKeys(key: string): readonly string[] | undefined;
}

export interface FastPathInput {
  /** The templates, compiled in this thread. */
  templates: CompiledTemplates;
  values: Readonly<Record<string, unknown>>;
  timeoutMs: number;
  /** The stores as they are now, by set name. */
  resources: ReadonlyMap<string, FastPathSet>;
}

export type FastPlan =
  | { kind: 'none' }
  /**
   * `lines`: the server lines of the backends it changed, by backend, where it has them at
   * hand (see firstSetOf). Plain data, as all of a plan is: recordings keep it as JSON.
   */
  | { kind: 'runtime'; config: RenderedConfig; ops: readonly RuntimeOp[]; backends: readonly string[]; lines: Readonly<Record<string, string>> }
  | { kind: 'unsupported'; reason: string };

interface Index {
  /** Lookup → the server sets that made it. */
  byRead: Map<string, number[]>;
  /** Lookups made outside every server set. */
  elsewhere: ReadonlySet<string>;
}

const indexes = new WeakMap<RenderedConfig, Index>();

function indexOf(config: RenderedConfig): Index | undefined {
  const sets = config.serverSets;
  if (!sets) return undefined;
  let index = indexes.get(config);
  if (!index) {
    const byRead = new Map<string, number[]>();
    sets.sets.forEach((set, i) => {
      for (const read of set.reads) {
        let list = byRead.get(read);
        if (!list) byRead.set(read, (list = []));
        list.push(i);
      }
    });
    index = { byRead, elsewhere: new Set(sets.reads) };
    indexes.set(config, index);
  }
  return index;
}

/** A configuration made from `from` with the same haproxy.cfg and server sets (new map entries) shares its index. */
export function shareIndex(from: RenderedConfig, to: RenderedConfig): void {
  const index = indexes.get(from);
  if (index && from.main === to.main && from.serverSets === to.serverSets) indexes.set(to, index);
}

/**
 * The configurations the fast path made lately, by hash. The full render that follows a
 * change usually writes the same bytes: the configuration it validated then becomes the
 * base, and what was found of its twin (parse, hash pieces, index) is taken over rather
 * than found again, at 10k objects some 25 ms on the way of the next change.
 */
const recent = new Map<string, WeakRef<RenderedConfig>>();
const RECENT = 4;

function remember(config: RenderedConfig): void {
  recent.delete(config.hash);
  recent.set(config.hash, new WeakRef(config));
  for (const hash of recent.keys()) {
    if (recent.size <= RECENT) break;
    recent.delete(hash);
  }
}

/** Takes over what was found of a configuration the fast path made with the same bytes. */
function adopt(base: RenderedConfig): void {
  if (indexes.has(base)) return;
  const twin = recent.get(base.hash)?.deref();
  if (!twin || twin === base || twin.hash !== base.hash) return;
  shareParse(twin, base);
  shareDigest(twin, base);
  // The index follows the recorded server sets, which the bytes alone do not fix (the arguments, the lookups).
  const index = indexes.get(twin);
  if (index && twin.serverSets && base.serverSets && sameServerSets(twin.serverSets, base.serverSets)) indexes.set(base, index);
}

function sameServerSets(a: ServerSets, b: ServerSets): boolean {
  if (a.sets.length !== b.sets.length || !sameReads(a.reads, b.reads)) return false;
  return a.sets.every((x, i) => {
    const y = b.sets[i]!;
    return x.backend === y.backend && x.snippet === y.snippet && x.args === y.args && x.start === y.start && x.end === y.end && sameReads(x.reads, y.reads);
  });
}

/**
 * Makes ready what planning on `base` needs, taken over from the fast path's own
 * configuration with the same bytes or found: called when `base` becomes the base, so
 * that the next change does not wait for it (at 10k objects some 20 ms; each backend's
 * first set, which a plan names the new server lines by, some 3 of them).
 */
export function prepareFast(base: RenderedConfig): void {
  runSteps(prepareFastSteps(base));
}

/** prepareFast, yielding between its parts (each some tens of milliseconds at 10k objects). */
export function* prepareFastSteps(base: RenderedConfig): Steps<void> {
  adopt(base);
  indexOf(base);
  yield;
  yield* configOfSteps(base);
  yield;
  prepareDigest(base);
  yield;
  if (base.serverSets) firstSetsOf(base.serverSets);
}

const describe = (change: ChangeRef) => `${change.kind ?? change.resource} ${change.namespace ? `${change.namespace}/` : ''}${change.name ?? ''}`.trim();

export function planFast(base: RenderedConfig, changes: readonly ChangeRef[], input: FastPathInput): FastPlan {
  return runSteps(planFastSteps(base, changes, input));
}

/** How many server sets are rendered between two steps: a few milliseconds' work. */
const SETS_PER_STEP = 16;

/**
 * planFast, yielding between every few backends it renders and plans (steps.ts): a
 * burst that moves hundreds of backends' endpoints at 10k objects plans for hundreds
 * of milliseconds. Between steps the stores may take newer changes; a backend rendered
 * after one has it early, and the plan of that change finds its lines already there.
 */
export function* planFastSteps(base: RenderedConfig, changes: readonly ChangeRef[], input: FastPathInput): Steps<FastPlan> {
  adopt(base);
  const index = indexOf(base);
  if (!index || !base.serverSets) return { kind: 'unsupported', reason: 'the templates declare no server lines (h.servers)' };
  const affected = new Set<number>();
  for (const change of changes) {
    if (change.type !== 'upsert' || change.name === undefined) return { kind: 'unsupported', reason: `${describe(change)}: a ${change.type} takes the full path` };
    const set = input.resources.get(change.resource);
    const keys = set?.touchedKeys(objectKey({ metadata: { name: change.name, ...(change.namespace !== undefined && { namespace: change.namespace }) } }));
    if (!set || !keys) return { kind: 'unsupported', reason: `${describe(change)} is no longer stored` };
    for (const read of [readKey(change.resource, undefined), ...keys.map((k) => readKey(change.resource, k))]) {
      if (index.elsewhere.has(read)) return { kind: 'unsupported', reason: `${describe(change)} is read outside the server lines` };
      for (const i of index.byRead.get(read) ?? []) affected.add(i);
    }
  }
  if (affected.size === 0) return { kind: 'none' };

  const sets = base.serverSets.sets;
  const chosen = [...affected].sort((a, b) => a - b);
  const rendered: { texts: string[]; reads: (readonly string[])[] } = { texts: [], reads: [] };
  for (let from = 0; from < chosen.length; from += SETS_PER_STEP) {
    if (from > 0) yield;
    const part = renderServerSets(input.templates, chosen.slice(from, from + SETS_PER_STEP).map((i) => sets[i]!), { resources: Object.fromEntries(input.resources), values: input.values }, { timeoutMs: input.timeoutMs });
    if (!part.ok) return { kind: 'unsupported', reason: `${part.error.template}${part.error.line !== undefined ? `:${part.error.line}` : ''}: ${part.error.message}` };
    rendered.texts.push(...part.texts);
    rendered.reads.push(...part.reads);
  }
  yield;

  const edits: (TextEdit & { index: number; reads: readonly string[] })[] = [];
  for (const [k, i] of chosen.entries()) {
    const set = sets[i]!;
    const text = rendered.texts[k]!;
    if (text === base.main.slice(set.start, set.end)) continue;
    const other = otherThanServers(text);
    if (other !== undefined) return { kind: 'unsupported', reason: `snippets/${set.snippet} wrote "${other}" for backend ${set.backend}: only server lines can change at runtime` };
    edits.push({ start: set.start, end: set.end, text, index: i, reads: rendered.reads[k]! });
  }
  if (edits.length === 0) return { kind: 'none' };

  const config = sealEdited(base, edits, { sets: moved(sets, edits), reads: base.serverSets.reads });
  shareFirstSets(base.serverSets, config.serverSets!);
  // The sets keep their places: where the edited ones read what they read before, the index holds.
  if (edits.every((e) => sameReads(e.reads, sets[e.index]!.reads))) indexes.set(config, index);
  yield;
  const plan = yield* planEditSteps(base, config, edits);
  if (plan.kind === 'reload') return { kind: 'unsupported', reason: `needs a reload: ${plan.reasons.slice(0, 3).join('; ')}` };
  if (plan.kind === 'none') return { kind: 'none' };
  remember(config);
  // What serverLines() would read of the new configuration, without reading it: that would copy the spliced text whole.
  const lines = Object.fromEntries(edits.filter((e) => firstSetOf(base.serverSets!, sets[e.index]!.backend) === e.index).map((e) => [sets[e.index]!.backend, e.text]));
  return { kind: 'runtime', config, ops: plan.ops, backends: edits.map((e) => sets[e.index]!.backend), lines };
}

/**
 * Plans, and throws away, the removal of the last server line of the first server set
 * that writes one: the code that splices, seals and plans an edit is compiled, and the
 * facts planning needs of `base` are found, before a real change waits for them (at
 * 10k objects the first endpoint change after a start planned in 35 ms, the next ones
 * in 3). Nothing is kept for later plans to find. Returns the backend and what the
 * plan was, or undefined when no set writes a server line.
 */
export function rehearseServerEdit(base: RenderedConfig): { backend: string; plan: FastPlan['kind'] } | undefined {
  const sets = base.serverSets?.sets ?? [];
  for (const [index, set] of sets.entries()) {
    const text = base.main.slice(set.start, set.end);
    const last = lastServerLine(text);
    if (!last) continue;
    const edit = { start: set.start, end: set.end, text: text.slice(0, last.start) + text.slice(last.end), index, reads: set.reads };
    const config = sealEdited(base, [edit], { sets: moved(sets, [edit]), reads: base.serverSets!.reads });
    const plan = planEdits(base, config, [edit]);
    return { backend: set.backend, plan: plan.kind === 'reload' ? 'unsupported' : plan.kind };
  }
  return undefined;
}

/** Where the last `server` line of a snippet's text is, its line break included. */
function lastServerLine(text: string): { start: number; end: number } | undefined {
  let found: { start: number; end: number } | undefined;
  let start = 0;
  while (start < text.length) {
    const next = text.indexOf('\n', start);
    const end = next < 0 ? text.length : next + 1;
    const tokens = tokenize(text.slice(start, end).replace(/\r?\n$/, ''));
    if (!('error' in tokens) && tokens.args[0] === 'server') found = { start, end };
    start = end;
  }
  return found;
}

const sameReads = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((r, i) => r === b[i]);

/** The first line that is neither a server line, a comment nor blank, if any. */
function otherThanServers(text: string): string | undefined {
  for (const raw of text.split('\n')) {
    const tokens = tokenize(raw.replace(/\r$/, ''));
    if ('error' in tokens) return raw.trim();
    if (tokens.args.length > 0 && tokens.args[0] !== 'server') return tokens.text;
  }
  return undefined;
}

/** Every server set where it stands after the edits (in text order, as the sets are). */
function moved(sets: readonly ServerSet[], edits: readonly (TextEdit & { index: number; reads: readonly string[] })[]): ServerSet[] {
  const byIndex = new Map(edits.map((e) => [e.index, e]));
  let delta = 0;
  return sets.map((set, i) => {
    const edit = byIndex.get(i);
    const start = set.start + delta;
    if (!edit) return delta === 0 ? set : { ...set, start, end: set.end + delta };
    delta += edit.text.length - (set.end - set.start);
    return { ...set, start, end: start + edit.text.length, reads: edit.reads };
  });
}
