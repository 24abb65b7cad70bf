import { type CompiledPath, compilePath } from './json-path.ts';
import { type KubeObject, type ResourceChange, objectKey, refOf } from './resource.ts';
import { sealData, sealList } from './sealed.ts';

/** Fields dropped before an object is stored: large, never useful to a template. */
export const DEFAULT_STRIP = ['metadata.managedFields', 'metadata.annotations.kubectl.kubernetes.io/last-applied-configuration'];
/** Without configured index keys an object is found by namespace, then name. */
export const DEFAULT_INDEX = ['$.metadata.namespace', '$.metadata.name'];
/** The most index keys one object may have: paths that select many values multiply. */
export const MAX_INDEX_KEYS = 1_000;

/** An object a store could not take, as a source problem naming it; the store keeps what it held. */
export type StoreProblem = Extract<ResourceChange, { type: 'problem' }>;

/** An object ready to go into a store: nothing about it can fail any more. */
interface Prepared {
  key: string;
  object: KubeObject;
  indexKeys: string[];
}

/** What one change did to a store. */
export interface StoreUpdate {
  changed: boolean;
  problems: readonly StoreProblem[];
}

export interface StoreOptions {
  /** JSONPath expressions whose values, in order, make an object's index key. */
  indexBy?: readonly string[];
  /** Dotted field paths removed before storing; the last segment may contain dots (annotation keys). */
  strip?: readonly string[];
  /**
   * Seal objects into the template realm as they are stored (the default), so that
   * renders in this thread copy nothing. A store no template in this thread reads in
   * full (renders run in a worker) keeps the objects as they come, and copies none.
   */
  seal?: boolean;
}

/** Read-only view given to templates as `resources.<name>`. */
export interface ResourceView {
  /** Every object, sorted by namespace/name so that renders are deterministic. */
  list(): readonly KubeObject[];
  /** Objects whose index key starts with the given values, sorted like list(). */
  get(...keys: string[]): readonly KubeObject[];
  /** The first match of get(), or undefined. */
  first(...keys: string[]): KubeObject | undefined;
  readonly size: number;
}

const SEP = '\u0000';

/** The objects under one index key: one as a pair, more in a Map by store key. */
type Bucket = { key: string; object: KubeObject } | Map<string, KubeObject>;
const EMPTY: readonly KubeObject[] = sealList([]);

function sortedValues(entries: Map<string, KubeObject>): KubeObject[] {
  return [...entries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
}

/**
 * The objects of one watched resource set, keyed by namespace/name and indexed by
 * the configured keys. Every index prefix is stored too, so a lookup by the first
 * k keys is a map hit, never a scan.
 */
export class Store implements ResourceView {
  readonly name: string;
  synced = false;
  private readonly objects = new Map<string, KubeObject>();
  /**
   * Index key → the objects under it. Most keys (a full namespace/name, say) hold one
   * object: that is kept as a pair, not a Map of one, which at ten thousand objects is
   * megabytes of hash tables.
   */
  private readonly index = new Map<string, Bucket>();
  private readonly indexKeysOf = new Map<string, string[]>();
  /** The index keys an object had before its last update, where they differ from its keys now. */
  private readonly formerKeysOf = new Map<string, string[]>();
  private readonly indexBy: readonly CompiledPath[];
  private readonly strip: readonly string[];
  private readonly sealing: boolean;
  private sorted: readonly KubeObject[] | undefined;
  /**
   * get() results per index key, sorted and sealed; dropped when the bucket changes.
   * Only keys with a bucket are kept: templates look up keys that name nothing (a
   * Service without slices), and a miss is one map lookup anyway.
   */
  private readonly sortedBuckets = new Map<string, readonly KubeObject[]>();

  constructor(name: string, options: StoreOptions = {}) {
    this.name = name;
    this.indexBy = (options.indexBy && options.indexBy.length > 0 ? options.indexBy : DEFAULT_INDEX).map((text) => {
      const compiled = compilePath(text);
      // The controller configuration is checked when it loads: a bad path here is a bug, not an input.
      if (!compiled.ok) throw new TypeError(`store ${name}: indexBy ${compiled.message}`);
      return compiled.path;
    });
    this.strip = options.strip ?? DEFAULT_STRIP;
    this.sealing = options.seal ?? true;
  }

  get size(): number {
    return this.objects.size;
  }

  /** Applies one change; returns whether the stored state changed. */
  apply(change: ResourceChange): boolean {
    return this.update(change).changed;
  }

  /**
   * Applies one change. Never throws: an object that cannot be stored (one
   * without a name, one too deeply nested to copy, one an index path cannot
   * be evaluated on) is a problem naming it, and the store keeps what it held
   * for that object; the rest of the change applies.
   */
  update(change: ResourceChange): StoreUpdate {
    const problems: StoreProblem[] = [];
    const upsert = (object: KubeObject): boolean => {
      const key = this.keyOf(object);
      if (typeof key !== 'string') {
        problems.push(key);
        return false;
      }
      // A re-sent object (a relist) costs a lookup, not a copy.
      const rv = object.metadata.resourceVersion;
      if (rv !== undefined && this.objects.get(key)?.metadata.resourceVersion === rv) return false;
      const prepared = this.prepare(object, key);
      if ('problem' in prepared) {
        problems.push(prepared.problem);
        return false;
      }
      this.upsert(prepared);
      return true;
    };
    switch (change.type) {
      case 'problem':
        return { changed: false, problems };
      case 'synced': {
        const was = this.synced;
        this.synced = true;
        return { changed: !was, problems };
      }
      case 'upsert':
        return { changed: upsert(change.object), problems };
      case 'delete': {
        const key = this.keyOf(change.object);
        if (typeof key !== 'string') return { changed: false, problems: [key] };
        return { changed: this.remove(key), problems };
      }
      case 'replace': {
        const incoming = new Map<string, KubeObject>();
        for (const object of change.objects) {
          const key = this.keyOf(object);
          if (typeof key === 'string') incoming.set(key, object);
          else problems.push(key);
        }
        let changed = false;
        for (const key of [...this.objects.keys()]) if (!incoming.has(key)) changed = this.remove(key) || changed;
        for (const object of incoming.values()) changed = upsert(object) || changed;
        return { changed, problems };
      }
    }
  }

  list(): readonly KubeObject[] {
    this.sorted ??= sealList(sortedValues(this.objects));
    return this.sorted;
  }

  get(...keys: string[]): readonly KubeObject[] {
    const key = keys.join(SEP);
    let sorted = this.sortedBuckets.get(key);
    if (sorted === undefined) {
      const hits = this.index.get(key);
      if (!hits) return EMPTY;
      sorted = sealList(hits instanceof Map ? sortedValues(hits) : [hits.object]);
      this.sortedBuckets.set(key, sorted);
    }
    return sorted;
  }

  /**
   * The index keys (every prefix) whose lookups the last update of an object changed:
   * its keys now and, when its update moved it, the keys it had before. Undefined for
   * an object the store does not hold. NUL joins the values of a key, as lookups do.
   */
  touchedKeys(key: string): readonly string[] | undefined {
    const now = this.indexKeysOf.get(key);
    if (!now) return undefined;
    const former = this.formerKeysOf.get(key);
    return former ? [...new Set([...now, ...former])] : now;
  }

  /** Sorted lookup results kept, for tests: never more than the index keys in use. */
  get cachedLookups(): number {
    return this.sortedBuckets.size;
  }

  first(...keys: string[]): KubeObject | undefined {
    return this.get(...keys)[0];
  }

  /** The object stored under a store key (`namespace/name`), whatever the index keys. */
  object(key: string): KubeObject | undefined {
    return this.objects.get(key);
  }

  /** The store key of an object, or a problem when it has no name to be stored under. */
  private keyOf(object: KubeObject): string | StoreProblem {
    const metadata: unknown = object?.metadata;
    const name = metadata !== null && typeof metadata === 'object' ? (metadata as { name?: unknown }).name : undefined;
    const namespace = metadata !== null && typeof metadata === 'object' ? (metadata as { namespace?: unknown }).namespace : undefined;
    if (typeof name === 'string' && name !== '' && (namespace === undefined || typeof namespace === 'string')) return objectKey(object);
    return { type: 'problem', resource: this.name, source: `store ${this.name}`, message: `${typeof object?.kind === 'string' ? object.kind : 'an object'} without a metadata.name (and a string metadata.namespace, if any) cannot be stored` };
  }

  /**
   * Everything that can fail about storing an object, done before the store is
   * touched: its key, the sealed copy, its index keys.
   */
  private prepare(raw: KubeObject, key: string): Prepared | { problem: StoreProblem } {
    const problem = (message: string): { problem: StoreProblem } => {
      return { problem: { type: 'problem', resource: this.name, source: `store ${this.name}`, object: refOf(raw), message: `${raw.kind ?? 'Object'} ${key}: ${message}; the set keeps what it had for it` } };
    };
    let object: KubeObject;
    try {
      const stripped = stripFields(raw, this.strip);
      object = this.sealing ? sealData(stripped) : stripped;
    } catch (err) {
      // Nesting deep enough to exhaust the stack, typically.
      return problem(`cannot be copied into the store (${err instanceof Error ? err.message : String(err)})`);
    }
    const indexKeys = indexKeysFor(object, this.indexBy);
    if (!Array.isArray(indexKeys)) return problem(indexKeys.message);
    return { key, object, indexKeys };
  }

  private upsert({ key, object, indexKeys }: Prepared): void {
    const former = this.indexKeysOf.get(key);
    if (former && former.join(SEP) !== indexKeys.join(SEP)) this.formerKeysOf.set(key, former);
    else this.formerKeysOf.delete(key);
    if (this.objects.has(key)) this.unindex(key);
    this.objects.set(key, object);
    this.indexKeysOf.set(key, indexKeys);
    for (const k of indexKeys) {
      const bucket = this.index.get(k);
      if (!bucket) this.index.set(k, { key, object });
      else if (bucket instanceof Map) bucket.set(key, object);
      else this.index.set(k, new Map([[bucket.key, bucket.object], [key, object]]));
      this.sortedBuckets.delete(k);
    }
    this.sorted = undefined;
  }

  private remove(key: string): boolean {
    if (!this.objects.delete(key)) return false;
    this.formerKeysOf.delete(key);
    this.unindex(key);
    this.sorted = undefined;
    return true;
  }

  private unindex(key: string): void {
    for (const k of this.indexKeysOf.get(key) ?? []) {
      this.sortedBuckets.delete(k);
      const bucket = this.index.get(k);
      if (bucket instanceof Map) {
        bucket.delete(key);
        if (bucket.size === 0) this.index.delete(k);
      } else if (bucket?.key === key) this.index.delete(k);
    }
    this.indexKeysOf.delete(key);
  }
}

/** All prefixes of all combinations of the index values (a path may yield several), or why there are none. */
function indexKeysFor(object: KubeObject, paths: readonly CompiledPath[]): string[] | { message: string } {
  let combos: string[][] = [[]];
  for (const [i, path] of paths.entries()) {
    const found = path.values(object);
    if (!found.ok) return { message: `indexBy[${i}]: ${found.message}` };
    const values = found.values.filter((v) => v !== undefined && v !== null && typeof v !== 'object').map(String);
    if (values.length === 0) values.push('');
    if (combos.length * values.length > MAX_INDEX_KEYS) return { message: `indexBy gives more than ${MAX_INDEX_KEYS} index keys (indexBy[${i}] ${path.text} selects ${values.length} values)` };
    combos = combos.flatMap((combo) => values.map((v) => [...combo, v]));
  }
  const keys = new Set<string>();
  for (const combo of combos) for (let i = 1; i <= combo.length; i++) keys.add(combo.slice(0, i).join(SEP));
  return [...keys];
}

/** A stripped path split once: its segments, and from each segment on, the rest joined again (a key may hold dots). */
interface StripPath {
  segments: readonly string[];
  rests: readonly string[];
}

/** The paths of each strip list, split once per list rather than once per object (30k objects at 10k Ingresses). */
const compiledStrips = new WeakMap<readonly string[], readonly StripPath[]>();

function compileStrip(paths: readonly string[]): readonly StripPath[] {
  let compiled = compiledStrips.get(paths);
  if (!compiled) {
    compiled = paths.map((path) => {
      const segments = path.split('.');
      return { segments, rests: segments.map((_, i) => segments.slice(i).join('.')) };
    });
    compiledStrips.set(paths, compiled);
  }
  return compiled;
}

/** Copies only the objects along each stripped path; the caller's object is not mutated. */
export function stripFields(object: KubeObject, paths: readonly string[]): KubeObject {
  let result = object;
  for (const path of compileStrip(paths)) result = stripPath(result, path, 0) as KubeObject;
  return result;
}

function stripPath(node: unknown, path: StripPath, at: number): unknown {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return node;
  const record = node as Record<string, unknown>;
  // The remaining segments may name a key that itself contains dots.
  const whole = path.rests[at]!;
  if (whole in record) {
    const { [whole]: _dropped, ...kept } = record;
    return kept;
  }
  const head = path.segments[at]!;
  if (at + 1 >= path.segments.length || !(head in record)) return node;
  const child = stripPath(record[head], path, at + 1);
  return child === record[head] ? node : { ...record, [head]: child };
}
