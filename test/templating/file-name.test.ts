import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sanitizeFileName } from '../../src/dataplane/storage.ts';
import { isFileName } from '../../src/templating/escape.ts';
import { LONG_LENGTH, MAX_SHORT, fileName } from '../../src/templating/file-name.ts';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { hostileStrings } from '../templates/hostile.ts';

/** Reads a short name back into its parts, by the encoding's own rules; throws on anything else. */
function decode(name: string): string[] {
  if (name === '_') return [''];
  const parts: string[] = [''];
  for (let i = 0; i < name.length; ) {
    const c = name[i]!;
    if (/[a-z0-9-]/.test(c)) {
      parts[parts.length - 1] += c;
      i++;
    } else if (c !== '_') throw new Error(`unexpected ${c}`);
    else if (name[i + 1] === '_') {
      parts.push('');
      i += 2;
    } else if (name[i + 1] === 'u') {
      const hex = name.slice(i + 2, i + 8);
      assert.match(hex, /^[0-9a-f]{6}$/);
      parts[parts.length - 1] += String.fromCodePoint(parseInt(hex, 16));
      i += 8;
    } else {
      const hex = name.slice(i + 1, i + 3);
      assert.match(hex, /^[0-9a-f]{2}$/);
      parts[parts.length - 1] += String.fromCodePoint(parseInt(hex, 16));
      i += 3;
    }
  }
  return parts;
}

const dnsLabel = (n: number, seed: string) => (seed.repeat(Math.ceil(n / seed.length)).slice(0, n - 1) + 'z').replace(/^-/, 'a');

/** Valid Kubernetes namespaces and names at their edges, and hostile strings as local mode may hold. */
function corpus(): [string, string][] {
  const namespaces = ['default', 'shop', 'a', 'kube-system', dnsLabel(63, 'abc-'), dnsLabel(63, 'abc-').slice(0, 62) + 'y'];
  const names = [
    'tls',
    'tls.example',
    'tls-example',
    'tls_example',
    'a.b.c',
    'a-b.c',
    'a.b-c',
    `${'x'.repeat(62)}.${'y'.repeat(62)}.${'z'.repeat(62)}.${'w'.repeat(63)}`,
    `${'x'.repeat(62)}.${'y'.repeat(62)}.${'z'.repeat(62)}.${'w'.repeat(62)}v`,
  ];
  const pairs: [string, string][] = [];
  for (const ns of namespaces) for (const name of names) pairs.push([ns, name]);
  const hostile = hostileStrings();
  hostile.forEach((h, i) => pairs.push([h, hostile[(i * 7) % hostile.length]!], ['shop', h]));
  pairs.push(['', ''], ['', 'a'], ['a', ''], ['a_', 'b'], ['a', '_b'], ['A', 'b'], ['a', 'b'], ['\uD800', 'x'], ['\uDC00', 'x'], ['.', '.'], ['..', '']);
  return pairs;
}

describe('h.fileName', () => {
  it('gives every tuple of a large corpus its own name: valid names at their length limits, and hostile strings', () => {
    const seen = new Map<string, string>();
    let long = 0;
    for (const pair of corpus()) {
      const name = fileName(...pair);
      const key = JSON.stringify(pair);
      const other = seen.get(name);
      assert.ok(other === undefined || other === key, `${key} and ${other} both give ${name}`);
      seen.set(name, key);
      if (name.length > MAX_SHORT) long++;
      else assert.deepEqual(decode(name), pair, `${name} reads back as the parts it came from`);
    }
    assert.ok(seen.size > 2000, `${seen.size} distinct tuples`);
    assert.ok(long > 10, 'long names (with a hash) are among them');
  });

  it('is a safe, bounded, lower-case file name that storage keeps as it is', () => {
    for (const pair of corpus()) {
      const name = fileName(...pair);
      assert.match(name, /^[a-z0-9_-]+$/, JSON.stringify(pair));
      assert.ok(!name.includes('..') && !name.includes('/'));
      assert.ok(name.length <= MAX_SHORT || name.length === LONG_LENGTH, `${name.length} characters`);
      assert.ok(isFileName(`${name}.pem`));
      // The Data Plane API rewrites other characters to "_": nothing to rewrite here, so no two files can meet.
      assert.equal(sanitizeFileName(`haprx-${name}.pem`), `haprx-${name}.pem`);
    }
  });

  it('keeps readable names readable, and tells case and separators apart', () => {
    assert.equal(fileName('shop', 'tls-example'), 'shop__tls-example');
    assert.equal(fileName('shop', 'tls.example'), 'shop__tls_2eexample');
    assert.equal(fileName('my ns', 'x'), 'my_20ns__x');
    assert.notEqual(fileName('A'), fileName('a'));
    assert.notEqual(fileName('a_', 'b'), fileName('a', '_b'));
    assert.notEqual(fileName('a', 'b'), fileName('a__b'));
    assert.equal(fileName(''), '_');
    assert.equal(fileName(7), fileName('7'));
  });

  it('costs no more than its hash for a huge value', () => {
    const started = performance.now();
    const name = fileName('x'.repeat(5_000_000), 'y');
    assert.equal(name.length, LONG_LENGTH);
    assert.ok(performance.now() - started < 1_000);
  });

  it('refuses parts that are not strings or numbers', () => {
    for (const bad of [[], [null], [{}], [['a']], [NaN], [undefined]]) {
      assert.throws(() => fileName(...bad), TemplateAbort, JSON.stringify(bad));
    }
  });
});
