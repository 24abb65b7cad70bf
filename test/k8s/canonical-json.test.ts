import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson } from '../../src/k8s/canonical-json.ts';

/** The reference: JSON.stringify copying each object with its keys sorted. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) Object.defineProperty(sorted, k, { value: (value as Record<string, unknown>)[k], enumerable: true, writable: true, configurable: true });
  return sorted;
}
const reference = (value: unknown) => JSON.stringify(value, sortedKeys) as string | undefined;

/** A small deterministic generator, so a failing value can be found again. */
function generator(seed: number) {
  let s = seed >>> 0;
  const next = () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const keys = ['b', 'a', 'B', '10', '2', '01', '4294967294', '4294967295', '__proto__', 'toString', 'é', 'ä', '\u{1F600}', '', 'metadata', 'name', 'kubernetes.io/service-name'];
  const leaves: unknown[] = ['', 'x', 'line\nbreak "quoted" \\', '\uD800 lone', '\u2028', 0, -0, 1.5e300, -7, NaN, Infinity, true, false, null, undefined, () => 1, Symbol('s'), new Date(Date.UTC(2026, 10, 28)), new Date(NaN)];
  const value = (depth: number): unknown => {
    const r = next();
    if (depth <= 0 || r < 0.4) return pick(leaves);
    if (r < 0.7) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth - 1));
    const object: Record<string, unknown> = next() < 0.1 ? Object.create(null) : {};
    // Defined, never assigned: '__proto__' stays an own key, as JSON.parse makes it.
    for (let i = Math.floor(next() * 5); i > 0; i--) Object.defineProperty(object, pick(keys), { value: value(depth - 1), enumerable: next() < 0.9, writable: true, configurable: true });
    return object;
  };
  return value;
}

describe('canonicalJson', () => {
  it('gives the text of JSON.stringify with every object\'s keys sorted, for 5,000 generated values', () => {
    const value = generator(16);
    for (let i = 0; i < 5_000; i++) {
      const v = value(5);
      assert.equal(canonicalJson(v), reference(v), `value ${i}`);
    }
  });

  it('sorts keys in code-unit order at every depth, integer-like keys first in numeric order, as objects list them', () => {
    const text = canonicalJson({ b: 1, a: { z: [{ y: 1, x: 2 }], '10': 0, '9': 0, '': 0, '01': 0, '4294967295': 0 } })!;
    assert.equal(text, '{"a":{"9":0,"10":0,"":0,"01":0,"4294967295":0,"z":[{"x":2,"y":1}]},"b":1}');
    assert.deepEqual(Object.keys(JSON.parse(text).a), ['9', '10', '', '01', '4294967295', 'z']);
  });

  it('calls toJSON with the key, as JSON.stringify does, and reads every other object by its own keys', () => {
    const seen: string[] = [];
    const marked = { toJSON: (key: string) => (seen.push(key), { at: key }) };
    assert.equal(canonicalJson({ when: new Date(Date.UTC(2026, 0, 2)), list: [marked], one: marked }), '{"list":[{"at":"0"}],"one":{"at":"one"},"when":"2026-01-02T00:00:00.000Z"}');
    assert.deepEqual(seen, ['0', 'one']);
    assert.equal(canonicalJson(new Map([['a', 1]])), reference(new Map([['a', 1]])));
    assert.equal(canonicalJson(Object.assign(Object.create({ inherited: 1 }), { own: 2 })), '{"own":2}');
  });

  it('has no text for what JSON has none, and refuses a BigInt and a value that contains itself', () => {
    assert.equal(canonicalJson(undefined), undefined);
    assert.equal(canonicalJson(() => 1), undefined);
    assert.throws(() => canonicalJson({ n: 1n }), TypeError);
    const cycle: Record<string, unknown> = { a: [] };
    (cycle.a as unknown[]).push({ back: cycle });
    assert.throws(() => canonicalJson(cycle), /contains itself/);
  });

  it('takes the same object twice where it does not contain itself', () => {
    const shared = { port: 80 };
    assert.equal(canonicalJson({ a: shared, b: [shared, shared] }), '{"a":{"port":80},"b":[{"port":80},{"port":80}]}');
  });

  it('keeps a bounded cache of quoted keys, and a key past the bound still comes out right', () => {
    const many = Object.fromEntries(Array.from({ length: 6_000 }, (_, i) => [`label-${i}`, i]));
    assert.equal(canonicalJson(many), reference(many));
    assert.equal(canonicalJson({ 'label-5999': 'x', 'label-0': 'y' }), '{"label-0":"y","label-5999":"x"}');
  });
});
