/**
 * The deployment plan: what a running haproxy needs to go from one rendered
 * configuration to the next, i.e. nothing, runtime API operations, or a reload.
 * The deployer writes the new files in every case, so that a later reload or
 * restart finds them; the plan only says what the running process needs.
 *
 * Runtime operations are planned only where they leave the process as a fresh
 * start on the new files would be (same servers with the same address, port,
 * weight, state and settings; same map entries in the same order), which the
 * integration tests check against haproxy 2.6:
 * - servers added to or removed from a backend (or listen section), or given a
 *   new address/port, weight or state, when its other lines are unchanged;
 * - entries added, changed or deleted in a map file present on both sides;
 * - certificates renewed, and crt-list lines added or removed with their
 *   certificates, where haproxy then serves what a fresh start would (plan-certs.ts).
 * Everything else reloads, with reasons naming what changed.
 *
 * How templates should write backends so that endpoint changes never reload:
 * - one plain `server <name> <ip>:<port> [settings]` line per endpoint; no
 *   `server-template` slots, so there is no slot limit;
 * - a dynamic algorithm: roundrobin (the default), leastconn, random, or
 *   hashing with `hash-type consistent`; `first` only with an explicit `id` on
 *   every server, since it orders servers by id;
 * - IP literals, not names: an added server never resolves names;
 * - only settings `add server` accepts (RUNTIME_SERVER_KEYWORDS), with files
 *   (crt, ca-file, crl-file) already loaded by the running configuration.
 *   `default-server` lines are fine: added servers get them merged in, since
 *   `add server` ignores them; but editing one changes every server, a reload;
 * - state: `disabled` means maintenance. Drain is a trailing comment holding
 *   the word `haprx:drain` on the server line: haproxy 2.6 has no setting to
 *   start a server drained, so a reload plan lists the drains to apply to the
 *   new process in `after`. `weight 0` is not drain: it is a weight, which a
 *   fresh start reproduces, while drain keeps the weight and still admits
 *   persistent sessions.
 * - maps: append new keys at the end and keep the order of the others, so
 *   that entries are updated one by one; any other change replaces the whole
 *   map atomically, which is also fine.
 */
import type { ConfigLine, HaproxyConfig, Section } from './config.ts';
import { type TextEdit, editConfig, parseConfigSteps } from './config.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { compareStrings, diffLines, lineKey, sameSectionLayout, sectionLabel } from './plan-config.ts';
import { planMapSteps } from './plan-maps.ts';
import { DRAIN_MARKER, carryFacts, collectServers, planServers, runningFacts } from './plan-servers.ts';
import { boundCrtLists } from './crt-list.ts';
import { planCerts } from './plan-certs.ts';
import type { Plan, RuntimeOp, ServerAddOp, ServerDelOp, ServerRef, ServerStateOp } from './plan-types.ts';
import { type Steps, runSteps } from '../steps.ts';

export type * from './plan-types.ts';
export type { MapEntry } from './map-file.ts';
export { DRAIN_MARKER } from './plan-servers.ts';
export { RUNTIME_SERVER_KEYWORDS, SERVER_KEYWORDS } from './plan-server-options.ts';

const SERVER_SECTIONS: ReadonlySet<string> = new Set(['backend', 'listen']);

/**
 * Each render's parsed configuration (as the plan reads it), kept as long as the render is: the configuration
 * an instance runs is split once, and its sections tokenised once, however many plans
 * start from it.
 */
const parsed = new WeakMap<RenderedConfig, HaproxyConfig>();

export function configOf(rendered: RenderedConfig): HaproxyConfig {
  return runSteps(configOfSteps(rendered));
}

/** configOf, parsing in steps (parseConfigSteps) when the configuration was not parsed yet. */
export function* configOfSteps(rendered: RenderedConfig): Steps<HaproxyConfig> {
  let config = parsed.get(rendered);
  if (!config) {
    const same = sameMain.get(rendered);
    config = same ? yield* configOfSteps(same) : yield* parseConfigSteps(rendered.main);
    parsed.set(rendered, config);
    sameMain.delete(rendered);
  }
  return config;
}

/** Configurations made from another with the same haproxy.cfg: they share its parse, made when first needed. */
const sameMain = new WeakMap<RenderedConfig, RenderedConfig>();

/** A configuration made from `from` with the same haproxy.cfg (the fast path's map entries) shares its parse. */
export function shareParse(from: RenderedConfig, to: RenderedConfig): void {
  if (from.main !== to.main) return;
  const done = parsed.get(from);
  if (done) parsed.set(to, done);
  // Linked to the first of them, so that a run of derived configurations holds no chain.
  else sameMain.set(to, sameMain.get(from) ?? from);
}

function auxReasons(what: string, before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>): string[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort(compareStrings);
  const reasons: string[] = [];
  for (const name of names) {
    const a = before[name];
    const b = after[name];
    if (a === undefined) reasons.push(`${what} ${name} is new`);
    else if (b === undefined) reasons.push(`${what} ${name} was removed`);
    else if (a !== b) reasons.push(`${what} ${name} changed`);
  }
  return reasons;
}

/** Each section's key and where each key stands, per parsed configuration: found once, however many plans read it. */
interface SectionIndex {
  keys: readonly string[];
  at: ReadonlyMap<string, number>;
}

const sectionIndexes = new WeakMap<HaproxyConfig, SectionIndex>();

/** Sections found between two steps while keying them: a few milliseconds' work. */
const KEYS_PER_STEP = 2_000;

/**
 * Pairs sections by type, name and occurrence (anonymous defaults sections may repeat).
 * At 10k backends keying both configurations took some 20 ms of a plan that held the
 * event loop for 60-70 ms at once; the configuration a plan starts from was keyed when
 * it was the new one, so each plan keys one configuration, in steps.
 */
function* sectionIndexSteps(config: HaproxyConfig): Steps<SectionIndex> {
  const known = sectionIndexes.get(config);
  if (known) return known;
  const seen = new Map<string, number>();
  const keys: string[] = [];
  const at = new Map<string, number>();
  for (const [i, s] of config.sections.entries()) {
    if (i > 0 && i % KEYS_PER_STEP === 0) yield;
    const key = `${s.type} ${s.name}`;
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    const keyed = n === 0 ? key : `${key}#${n}`;
    keys.push(keyed);
    at.set(keyed, i);
  }
  const index = { keys, at };
  sectionIndexes.set(config, index);
  return index;
}

const byServer = (a: ServerRef, b: ServerRef) => compareStrings(a.backend, b.backend) || compareStrings(a.server, b.server);

/** Servers marked for draining, which no configuration line can express. */
function drainOps(config: HaproxyConfig): ServerStateOp[] {
  const ops: ServerStateOp[] = [];
  for (const section of config.sections) {
    // Only sections that mention the marker are read.
    if (!SERVER_SECTIONS.has(section.type) || !section.text.includes(DRAIN_MARKER)) continue;
    for (const s of collectServers(config, section)) {
      if (s.state === 'drain') ops.push({ kind: 'server-state', backend: section.name, server: s.name, state: 'drain' });
    }
  }
  return ops.sort(byServer);
}

/**
 * Plans in time linear in the size of the two configurations, and reads (tokenises)
 * only the sections whose text differs: a change of one backend's servers in a
 * configuration of ten thousand backends compares texts and reads that one backend.
 */
export function planDeployment(previous: RenderedConfig | undefined, next: RenderedConfig): Plan {
  return runSteps(planDeploymentSteps(previous, next));
}

/**
 * planDeployment, yielding between its parts (steps.ts): at 10k backends a plan that
 * reads two map files of 10k entries (a full render after the fast path appended an
 * entry) took 105-138 ms in one piece.
 */
export function* planDeploymentSteps(previous: RenderedConfig | undefined, next: RenderedConfig): Steps<Plan> {
  const nextConfig = yield* configOfSteps(next);
  if (previous === undefined) return { kind: 'reload', reasons: ['nothing is deployed yet'], after: drainOps(nextConfig) };
  if (previous.hash === next.hash) return { kind: 'none' };

  const certs = planCerts(previous.certs, next.certs, () => boundCrtLists(nextConfig));
  const reasons: string[] = [...certs.reasons, ...auxReasons('file', previous.files, next.files)];
  // What a file says on an instance depends on whether its references are rewritten.
  if ((previous.referencing ?? []).join('\n') !== (next.referencing ?? []).join('\n')) reasons.push('the files marked as naming other files changed');
  for (const name of Object.keys({ ...previous.maps, ...next.maps }).sort(compareStrings)) {
    if (previous.maps[name] === undefined) reasons.push(`map ${name} is new`);
    else if (next.maps[name] === undefined) reasons.push(`map ${name} was removed`);
  }

  yield;
  const prevConfig = yield* configOfSteps(previous);
  yield;
  const prev = yield* sectionIndexSteps(prevConfig);
  yield;
  const nextIndex = yield* sectionIndexSteps(nextConfig);
  yield;
  // Sections with the same header and text are the same: only the others are read.
  const changed: { key: string; was: Section; is: Section }[] = [];
  const added: string[] = [];
  for (const [i, key] of nextIndex.keys.entries()) {
    if (i > 0 && i % KEYS_PER_STEP === 0) yield;
    const was = prev.at.get(key);
    if (was === undefined) {
      added.push(`${sectionLabel(nextConfig.sections[i]!)} is new`);
      continue;
    }
    const before = prevConfig.sections[was]!;
    const is = nextConfig.sections[i]!;
    if (before.text !== is.text || before.header.text !== is.header.text) changed.push({ key, was: before, is });
  }
  const removed: string[] = [];
  // The sections both have stand in the same order when, taken in the previous order, their new places only grow:
  // order decides which defaults section a proxy inherits from.
  let sameOrder = true;
  let last = -1;
  for (const [i, key] of prev.keys.entries()) {
    if (i > 0 && i % KEYS_PER_STEP === 0) yield;
    const j = nextIndex.at.get(key);
    if (j === undefined) {
      removed.push(`${sectionLabel(prevConfig.sections[i]!)} was removed`);
      continue;
    }
    if (j < last) sameOrder = false;
    last = j;
  }
  for (const [config, which, sections] of [[prevConfig, 'previous', changed.map((c) => c.was)], [nextConfig, 'new', changed.map((c) => c.is)]] as const) {
    const errors = [...config.orphanErrors, ...sections.flatMap((s) => s.errors)].sort((a, b) => a.line - b.line);
    for (const e of errors) reasons.push(`the ${which} haproxy.cfg cannot be read at line ${e.line}: ${e.message}`);
  }
  reasons.push(...diffLines('lines before the first section', prevConfig.orphans, nextConfig.orphans));
  reasons.push(...added, ...removed);
  if (!sameOrder) reasons.push('the order of sections changed');

  yield;
  const sections = yield* planSections(changed, prevConfig, nextConfig);
  reasons.push(...sections.reasons);
  // A reload is certain already: how the changed maps would be updated at runtime, and
  // why one could not be, is not worked out (at 10k backends, parsing and comparing the
  // map files is most of a plan, and of the garbage it leaves).
  if (reasons.length > 0) return { kind: 'reload', reasons, after: drainOps(nextConfig) };

  const mapOps: RuntimeOp[] = [];
  for (const name of Object.keys(next.maps).sort(compareStrings)) {
    const before = previous.maps[name];
    const content = next.maps[name]!;
    if (before === undefined || before === content) continue;
    const map = yield* planMapSteps(name, before, content, nextConfig);
    reasons.push(...map.reasons);
    mapOps.push(...map.ops);
  }

  if (reasons.length > 0) return { kind: 'reload', reasons, after: drainOps(nextConfig) };
  const ops = [...certs.early, ...sections.early, ...mapOps, ...sections.late, ...certs.late];
  return ops.length === 0 ? { kind: 'none' } : { kind: 'runtime', ops };
}

/** How many changed sections are planned between two steps: a few milliseconds' work at 10k backends. */
const SECTIONS_PER_STEP = 16;

/**
 * The changes between pairs of sections with the same key, as runtime operations in
 * the order they must run (`early`: server deletions that free an id, additions and
 * changes, to go before map entries; `late`: removals), or the reasons they need a reload.
 */
function* planSections(pairs: readonly { was: Section; is: Section }[], prevConfig: HaproxyConfig, nextConfig: HaproxyConfig): Steps<{ reasons: string[]; early: RuntimeOp[]; late: RuntimeOp[] }> {
  const reasons: string[] = [];
  const running = once(() => runningFacts(prevConfig));
  const earlyDels: ServerDelOp[] = [];
  const adds: ServerAddOp[] = [];
  const changes: (RuntimeOp & ServerRef)[][] = [];
  const dels: ServerDelOp[] = [];
  for (const [i, { was, is }] of pairs.entries()) {
    if (i > 0 && i % SECTIONS_PER_STEP === 0) yield;
    const label = sectionLabel(is);
    if (lineKey(was.header) !== lineKey(is.header)) {
      reasons.push(`${label}: header "${was.header.text}" changed to "${is.header.text}"`);
      continue;
    }
    if (!SERVER_SECTIONS.has(is.type)) {
      reasons.push(...diffLines(label, was.lines, is.lines));
      continue;
    }
    const notServer = (l: ConfigLine) => l.keyword !== 'server';
    const others = diffLines(label, was.lines.filter(notServer), is.lines.filter(notServer));
    if (others.length > 0) {
      reasons.push(...others);
      continue;
    }
    const servers = planServers(is, collectServers(prevConfig, was), collectServers(nextConfig, is), nextConfig, running);
    reasons.push(...servers.reasons);
    earlyDels.push(...servers.earlyDels);
    adds.push(...servers.adds);
    changes.push(...servers.changes);
    dels.push(...servers.dels);
  }
  // New capacity first (after deletes that free an id it takes), then changes and routing, removals last.
  earlyDels.sort(byServer);
  adds.sort(byServer);
  changes.sort((a, b) => byServer(a[0]!, b[0]!));
  dels.sort(byServer);
  return { reasons, early: [...earlyDels, ...adds, ...changes.flat()], late: dels };
}

/**
 * The plan from `previous` to the render made from it by `edits` inside section
 * bodies (the fast path's server lines), reading only the sections the edits touch.
 * The parse of `next` is derived from `previous`'s and kept, so later plans from
 * `next` do not split it again either.
 */
export function planEdits(previous: RenderedConfig, next: RenderedConfig, edits: readonly TextEdit[]): Plan {
  return runSteps(planEditSteps(previous, next, edits));
}

/** planEdits, yielding between every few sections it plans (steps.ts). */
export function* planEditSteps(previous: RenderedConfig, next: RenderedConfig, edits: readonly TextEdit[]): Steps<Plan> {
  const prevConfig = configOf(previous);
  const nextConfig = editConfig(prevConfig, edits);
  sameSectionLayout(nextConfig, prevConfig);
  parsed.set(next, nextConfig);
  const touched = new Set<number>();
  for (const edit of edits) touched.add(sectionAt(prevConfig, edit.start));
  const pairs = [...touched].sort((a, b) => a - b).map((i) => ({ was: prevConfig.sections[i]!, is: nextConfig.sections[i]! }));
  const { reasons, early, late } = yield* planSections(pairs, prevConfig, nextConfig);
  // The next plan starts from `next`: what it needs to know of the whole configuration follows from these edits.
  carryFacts(prevConfig, nextConfig, pairs);
  if (reasons.length > 0) return { kind: 'reload', reasons, after: [] };
  const ops = [...early, ...late];
  return ops.length === 0 ? { kind: 'none' } : { kind: 'runtime', ops };
}

/** The index of the section whose body holds `offset` (sections are in text order). */
function sectionAt(config: HaproxyConfig, offset: number): number {
  let lo = 0;
  let hi = config.sections.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (config.sections[mid]!.offset <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function once<T>(compute: () => T): () => T {
  let value: { v: T } | undefined;
  return () => (value ??= { v: compute() }).v;
}
