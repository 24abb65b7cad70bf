import type { KubeObject } from '../k8s/resource.ts';
import { isSealed } from '../k8s/sealed.ts';
import type { ResourceView } from '../k8s/store.ts';
import { abort, abortRender, describeValue } from './abort.ts';
import { READ_ONLY_HINT } from './locate.ts';

/**
 * Templates see stored objects and user values through read-only views:
 * a template that sorted a list in place or edited an object would change what
 * the next render sees, and the store's cached order with it. The views also
 * enumerate an object's keys in code-unit order, so that `Object.keys`,
 * `Object.entries`, `for...in` and `JSON.stringify` give the same output
 * whatever order the API server (or a YAML file) happened to write the keys in.
 * They are meant for JSON-like data; arrays keep their index order.
 */
const views = new WeakMap<object, object>();
const isView = new WeakSet<object>();

function denied(): never {
  return abortRender(READ_ONLY_HINT);
}

const handler: ProxyHandler<object> = {
  get(target, key) {
    const value: unknown = Reflect.get(target, key);
    if (value === null || typeof value !== 'object') return value;
    // A proxy must report a frozen property's own value; such data is immutable anyway.
    const own = Reflect.getOwnPropertyDescriptor(target, key);
    if (own && !own.configurable && !own.writable) return value;
    return readOnly(value);
  },
  getOwnPropertyDescriptor(target, key) {
    const own = Reflect.getOwnPropertyDescriptor(target, key);
    if (own && own.configurable && 'value' in own) return { ...own, value: readOnly(own.value) };
    return own;
  },
  ownKeys(target) {
    const keys = Reflect.ownKeys(target);
    if (Array.isArray(target)) return keys;
    const strings = keys.filter((k): k is string => typeof k === 'string').sort(compareCodeUnits);
    return [...strings, ...keys.filter((k) => typeof k === 'symbol')];
  },
  set: denied,
  defineProperty: denied,
  deleteProperty: denied,
  setPrototypeOf: denied,
  preventExtensions: denied,
};

export function readOnly<T>(value: T): T {
  // Sealed store objects are immutable with sorted keys already: no view needed.
  if (value === null || typeof value !== 'object' || isView.has(value) || isSealed(value)) return value;
  let view = views.get(value);
  if (!view) {
    view = new Proxy(value, handler);
    views.set(value, view);
    isView.add(view);
  }
  return view as T;
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

function facade(name: string, view: ResourceView): TemplateResourceView {
  const checked = (method: string, keys: unknown[]): string[] => {
    keys.forEach((k, i) => {
      if (typeof k !== 'string') abort(`resources.${name}.${method}(): key ${i + 1} is ${describeValue(k)}, expected a string`);
    });
    return keys as string[];
  };
  return Object.freeze({
    list: () => readOnly(view.list()),
    get: (...keys: unknown[]) => readOnly(view.get(...checked('get', keys))),
    first: (...keys: unknown[]) => readOnly(view.first(...checked('first', keys))),
    get size() {
      return view.size;
    },
  });
}

/**
 * `resources`: each watched set under its configured name. Reading a name that
 * is not configured aborts with the names that are, instead of handing the
 * template an undefined that fails later and further away.
 */
export function resourceSets(sets: Readonly<Record<string, ResourceView>>): Readonly<Record<string, TemplateResourceView>> {
  const target: Record<string, TemplateResourceView> = Object.create(null) as Record<string, TemplateResourceView>;
  const names = Object.keys(sets).sort(compareCodeUnits);
  for (const name of names) {
    const view = sets[name];
    if (view) target[name] = facade(name, view);
  }
  return new Proxy(target, {
    get(t, key) {
      if (typeof key === 'symbol') return undefined;
      if (Object.hasOwn(t, key)) return t[key];
      const known = names.length > 0 ? names.join(', ') : 'none';
      return abortRender(`unknown resource set ${JSON.stringify(key)} (configured sets: ${known})`);
    },
    set: denied,
    defineProperty: denied,
    deleteProperty: denied,
    setPrototypeOf: denied,
    preventExtensions: denied,
  });
}
