import type { KubeObject } from '../k8s/resource.ts';
import type { ResourceView } from '../k8s/store.ts';
import { abort, abortRender, describeValue } from './abort.ts';
import { READ_ONLY_HINT } from './locate.ts';
import { templateRealm } from './realm.ts';

/**
 * Templates see stored objects and user values as frozen data of the template
 * realm (realm.ts): a template that sorted a list in place or edited an object
 * would change what the next render sees, and the store's cached order with it,
 * and an object of the controller's own realm would let it out of the realm.
 * Stored objects are sealed into the realm when a store takes them; lists and
 * values are sealed here, once per list or values object. Object keys come
 * sorted by code unit, so `Object.keys`, `Object.entries`, `for...in` and
 * `JSON.stringify` give the same output whatever order the API server (or a
 * YAML file) wrote the keys in. A write throws a TypeError, which the render
 * reports with READ_ONLY_HINT.
 */
const copies = new WeakMap<object, unknown>();

export function readOnly<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  let copy = copies.get(value);
  if (copy === undefined) {
    const realm = templateRealm();
    copy = realm.isSealed(value) ? value : realm.seal(value);
    copies.set(value, copy);
  }
  return copy as T;
}

export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What a template sees as `resources.<name>`: the store's queries, read-only. */
export interface TemplateResourceView {
  list(): readonly KubeObject[];
  get(...keys: string[]): readonly KubeObject[];
  first(...keys: string[]): KubeObject | undefined;
  readonly size: number;
}

/**
 * Told of every lookup a render makes into the sets: `key` is the index key looked up
 * (the keys joined by NUL), or undefined for the whole set (list(), size).
 */
export type ReadListener = (set: string, key: string | undefined) => void;

function facade(name: string, view: ResourceView, onRead: ReadListener | undefined): TemplateResourceView {
  const realm = templateRealm();
  const checked = (method: string, keys: unknown[]): string[] => {
    keys.forEach((k, i) => {
      if (typeof k !== 'string') abort(`resources.${name}.${method}(): key ${i + 1} is ${describeValue(k)}, expected a string`);
    });
    return keys as string[];
  };
  const read = (keys: string[] | undefined) => {
    onRead?.(name, keys?.join('\u0000'));
    return keys;
  };
  const methods = realm.record([
    ['list', realm.expose(() => (read(undefined), readOnly(view.list())))],
    ['get', realm.expose((...keys: unknown[]) => readOnly(view.get(...read(checked('get', keys))!)))],
    ['first', realm.expose((...keys: unknown[]) => readOnly(view.first(...read(checked('first', keys))!)))],
  ]);
  // One facade per render: the size cannot change under it. Reading it reads the whole set.
  Object.defineProperty(methods, 'size', { get: realm.expose(() => (read(undefined), view.size)), enumerable: true });
  return Object.freeze(methods) as unknown as TemplateResourceView;
}

/**
 * `resources`: each watched set under its configured name. Reading a name that
 * is not configured aborts with the names that are, instead of handing the
 * template an undefined that fails later and further away.
 */
export function resourceSets(sets: Readonly<Record<string, ResourceView>>, onRead?: ReadListener): Readonly<Record<string, TemplateResourceView>> {
  const realm = templateRealm();
  const names = Object.keys(sets).sort(compareCodeUnits);
  const entries: [string, unknown][] = [];
  for (const name of names) {
    const view = sets[name];
    if (view) entries.push([name, facade(name, view, onRead)]);
  }
  return realm.guarded(
    realm.record(entries),
    realm.expose((key: string) => abortRender(`unknown resource set ${JSON.stringify(key)} (configured sets: ${names.length > 0 ? names.join(', ') : 'none'})`)),
    realm.expose(() => abortRender(READ_ONLY_HINT)),
  ) as Readonly<Record<string, TemplateResourceView>>;
}
