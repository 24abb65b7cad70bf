import { templateRealm } from '../templating/realm.ts';
import { canonicalJson } from './canonical-json.ts';

/**
 * Stored objects are sealed once, when they enter a store: a deep copy whose keys
 * are in code-unit order, frozen all the way down, made in the template realm
 * (src/templating/realm.ts). Templates can then read them directly (fast property
 * access, no proxies, no copy per render) and still cannot change them, nor reach
 * the controller's own realm through them; and `Object.keys`, `for...in` and
 * `JSON.stringify` give the same order whatever order the API server or a YAML
 * file wrote the keys in. For the controller's code they are ordinary objects.
 */
export function seal<T>(value: T): T {
  return templateRealm().seal(value);
}

/**
 * As seal, for data that is JSON, as every Kubernetes object is: made from its JSON
 * text with keys in code-unit order, which the realm parses. Objects parsed from JSON
 * take a third of the memory of copied ones (compact shapes, short strings shared),
 * which at ten thousand Ingresses is tens of megabytes. What JSON cannot hold is not
 * kept: `undefined` properties, functions; a cycle throws.
 */
export function sealData<T>(value: T): T {
  const text = canonicalJson(value);
  if (text === undefined) throw new TypeError('a value without JSON text cannot be sealed as data');
  return templateRealm().sealText(text) as T;
}

/** Whether a value came out of seal(): immutable, with sorted keys. */
export function isSealed(value: object): boolean {
  return templateRealm().isSealed(value);
}

/**
 * Freezes a list of sealed values (a fresh array) so that nothing reorders it. The
 * list itself stays an array of the controller's realm; templates get a sealed
 * copy of it (src/templating/readonly.ts), made once per list.
 */
export function sealList<T>(items: T[]): readonly T[] {
  return Object.freeze(items);
}
