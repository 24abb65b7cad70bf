import { JSONPath } from 'jsonpath-plus';
import { type KubeObject, type ResourceChange, objectKey } from './resource.ts';
import { seal, sealList } from './sealed.ts';

/** Fields dropped before an object is stored: large, never useful to a template. */
export const DEFAULT_STRIP = ['metadata.managedFields', 'metadata.annotations.kubectl.kubernetes.io/last-applied-configuration'];
/** Without configured index keys an object is found by namespace, then name. */
export const DEFAULT_INDEX = ['$.metadata.namespace', '$.metadata.name'];

export interface StoreOptions {
  /** JSONPath expressions whose values, in order, make an object's index key. */
  indexBy?: readonly string[];
  /** Dotted field paths removed before storing; the last segment may contain dots (annotation keys). */
  strip?: readonly string[];
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
  private readonly index = new Map<string, Map<string, KubeObject>>();
  private readonly indexKeysOf = new Map<string, string[]>();
  private readonly indexBy: readonly string[];
  private readonly strip: readonly string[];
  private sorted: readonly KubeObject[] | undefined;
  /**
   * get() results per index key, sorted and sealed; dropped when the bucket changes.
   * Only keys with a bucket are kept: templates look up keys that name nothing (a
   * Service without slices), and a miss is one map lookup anyway.
   */
  private readonly sortedBuckets = new Map<string, readonly KubeObject[]>();

  constructor(name: string, options: StoreOptions = {}) {
    this.name = name;
    this.indexBy = options.indexBy && options.indexBy.length > 0 ? options.indexBy : DEFAULT_INDEX;
    this.strip = options.strip ?? DEFAULT_STRIP;
  }

  get size(): number {
    return this.objects.size;
  }

  /** Applies one change; returns whether the stored state changed. */
  apply(change: ResourceChange): boolean {
    switch (change.type) {
      case 'problem':
        return false;
      case 'synced': {
        const was = this.synced;
        this.synced = true;
        return !was;
      }
      case 'upsert':
        return this.upsert(change.object);
      case 'delete':
        return this.remove(objectKey(change.object));
      case 'replace': {
        const incoming = new Map(change.objects.map((o) => [objectKey(o), o]));
        let changed = false;
        for (const key of [...this.objects.keys()]) if (!incoming.has(key)) changed = this.remove(key) || changed;
        for (const object of incoming.values()) changed = this.upsert(object) || changed;
        return changed;
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
      sorted = sealList(sortedValues(hits));
      this.sortedBuckets.set(key, sorted);
    }
    return sorted;
  }

  /** Sorted lookup results kept, for tests: never more than the index keys in use. */
  get cachedLookups(): number {
    return this.sortedBuckets.size;
  }

  first(...keys: string[]): KubeObject | undefined {
    return this.get(...keys)[0];
  }

  private upsert(raw: KubeObject): boolean {
    const key = objectKey(raw);
    const previous = this.objects.get(key);
    const rv = raw.metadata.resourceVersion;
    if (previous && rv !== undefined && previous.metadata.resourceVersion === rv) return false;
    if (previous) this.unindex(key);
    const object = seal(stripFields(raw, this.strip));
    this.objects.set(key, object);
    const indexKeys = indexKeysFor(object, this.indexBy);
    this.indexKeysOf.set(key, indexKeys);
    for (const k of indexKeys) {
      let bucket = this.index.get(k);
      if (!bucket) this.index.set(k, (bucket = new Map()));
      bucket.set(key, object);
      this.sortedBuckets.delete(k);
    }
    this.sorted = undefined;
    return true;
  }

  private remove(key: string): boolean {
    if (!this.objects.delete(key)) return false;
    this.unindex(key);
    this.sorted = undefined;
    return true;
  }

  private unindex(key: string): void {
    for (const k of this.indexKeysOf.get(key) ?? []) {
      this.sortedBuckets.delete(k);
      const bucket = this.index.get(k);
      bucket?.delete(key);
      if (bucket?.size === 0) this.index.delete(k);
    }
    this.indexKeysOf.delete(key);
  }
}

/** All prefixes of all combinations of the index values (a path may yield several). */
function indexKeysFor(object: KubeObject, paths: readonly string[]): string[] {
  let combos: string[][] = [[]];
  for (const path of paths) {
    const values = (JSONPath({ path, json: object, wrap: true }) as unknown[])
      .filter((v) => v !== undefined && v !== null && typeof v !== 'object')
      .map(String);
    if (values.length === 0) values.push('');
    combos = combos.flatMap((combo) => values.map((v) => [...combo, v]));
  }
  const keys = new Set<string>();
  for (const combo of combos) for (let i = 1; i <= combo.length; i++) keys.add(combo.slice(0, i).join(SEP));
  return [...keys];
}

/** Copies only the objects along each stripped path; the caller's object is not mutated. */
export function stripFields(object: KubeObject, paths: readonly string[]): KubeObject {
  let result = object;
  for (const path of paths) {
    const [head, ...rest] = path.split('.');
    if (head === undefined) continue;
    result = stripPath(result, head, rest) as KubeObject;
  }
  return result;
}

function stripPath(node: unknown, head: string, rest: string[]): unknown {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return node;
  const record = node as Record<string, unknown>;
  // The remaining segments may name a key that itself contains dots.
  const whole = [head, ...rest].join('.');
  if (whole in record) {
    const { [whole]: _dropped, ...kept } = record;
    return kept;
  }
  const [next, ...after] = rest;
  if (next === undefined || !(head in record)) return node;
  const child = stripPath(record[head], next, after);
  return child === record[head] ? node : { ...record, [head]: child };
}
