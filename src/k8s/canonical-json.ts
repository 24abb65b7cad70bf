/**
 * The JSON text of a value with every object's keys in code-unit order (integer-like
 * keys first, in numeric order, as every object lists them): what
 * `JSON.stringify` gives with a replacer that copies each object with sorted keys, at
 * under half its cost. The render thread seals every object it stores through this
 * text (src/k8s/sealed.ts), thirty thousand of them at a cold start at 10k Ingresses,
 * and a replacer makes the engine leave its fast path for a call back into JavaScript
 * and a fresh object per object.
 *
 * As with `JSON.stringify`: `toJSON` is called first (a Date from the API client
 * becomes its ISO text); `undefined`, functions and symbols are left out of objects
 * and are `null` in arrays; numbers that are not finite are `null`; a BigInt throws.
 * Every other object is its own enumerable string keys, whatever its prototype. A
 * value that contains itself throws a TypeError (a replacer would recurse until the
 * stack ran out). Undefined when the value itself has no JSON text.
 */
export function canonicalJson(value: unknown): string | undefined {
  return text(value, '', []);
}

/** Quoted keys with their colon, made once: the same few dozen names recur in every object. */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 4_096;

function quoted(key: string): string {
  let q = quotedKeys.get(key);
  if (q === undefined) {
    q = `${JSON.stringify(key)}:`;
    // Keys are data too (labels, annotations): the cache stays bounded whatever comes.
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, q);
  }
  return q;
}

/**
 * An object's keys in the order the parsed text will list them: its integer-like keys
 * first, in numeric order (every JavaScript object lists them so, whatever the text
 * says, and Object.keys already gives them so), then the others in code-unit order.
 */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  let integers = 0;
  while (integers < keys.length && isIndex(keys[integers]!)) integers++;
  if (integers === 0) return keys.sort();
  return [...keys.slice(0, integers), ...keys.slice(integers).sort()];
}

const MAX_INDEX = 2 ** 32 - 2;

function isIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  if (c < 48 || c > 57) return false;
  if (!/^(?:0|[1-9]\d*)$/.test(key)) return false;
  return Number(key) <= MAX_INDEX;
}

function text(value: unknown, key: string, ancestors: object[]): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') value = (value as { toJSON(key: string): unknown }).toJSON(key);
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('a BigInt has no JSON text');
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return 'null';
  if (ancestors.includes(value)) throw new TypeError('data that contains itself has no JSON text');
  ancestors.push(value);
  let out: string;
  if (Array.isArray(value)) {
    out = '[';
    for (let i = 0; i < value.length; i++) out += `${i === 0 ? '' : ','}${text(value[i], String(i), ancestors) ?? 'null'}`;
    out += ']';
  } else {
    out = '{';
    let first = true;
    for (const k of sortedKeys(value)) {
      const v = text((value as Record<string, unknown>)[k], k, ancestors);
      if (v === undefined) continue;
      out += `${first ? '' : ','}${quoted(k)}${v}`;
      first = false;
    }
    out += '}';
  }
  ancestors.pop();
  return out;
}
