import { compilePath } from './json-path.ts';
import { type KubeObject, type ResourceChange, objectKey } from './resource.ts';

/** Objects of `set` point at objects of another set through the values at `path`. */
export interface ReferenceRule {
  set: string;
  /**
   * A JSONPath into the referencing object. Each value is a name (in the referencing
   * object's namespace) or an object with `name` and an optional `namespace`, as in
   * `spec.tls[*].secretName` or a Gateway listener's `certificateRefs[*]`. A text
   * `namespace/name` (ingress-nginx's annotations) counts only when the namespace is the
   * referencing object's own: an annotation never makes haprx read another namespace.
   */
  path: string;
}

/** The keys (`namespace/name`) an object references through a path. */
export function referencedKeys(object: KubeObject, path: string): string[] {
  const namespace = object.metadata.namespace;
  const keys = new Set<string>();
  // The configuration's paths are checked when it loads; one that fails on this object references nothing.
  const compiled = compilePath(path);
  const found = compiled.ok ? compiled.path.values(object) : undefined;
  if (!found?.ok) return [];
  for (const value of found.values) {
    let name: unknown;
    let ns: unknown = namespace;
    if (typeof value === 'string') {
      const slash = value.indexOf('/');
      if (slash < 0) name = value;
      else if (value.slice(0, slash) === namespace && !value.includes('/', slash + 1)) name = value.slice(slash + 1);
    }
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      name = (value as { name?: unknown }).name;
      ns = (value as { namespace?: unknown }).namespace ?? namespace;
    }
    if (typeof name !== 'string' || !name) continue;
    keys.add(typeof ns === 'string' && ns ? `${ns}/${name}` : name);
  }
  return [...keys];
}

/**
 * Which keys the referencing sets point at now, counted per referencing object,
 * so that a key stays referenced while any object references it. `apply` takes a
 * change of a referencing set and tells which keys became referenced or stopped
 * being referenced.
 */
export class ReferenceIndex {
  private readonly rules: ReadonlyMap<string, readonly string[]>;
  /** Referencing object (set + key) → the keys it references. */
  private readonly bySource = new Map<string, Set<string>>();
  private readonly counts = new Map<string, number>();

  constructor(rules: readonly ReferenceRule[]) {
    const bySet = new Map<string, string[]>();
    for (const r of rules) bySet.set(r.set, [...(bySet.get(r.set) ?? []), r.path]);
    this.rules = bySet;
  }

  has(key: string): boolean {
    return (this.counts.get(key) ?? 0) > 0;
  }

  apply(change: ResourceChange): { added: string[]; removed: string[] } {
    const paths = change.type === 'problem' ? undefined : this.rules.get(change.resource);
    const added: string[] = [];
    const removed: string[] = [];
    if (!paths || change.type === 'problem' || change.type === 'synced') return { added, removed };
    const set = change.resource;
    const update = (source: string, next: Set<string>) => {
      const previous = this.bySource.get(source) ?? new Set<string>();
      for (const key of previous) if (!next.has(key)) this.decrement(key, removed);
      for (const key of next) if (!previous.has(key)) this.increment(key, added);
      if (next.size > 0) this.bySource.set(source, next);
      else this.bySource.delete(source);
    };
    const refsOf = (object: KubeObject) => new Set(paths.flatMap((p) => referencedKeys(object, p)));
    if (change.type === 'upsert') update(`${set}\u0000${objectKey(change.object)}`, refsOf(change.object));
    else if (change.type === 'delete') update(`${set}\u0000${objectKey(change.object)}`, new Set());
    else {
      const incoming = new Map(change.objects.map((o) => [`${set}\u0000${objectKey(o)}`, o]));
      for (const source of [...this.bySource.keys()]) if (source.startsWith(`${set}\u0000`) && !incoming.has(source)) update(source, new Set());
      for (const [source, object] of incoming) update(source, refsOf(object));
    }
    // A key dropped by one object and taken by another in the same change is neither.
    const both = new Set(added.filter((k) => removed.includes(k)));
    return { added: added.filter((k) => !both.has(k)), removed: removed.filter((k) => !both.has(k)) };
  }

  private increment(key: string, added: string[]): void {
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    if (n === 1) added.push(key);
  }

  private decrement(key: string, removed: string[]): void {
    const n = (this.counts.get(key) ?? 0) - 1;
    if (n <= 0) {
      this.counts.delete(key);
      removed.push(key);
    } else this.counts.set(key, n);
  }
}
