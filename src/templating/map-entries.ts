/**
 * Map entries as data: what `h.mapEntries(set, object, snippet, args)` declares. A
 * template names, for each object of a watched set, the snippet that turns that one
 * object into entries of map files; the snippet writes JSON
 * `{ "maps": { "<map file>": [[key, value], ...] }, "mapsOnly": true|false, "mapsFirst": true|false }`
 * (anything else it writes is ignored; `mapsFirst` may be left out, and is then `mapsOnly`).
 * `mapsOnly` is the template's word that the object asks for nothing but those entries
 * (no certificate, no new backend, no other line). `mapsFirst` says that its entries may
 * go ahead of the full render even so: what else it asks for (a certificate) comes with
 * that render, which then goes at once rather than as a mere confirmation. The render
 * records each call, so that the fast path can render one new or changed object's
 * snippet alone and add its entries at runtime (fast-maps.ts).
 */
import { abortRender, describeValue } from './abort.ts';

export type Entry = readonly [key: string, value: string];

/** One object's entries, as its snippet declared them. */
export interface DeclaredObject {
  set: string;
  /** The object's store key: `namespace/name`, or `name`. */
  key: string;
  /** By map file name, in the snippet's order. */
  maps: Readonly<Record<string, readonly Entry[]>>;
  mapsOnly: boolean;
}

export interface MapDeclarations {
  /** By set: the snippet and arguments (JSON) every object of the set was declared with; null when calls differed. */
  sets: Readonly<Record<string, { snippet: string; args: string } | null>>;
  objects: readonly DeclaredObject[];
}

/** What one render collects from its h.mapEntries calls. */
export class MapDeclarationLog {
  private readonly sets = new Map<string, { snippet: string; args: string } | null>();
  private readonly objects = new Map<string, DeclaredObject>();

  add(snippet: string, args: string, object: DeclaredObject): void {
    const held = this.sets.get(object.set);
    if (held === undefined) this.sets.set(object.set, { snippet, args });
    else if (held !== null && (held.snippet !== snippet || held.args !== args)) this.sets.set(object.set, null);
    this.objects.set(`${object.set}\u0001${object.key}`, object);
  }

  result(): MapDeclarations | undefined {
    if (this.sets.size === 0) return undefined;
    return { sets: Object.fromEntries(this.sets), objects: [...this.objects.values()] };
  }
}

/** A key or value a map line holds as written: no blanks, no control characters, not empty. */
// eslint-disable-next-line no-control-regex
const TEXT = /^[^\s\u0000-\u001f\u007f]+$/;

/**
 * The call's set and object key, checked: the set must be a configured one and the
 * object must have a name. Aborts the render (a fault of the template) otherwise.
 */
export function declarationTarget(set: unknown, object: unknown, sets: ReadonlySet<string>): { set: string; key: string } {
  if (typeof set !== 'string' || !sets.has(set)) return abortRender(`mapEntries(): the first argument must name a watched set (${[...sets].join(', ')}), got ${describeValue(set)}`);
  const metadata = object !== null && typeof object === 'object' ? (object as { metadata?: { namespace?: unknown; name?: unknown } }).metadata : undefined;
  const name = metadata?.name;
  const namespace = metadata?.namespace;
  if (typeof name !== 'string' || name === '' || (namespace !== undefined && typeof namespace !== 'string')) return abortRender(`mapEntries(): the object must be one of set ${set}, with a metadata.name, got ${describeValue(object)}`);
  return { set, key: namespace ? `${namespace}/${name}` : name };
}

/**
 * Reads what a mapEntries snippet wrote, parsed. Keys and values must be read back by haproxy as written (no blanks, no control
 * characters, not empty), in map files the template set renders; otherwise the render
 * aborts, naming the snippet.
 */
export function readDeclaration(snippet: string, value: unknown, maps: ReadonlyMap<string, unknown>): { maps: Record<string, Entry[]>; mapsOnly: boolean; mapsFirst: boolean } {
  const bad = (message: string): never => abortRender(`mapEntries(): snippets/${snippet} ${message}`);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return bad('must write a JSON object');
  const { maps: declared, mapsOnly, mapsFirst = mapsOnly } = value as { maps?: unknown; mapsOnly?: unknown; mapsFirst?: unknown };
  if (typeof mapsOnly !== 'boolean') return bad(`must say "mapsOnly": true or false, got ${describeValue(mapsOnly)}`);
  if (typeof mapsFirst !== 'boolean') return bad(`"mapsFirst" must be true or false, got ${describeValue(mapsFirst)}`);
  if (declared === null || typeof declared !== 'object' || Array.isArray(declared)) return bad('must write "maps": { "<map file>": [[key, value], ...] }');
  const out: Record<string, Entry[]> = {};
  for (const [name, entries] of Object.entries(declared)) {
    if (!maps.has(name)) bad(`names map ${JSON.stringify(name)}, which no map template renders`);
    if (!Array.isArray(entries)) bad(`maps[${JSON.stringify(name)}] must be a list of [key, value]`);
    out[name] = (entries as unknown[]).map((e) => {
      const [key, val] = Array.isArray(e) ? (e as unknown[]) : [];
      if (typeof key !== 'string' || !TEXT.test(key) || typeof val !== 'string' || !TEXT.test(val)) bad(`maps[${JSON.stringify(name)}]: ${describeValue(e)} is not [key, value] as a map file holds them`);
      return [key as string, val as string] as const;
    });
  }
  return { maps: out, mapsOnly, mapsFirst: mapsFirst || mapsOnly };
}
