/** The map part of the deployment plan: one map file, before and after. */
import { type ConfigLine, type HaproxyConfig, tokenize } from './config.ts';
import { parseMapFile } from './map-file.ts';
import type { MapEntry } from './map-file.ts';
import type { RuntimeOp } from './plan-types.ts';
import type { Steps } from '../steps.ts';

/** Map converters and the map-editing actions; their first argument names the map file. */
const MAP_USE = /(?<![\w-])(set-map|del-map|map(?:_\w+)?)\(\s*([^,)\s]+)/g;
/**
 * Converters whose lookups haproxy indexes in a tree: exact strings, and the longest
 * matching prefix for `beg` (case-sensitive, as converters are) and for IP networks.
 * Where a map is read only through these, the order of its entries decides nothing.
 */
const TREE_INDEXED = new Set(['map', 'map_str', 'map_beg', 'map_ip']);

export interface MapReferences {
  /** The distinct spellings the configuration loads the file under as a map. */
  refs: string[];
  /** Where the file is referenced some other way (e.g. `-f`), which runtime updates do not cover. */
  other: string[];
  /** Every lookup is tree-indexed: an entry added at the end matches as it would in its place in the file. */
  orderFree: boolean;
}

/**
 * How a configuration refers to `maps/<name>`. haproxy 2.6 names a map after
 * the path exactly as written where it is loaded (`maps/a.map` and
 * `./maps/a.map` are two separate maps, whatever `default-path` says), so that
 * spelling is what runtime commands must use.
 */
export function mapReferences(config: HaproxyConfig, name: string): MapReferences {
  const suffix = `maps/${name}`;
  // Only sections that name the file are read.
  return referencesIn(config.sections.filter((s) => s.text.includes(suffix)).flatMap((s) => s.lines), suffix);
}

/**
 * The same, read from haproxy.cfg's text without parsing it whole: only the lines that
 * name the file are split into words. A line that cannot be split counts as a
 * reference of another kind.
 */
export function mapReferencesInText(main: string, name: string): MapReferences {
  const suffix = `maps/${name}`;
  const lines: Pick<ConfigLine, 'args' | 'text'>[] = [];
  for (let at = main.indexOf(suffix); at >= 0; ) {
    const start = main.lastIndexOf('\n', at) + 1;
    const newline = main.indexOf('\n', at);
    const end = newline < 0 ? main.length : newline;
    const raw = main.slice(start, end).replace(/\r$/, '');
    const words = tokenize(raw);
    lines.push('error' in words ? { args: [suffix], text: raw.trim() } : words);
    at = newline < 0 ? -1 : main.indexOf(suffix, end);
  }
  return referencesIn(lines, suffix);
}

function referencesIn(lines: readonly Pick<ConfigLine, 'args' | 'text'>[], suffix: string): MapReferences {
  const isOurs = (path: string) => path === suffix || path.endsWith(`/${suffix}`);
  const refs = new Set<string>();
  const other = new Set<string>();
  let orderFree = true;
  for (const line of lines) {
    for (const word of line.args) {
      if (!word.includes(suffix)) continue;
      let rest = word;
      for (const m of word.matchAll(MAP_USE)) {
        if (!isOurs(m[2]!)) continue;
        refs.add(m[2]!);
        if (!TREE_INDEXED.has(m[1]!)) orderFree = false;
        rest = rest.replace(m[0], '');
      }
      if (rest.includes(suffix)) other.add(line.text);
    }
  }
  return { refs: [...refs].sort(), other: [...other], orderFree };
}

const sameEntries = (a: MapEntry[], b: MapEntry[]) =>
  a.length === b.length && a.every((e, i) => e.key === b[i]!.key && e.value === b[i]!.value);

const hasDuplicates = (entries: MapEntry[]) => new Set(entries.map((e) => e.key)).size !== entries.length;

export interface MapPlan {
  reasons: string[];
  ops: RuntimeOp[];
}

/**
 * Entry operations when they keep haproxy's order equal to the file's (an
 * added entry always lands last, `set` keeps its place), or when the order
 * decides nothing (every lookup is tree-indexed); otherwise one atomic
 * replacement. Duplicate keys always take the replacement: `set` and `del`
 * act on every entry with the key. Yields after it reads each file (a map of
 * 10k entries: some 10 ms each).
 */
export function* planMapSteps(name: string, before: string, after: string, config: HaproxyConfig): Steps<MapPlan> {
  const old = parseMapFile(before);
  yield;
  const next = parseMapFile(after);
  yield;
  if (sameEntries(old, next)) return { reasons: [], ops: [] };
  const { refs, other, orderFree } = mapReferences(config, name);
  const fail = (reason: string): MapPlan => ({ reasons: [`map ${name} changed, but ${reason}`], ops: [] });
  if (other.length > 0) return fail(`it is also loaded other than as a map (line "${other[0]}")`);
  // Not loaded by haproxy at all: writing the file is all there is to do.
  if (refs.length === 0) return { reasons: [], ops: [] };
  if (refs.length > 1) return fail(`haproxy loads it as several maps (${refs.join(', ')})`);
  const target = { map: name, ref: refs[0]! };

  const perEntry = yield* entryOps(old, next, orderFree);
  if (perEntry) return { reasons: [], ops: perEntry.map((op) => ({ ...target, ...op })) };
  const empty = next.find((e) => e.value === '');
  if (empty) return fail(`line ${empty.line} (key "${empty.key}") has no value, which the runtime API cannot set`);
  return { reasons: [], ops: [{ kind: 'map-replace', ...target, entries: next }] };
}

type EntryOp = { kind: 'map-add'; key: string; value: string } | { kind: 'map-set'; key: string; value: string } | { kind: 'map-del'; key: string };

/** Yields between its passes over the entries: at 20k entries each is some milliseconds. */
function* entryOps(old: MapEntry[], next: MapEntry[], orderFree: boolean): Steps<EntryOp[] | undefined> {
  if (hasDuplicates(old)) return undefined;
  yield;
  if (hasDuplicates(next)) return undefined;
  yield;
  const oldValues = new Map(old.map((e) => [e.key, e.value]));
  const nextKeys = new Set(next.map((e) => e.key));
  yield;
  if (!orderFree) {
    const keptOld = old.filter((e) => nextKeys.has(e.key)).map((e) => e.key);
    const keptNext = next.filter((e) => oldValues.has(e.key)).map((e) => e.key);
    if (keptOld.some((k, i) => k !== keptNext[i])) return undefined;
    const lastKept = next.findLastIndex((e) => oldValues.has(e.key));
    if (lastKept > 0 && next.slice(0, lastKept).some((e) => !oldValues.has(e.key))) return undefined;
    yield;
  }

  const ops: EntryOp[] = [];
  for (const e of old) if (!nextKeys.has(e.key)) ops.push({ kind: 'map-del', key: e.key });
  for (const e of next) {
    const was = oldValues.get(e.key);
    if (was === undefined) ops.push({ kind: 'map-add', key: e.key, value: e.value });
    else if (was !== e.value) ops.push({ kind: 'map-set', key: e.key, value: e.value });
  }
  // `set`/`del` read a key starting with `#` as an entry reference; the CLI cannot send an empty value.
  const unaddressable = ops.some((op) => (op.kind !== 'map-add' && op.key.startsWith('#')) || ('value' in op && op.value === ''));
  return unaddressable ? undefined : ops;
}
