import { createHash } from 'node:crypto';
import { flatText } from '../flat-text.ts';
import type { MapDeclarations } from './map-entries.ts';

/**
 * Everything one render produces. Auxiliary files are keyed by file name (no
 * directories); the configuration references them at `maps/<name>`,
 * `general/<name>` and `ssl/<name>` relative to the directory of haproxy.cfg,
 * which is where every target and the validator put them.
 */
export interface RenderedFiles {
  /** haproxy.cfg */
  main: string;
  maps: Readonly<Record<string, string>>;
  files: Readonly<Record<string, string>>;
  certs: Readonly<Record<string, string>>;
  /**
   * Auxiliary files (as `general/<name>`, …) whose content names other rendered
   * files, as marked by their templates (crt-lists are found without a mark).
   */
  referencing?: readonly string[];
}

export interface RenderedConfig extends RenderedFiles {
  /** sha256 over every file, in a fixed order: equal hashes mean byte-identical output. */
  hash: string;
  /** What h.servers recorded, for the fast path; not part of the hash (it is derived from the files). */
  serverSets?: ServerSets;
  /** What h.mapEntries recorded, for the fast path; not part of the hash either. */
  mapEntries?: MapDeclarations;
}

/** One h.servers call whose output stands exactly once in haproxy.cfg. */
export interface ServerSet {
  backend: string;
  snippet: string;
  /** Its arguments as JSON. */
  args: string;
  /** Where its output stands in haproxy.cfg: [start, end) in UTF-16 code units. */
  start: number;
  end: number;
  /** The lookups its snippet made: `set\u0001key` (NUL-joined index key), or `set\u0001` for the whole set. */
  reads: readonly string[];
}

export interface ServerSets {
  sets: readonly ServerSet[];
  /** Lookups made anywhere else in the render: a change they read cannot take the fast path. */
  reads: readonly string[];
}

/** Per recorded server sets: each backend's first set, by index. */
const firstSets = new WeakMap<ServerSets, Map<string, number>>();

/** The index of the first server set a render recorded for a backend: the one serverLines() reads. */
export function firstSetOf(serverSets: ServerSets, backend: string): number | undefined {
  return firstSetsOf(serverSets).get(backend);
}

/** Each backend's first set, found once per recorded server sets (at 10k backends some 3 ms). */
export function firstSetsOf(serverSets: ServerSets): ReadonlyMap<string, number> {
  let byBackend = firstSets.get(serverSets);
  if (!byBackend) {
    byBackend = new Map();
    for (const [i, s] of serverSets.sets.entries()) if (!byBackend.has(s.backend)) byBackend.set(s.backend, i);
    firstSets.set(serverSets, byBackend);
  }
  return byBackend;
}

/** Sets moved in place (same backends, same order) keep what firstSetOf found. */
export function shareFirstSets(from: ServerSets, to: ServerSets): void {
  const known = firstSets.get(from);
  if (known) firstSets.set(to, known);
}

/**
 * The server lines a render wrote for a backend through h.servers, if it recorded them.
 * A copy, not a slice of the configuration: V8 keeps the whole text a slice was cut
 * from alive, and these lines are kept across many configurations.
 */
export function serverLines(config: RenderedConfig, backend: string): string | undefined {
  if (!config.serverSets) return undefined;
  const i = firstSetOf(config.serverSets, backend);
  const set = i === undefined ? undefined : config.serverSets.sets[i]!;
  return set && flatText(config.main.slice(set.start, set.end));
}

/** How a lookup is recorded in ServerSet.reads and ServerSets.reads. */
export function readKey(set: string, key: string | undefined): string {
  return `${set}\u0001${key ?? ''}`;
}

export const AUX_DIRS = { maps: 'maps', files: 'general', certs: 'ssl' } as const;
export type AuxKind = keyof typeof AUX_DIRS;
export const AUX_KINDS: readonly AuxKind[] = ['maps', 'files', 'certs'];

const compareCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Name-sorted copy, so that iteration order never depends on insertion order. */
function sortedRecord(record: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compareCodeUnits(a, b)));
}

export function sealRendered(files: RenderedFiles, serverSets?: ServerSets): RenderedConfig {
  const referencing = [...new Set(files.referencing ?? [])].sort(compareCodeUnits);
  const sealed = {
    main: files.main,
    maps: sortedRecord(files.maps),
    files: sortedRecord(files.files),
    certs: sortedRecord(files.certs),
    ...(referencing.length > 0 && { referencing }),
  };
  const digest = { main: mainDigest(sealed.main), aux: auxDigest(sealed) };
  const config: RenderedConfig = { ...sealed, hash: topHash(digest), ...(serverSets && { serverSets }) };
  digests.set(config, digest);
  return config;
}

/** A replacement of `[start, end)` of haproxy.cfg by `text` (offsets in UTF-16 code units). */
export interface MainEdit {
  start: number;
  end: number;
  text: string;
}

/**
 * `base` with these edits of haproxy.cfg (sorted, not overlapping) and nothing else
 * changed, sealed. Its hash is the one sealRendered gives the same files, found by
 * hashing again only the pieces of haproxy.cfg the edits fall in, when the edits leave
 * every piece boundary where it was (they replace whole lines, none of them starting a
 * section); otherwise the whole text is hashed.
 */
export function sealEdited(base: RenderedConfig, edits: readonly MainEdit[], serverSets?: ServerSets): RenderedConfig {
  const main = splice(base.main, edits);
  const files = { main, maps: base.maps, files: base.files, certs: base.certs, ...(base.referencing && { referencing: base.referencing }) };
  const before = digestOf(base);
  const pieces = editedPieces(base.main, before.main, main, edits);
  const digest = { main: pieces ?? mainDigest(main), aux: before.aux };
  const config: RenderedConfig = { ...files, hash: topHash(digest), ...(serverSets && { serverSets }) };
  digests.set(config, digest);
  return config;
}

/** `base` with other map files and haproxy.cfg as it was, sealed: only the auxiliary files are hashed again. */
export function sealMaps(base: RenderedConfig, maps: Readonly<Record<string, string>>): RenderedConfig {
  const files = { main: base.main, maps: sortedRecord(maps), files: base.files, certs: base.certs, ...(base.referencing && { referencing: base.referencing }) };
  const digest = { main: digestOf(base).main, aux: auxDigest(files) };
  const config: RenderedConfig = { ...files, hash: topHash(digest), ...(base.serverSets && { serverSets: base.serverSets }) };
  digests.set(config, digest);
  return config;
}

/**
 * How the hash is made. haproxy.cfg is cut into pieces before every 64th line that
 * starts with a letter (a section header, in any configuration written with indented
 * section bodies), each piece hashed on its own: a change to a few server lines hashes
 * again one piece of a few kilobytes, not megabytes. The cut points depend on the text
 * alone, so equal texts hash alike however they were made. The auxiliary files are
 * hashed together, length-prefixed, so that no two different file sets hash alike.
 */
interface Digest {
  main: { starts: readonly number[]; digests: readonly Buffer[] };
  aux: Buffer;
}

const PIECE_HEADERS = 64;
const HEADER_AFTER_NEWLINE = /\n[A-Za-z]/g;
const STARTS_A_LINE_WITH_A_LETTER = /(?:^|\n)[A-Za-z]/;

const digests = new WeakMap<RenderedConfig, Digest>();

/** What was found of `from` serves `to` as well: the same hash, the same bytes. */
export function shareDigest(from: RenderedConfig, to: RenderedConfig): void {
  const digest = digests.get(from);
  if (digest && from.hash === to.hash && !digests.has(to)) digests.set(to, digest);
}

/**
 * Whether the digest of a configuration is at hand: a configuration the fast path made
 * must carry it, or planning the next change on it hashes the whole of haproxy.cfg
 * again (some 10 ms at 10k objects).
 */
export function knowsDigest(config: RenderedConfig): boolean {
  return digests.has(config);
}

/** Finds the digest of a configuration sealed elsewhere now, rather than at its first edit. */
export function prepareDigest(config: RenderedConfig): void {
  digestOf(config);
}

/** The digest of a configuration sealed elsewhere (another thread) is found again once. */
function digestOf(config: RenderedConfig): Digest {
  let digest = digests.get(config);
  if (!digest) {
    digest = { main: mainDigest(config.main), aux: auxDigest(config) };
    digests.set(config, digest);
  }
  return digest;
}

/**
 * Where the pieces of haproxy.cfg start: at 0, and before every 64th line that starts
 * with a letter. Work on the whole text that can be kept piece by piece cuts it here
 * (the hash; the scan for file references, haproxy/aux-refs.ts).
 */
export function pieceStarts(main: string): number[] {
  const starts = [0];
  let headers = /^[A-Za-z]/.test(main) ? 1 : 0;
  HEADER_AFTER_NEWLINE.lastIndex = 0;
  for (let m = HEADER_AFTER_NEWLINE.exec(main); m !== null; m = HEADER_AFTER_NEWLINE.exec(main)) {
    if (headers > 0 && headers % PIECE_HEADERS === 0) starts.push(m.index + 1);
    headers++;
  }
  return starts;
}

function mainDigest(main: string): Digest['main'] {
  const starts = pieceStarts(main);
  return { starts, digests: starts.map((start, i) => sha256(main.slice(start, starts[i + 1] ?? main.length))) };
}

/**
 * The pieces of `main` (which is `baseMain` with `edits`) from those of `baseMain`, or
 * undefined when an edit could move a cut point: it does not replace whole lines, or
 * a line it removes or writes starts with a letter.
 */
function editedPieces(baseMain: string, base: Digest['main'], main: string, edits: readonly MainEdit[]): Digest['main'] | undefined {
  const lineStart = (at: number) => at === 0 || baseMain[at - 1] === '\n';
  /** Each edit's piece: an insertion just before a cut point ends the piece before it. */
  const pieceOf: number[] = [];
  for (const edit of edits) {
    if (!lineStart(edit.start) || !lineStart(edit.end) || (edit.text !== '' && !edit.text.endsWith('\n'))) return undefined;
    if (STARTS_A_LINE_WITH_A_LETTER.test(edit.text) || STARTS_A_LINE_WITH_A_LETTER.test(baseMain.slice(edit.start, edit.end))) return undefined;
    pieceOf.push(Math.max(0, lastBefore(base.starts, edit.start)));
  }
  const starts: number[] = [];
  const affected = new Set(pieceOf);
  let delta = 0;
  let e = 0;
  base.starts.forEach((start, i) => {
    // The edits of the pieces before this one move its start.
    for (; e < edits.length && pieceOf[e]! < i; e++) delta += edits[e]!.text.length - (edits[e]!.end - edits[e]!.start);
    starts.push(start + delta);
  });
  // An edited piece is hashed as made from the base's text: `main` is left as it was
  // spliced, to be made one flat string only by whoever reads it whole.
  const digests = base.digests.map((d, i) => {
    if (!affected.has(i)) return d;
    const from = base.starts[i]!;
    const own = edits.filter((_, k) => pieceOf[k] === i).map((edit) => ({ ...edit, start: edit.start - from, end: edit.end - from }));
    return sha256(splice(baseMain.slice(from, base.starts[i + 1] ?? baseMain.length), own));
  });
  return { starts, digests };
}

/** The index of the last element of the ascending `list` below `value`, or -1. */
function lastBefore(list: readonly number[], value: number): number {
  let lo = -1;
  let hi = list.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (list[mid]! < value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function auxDigest(files: RenderedFiles): Buffer {
  const h = createHash('sha256');
  const part = (label: string, content: string) => {
    h.update(`${label}\u0000${Buffer.byteLength(content)}\u0000`);
    h.update(content);
  };
  for (const kind of AUX_KINDS) for (const [name, content] of Object.entries(files[kind])) part(`${kind}/${name}`, content);
  if (files.referencing && files.referencing.length > 0) part('referencing', files.referencing.join('\n'));
  return h.digest();
}

function topHash(digest: Digest): string {
  const h = createHash('sha256');
  h.update(`main\u0000${digest.main.digests.length}\u0000`);
  for (const d of digest.main.digests) h.update(d);
  h.update(digest.aux);
  return h.digest('hex');
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** Whether two renders hold the same auxiliary files of these kinds, and mark the same ones as naming other files. */
export function sameAux(a: RenderedFiles, b: RenderedFiles, kinds: readonly AuxKind[]): boolean {
  for (const kind of kinds) {
    const names = Object.keys(a[kind]);
    if (names.length !== Object.keys(b[kind]).length || names.some((name) => a[kind][name] !== b[kind][name])) return false;
  }
  return (a.referencing ?? []).join('\n') === (b.referencing ?? []).join('\n');
}

/** The path of an auxiliary file relative to the directory that holds haproxy.cfg. */
export function auxPath(kind: AuxKind, name: string): string {
  return `${AUX_DIRS[kind]}/${name}`;
}

/**
 * `text` with the edits (sorted) made. Concatenated, not joined: the result shares the
 * unedited text until something reads it whole, so that a few changed lines do not
 * copy megabytes on the way to the runtime API.
 */
function splice(text: string, edits: readonly MainEdit[]): string {
  let result = '';
  let from = 0;
  for (const edit of edits) {
    result += text.slice(from, edit.start) + edit.text;
    from = edit.end;
  }
  return result + text.slice(from);
}
