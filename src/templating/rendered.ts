import { createHash } from 'node:crypto';

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

const setsByBackend = new WeakMap<RenderedConfig, Map<string, ServerSet>>();

/**
 * The server lines a render wrote for a backend through h.servers, if it recorded them.
 * A copy, not a slice of the configuration: V8 keeps the whole text a slice was cut
 * from alive, and these lines are kept across many configurations.
 */
export function serverLines(config: RenderedConfig, backend: string): string | undefined {
  const sets = config.serverSets?.sets;
  if (!sets) return undefined;
  let byBackend = setsByBackend.get(config);
  if (!byBackend) {
    byBackend = new Map();
    for (const s of sets) if (!byBackend.has(s.backend)) byBackend.set(s.backend, s);
    setsByBackend.set(config, byBackend);
  }
  const set = byBackend.get(backend);
  return set && Buffer.from(config.main.slice(set.start, set.end)).toString();
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
  const h = createHash('sha256');
  const part = (label: string, content: string) => {
    // Length-prefixed, so that no two different file sets hash alike.
    h.update(`${label}\u0000${Buffer.byteLength(content)}\u0000`);
    h.update(content);
  };
  part('main', sealed.main);
  for (const kind of AUX_KINDS) for (const [name, content] of Object.entries(sealed[kind])) part(`${kind}/${name}`, content);
  if (referencing.length > 0) part('referencing', referencing.join('\n'));
  return { ...sealed, hash: h.digest('hex'), ...(serverSets && { serverSets }) };
}

/** The path of an auxiliary file relative to the directory that holds haproxy.cfg. */
export function auxPath(kind: AuxKind, name: string): string {
  return `${AUX_DIRS[kind]}/${name}`;
}
