import { createHash } from 'node:crypto';
import { type AuxKind, auxPath } from './rendered.ts';
import { abort, describeValue } from './abort.ts';
import { haproxyWord, isFileName, mapKey } from './escape.ts';
import { compareCodeUnits } from './readonly.ts';

/**
 * The helpers templates see as `h`. Each is pure and deterministic: output
 * depends on the arguments only, and anything that iterates keys sorts them.
 * Misuse aborts the render with a message, reported at the calling line.
 */
export interface Helpers {
  /** `maps/<name>`, relative to haproxy.cfg's directory; the map template must exist. */
  mapPath(name: string): string;
  /** `general/<name>`; the general file template must exist. */
  filePath(name: string): string;
  /** `ssl/<name>`; the certificate template must exist. */
  certPath(name: string): string;
  /** One haproxy.cfg word, exactly as `<%= %>` writes it there; emit it with `<%- %>`. */
  word(value: unknown): string;
  /** A map file key: non-empty, no whitespace or control characters, no leading `#`. */
  mapKey(value: unknown): string;
  /** A haproxy name ([A-Za-z0-9_.:-]) that is distinct for distinct parts. */
  identifier(...parts: unknown[]): string;
  /** A sorted copy; stable, keys compared by type then value, missing keys last. */
  sortBy<T>(list: Iterable<T>, key: Key<T>): T[];
  /** The first item of each distinct key (the item itself without a key), in list order. */
  uniq<T>(list: Iterable<T>, key?: Key<T>): T[];
  /** `[key, items]` pairs sorted by key; items keep list order. */
  groupBy<T>(list: Iterable<T>, key: Key<T>): [SortKey, T[]][];
  /** Own enumerable keys sorted by code unit; [] for null or undefined. */
  keys(object: unknown): string[];
  /** `[key, value]` pairs sorted by key; [] for null or undefined. */
  entries(object: unknown): [string, unknown][];
  /** Decodes standard base64 (Secret data) to UTF-8 text; aborts on anything else. */
  b64decode(data: unknown): string;
  /** A DNS hostname (RFC 1123 labels), optionally with a leading `*.` wildcard label. */
  isHostname(value: unknown): boolean;
  /** An absolute URL path made of RFC 3986 path characters, without query or fragment. */
  isPath(value: unknown): boolean;
  /** Aborts the render with this message, reported at the calling line. */
  fail(message: unknown): never;
  /** The value at a dotted path (or a list of segments, for keys with dots), or `fallback` when absent or null. */
  get(object: unknown, path: string | readonly (string | number)[], fallback?: unknown): unknown;
}

/** A property path (as for get) or a function of the item. */
export type Key<T> = string | readonly (string | number)[] | ((item: T) => unknown);
export type SortKey = string | number | bigint | boolean | null | undefined;

export interface KnownFiles {
  maps: ReadonlySet<string>;
  files: ReadonlySet<string>;
  certs: ReadonlySet<string>;
}

export function createHelpers(known: KnownFiles): Helpers {
  const pathTo = (kind: AuxKind, helper: string) => (name: unknown) => {
    if (typeof name !== 'string' || !isFileName(name)) abort(`${helper}(): ${describeValue(name)} is not a valid file name`);
    if (!known[kind].has(name)) {
      const names = [...known[kind]].sort(compareCodeUnits).join(', ') || 'none';
      abort(`${helper}(): no ${kind} template named ${JSON.stringify(name)} (defined: ${names})`);
    }
    return auxPath(kind, name);
  };
  const helpers: Helpers = {
    mapPath: pathTo('maps', 'mapPath'),
    filePath: pathTo('files', 'filePath'),
    certPath: pathTo('certs', 'certPath'),
    word: haproxyWord,
    mapKey,
    identifier,
    sortBy,
    uniq,
    groupBy,
    keys: sortedKeys,
    entries: (object) => sortedKeys(object).map((k) => [k, (object as Record<string, unknown>)[k]]),
    b64decode,
    isHostname,
    isPath,
    fail: (message) => abort(typeof message === 'string' ? message : describeValue(message)),
    get,
  };
  return Object.freeze(helpers);
}

const VERBATIM_PART = /^[A-Za-z0-9.-]+$/;

/**
 * Parts made only of [A-Za-z0-9.-] are joined with `_` unchanged, which is
 * unambiguous because no part contains `_`. Any other input is sanitized for
 * readability and suffixed with `:` and 16 hex digits of a SHA-256 over the
 * exact parts; verbatim results never contain `:`, so the two forms cannot
 * collide, and distinct inputs collide only if the hashes do.
 */
export function identifier(...parts: unknown[]): string {
  if (parts.length === 0) abort('identifier() needs at least one part');
  const texts = parts.map((part, i) => {
    if (typeof part === 'string' || typeof part === 'bigint' || (typeof part === 'number' && Number.isFinite(part))) return String(part);
    return abort(`identifier(): part ${i + 1} is ${describeValue(part)}, expected a string or number`);
  });
  if (texts.every((t) => VERBATIM_PART.test(t))) return texts.join('_');
  const readable = texts
    .map((t) => t.replace(/[^A-Za-z0-9.-]/g, '_'))
    .join('_')
    .slice(0, 100);
  const digest = createHash('sha256').update(JSON.stringify(texts)).digest('hex').slice(0, 16);
  return `${readable}:${digest}`;
}

function toArray<T>(list: Iterable<T>, helper: string): T[] {
  if (Array.isArray(list)) return [...(list as T[])];
  if (list !== null && typeof list === 'object' && typeof (list as Partial<Iterable<T>>)[Symbol.iterator] === 'function') return [...list];
  return abort(`${helper}(): expected a list, got ${describeValue(list)}`);
}

function keyOf<T>(key: Key<T>, helper: string): (item: T) => unknown {
  if (typeof key === 'function') return key;
  if (typeof key === 'string' || Array.isArray(key)) return (item) => get(item, key);
  return abort(`${helper}(): the key must be a property path or a function, got ${describeValue(key)}`);
}

function sortKey(value: unknown, helper: string): SortKey {
  if (value === null || value === undefined || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint') return value;
  if (typeof value === 'number' && !Number.isNaN(value)) return value;
  return abort(`${helper}(): keys must be strings, numbers or booleans, got ${describeValue(value)}`);
}

function rank(value: SortKey): number {
  if (typeof value === 'number' || typeof value === 'bigint') return 0;
  if (typeof value === 'string') return 1;
  if (typeof value === 'boolean') return 2;
  return 3;
}

/** Numbers, then strings (by code unit, never locale), then booleans, then missing. */
export function compareKeys(a: SortKey, b: SortKey): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return 0;
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

function sortBy<T>(list: Iterable<T>, key: Key<T>): T[] {
  const select = keyOf(key, 'sortBy');
  return toArray(list, 'sortBy')
    .map((item) => ({ item, key: sortKey(select(item), 'sortBy') }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map(({ item }) => item);
}

function uniq<T>(list: Iterable<T>, key?: Key<T>): T[] {
  const select = key === undefined ? (item: T) => item : keyOf(key, 'uniq');
  const seen = new Set<unknown>();
  return toArray(list, 'uniq').filter((item) => {
    const k = select(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function groupBy<T>(list: Iterable<T>, key: Key<T>): [SortKey, T[]][] {
  const select = keyOf(key, 'groupBy');
  const groups = new Map<SortKey, T[]>();
  for (const item of toArray(list, 'groupBy')) {
    const k = sortKey(select(item), 'groupBy');
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.entries()].sort(([a], [b]) => compareKeys(a, b));
}

function sortedKeys(object: unknown): string[] {
  if (object === null || object === undefined) return [];
  if (typeof object !== 'object') return abort(`keys(): expected an object, got ${describeValue(object)}`);
  const keys = Object.keys(object);
  return Array.isArray(object) ? keys : keys.sort(compareCodeUnits);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function b64decode(data: unknown): string {
  if (typeof data !== 'string' || !BASE64.test(data)) abort(`b64decode(): ${describeValue(data)} is not standard base64`);
  try {
    return utf8.decode(Buffer.from(data, 'base64'));
  } catch {
    return abort('b64decode(): the decoded data is not UTF-8 text');
  }
}

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

function isHostname(value: unknown): boolean {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) return false;
  const labels = value.split('.');
  return labels.every((label, i) => LABEL.test(label) || (i === 0 && label === '*' && labels.length > 1));
}

const PATH = /^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

function isPath(value: unknown): boolean {
  return typeof value === 'string' && PATH.test(value);
}

function get(object: unknown, path: string | readonly (string | number)[], fallback?: unknown): unknown {
  let segments: readonly (string | number)[];
  if (typeof path === 'string') segments = path === '' ? [] : path.split('.');
  else if (Array.isArray(path)) segments = path;
  else return abort(`get(): the path must be a string or a list of segments, got ${describeValue(path)}`);
  let current: unknown = object;
  for (const segment of segments) {
    // Own properties only: a path must not reach into prototypes (constructor, __proto__).
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, segment)) return fallback;
    current = (current as Record<string, unknown>)[segment];
  }
  return current ?? fallback;
}
