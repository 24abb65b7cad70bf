/**
 * Stored objects are sealed once, when they enter a store: a deep copy whose keys
 * are in code-unit order, frozen all the way down. Templates can then read them
 * directly (fast property access, no proxies) and still cannot change them, and
 * `Object.keys`, `for...in` and `JSON.stringify` give the same order whatever order
 * the API server or a YAML file wrote the keys in.
 */
const sealedValues = new WeakSet<object>();

export function seal<T>(value: T): T {
  if (value === null || typeof value !== 'object' || sealedValues.has(value)) return value;
  let copy: object;
  if (Array.isArray(value)) {
    copy = value.map((item: unknown) => seal(item));
  } else {
    const entries = Object.keys(value)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((key) => [key, seal((value as Record<string, unknown>)[key])] as const);
    copy = Object.fromEntries(entries);
  }
  Object.freeze(copy);
  sealedValues.add(copy);
  return copy as T;
}

/** Whether a value came out of seal(): immutable, with sorted keys. */
export function isSealed(value: object): boolean {
  return sealedValues.has(value);
}

/** Freezes a list of sealed values (a fresh array) so templates cannot reorder it. */
export function sealList<T>(items: T[]): readonly T[] {
  Object.freeze(items);
  sealedValues.add(items);
  return items;
}
