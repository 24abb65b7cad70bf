import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { auxText, haproxyWord, isFileName, mapKey } from '../../src/templating/escape.ts';
import { haproxyWords } from './support.ts';

function aborts(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof TemplateAbort && pattern.test(e.reason));
}

/** A small deterministic generator, so that the property test is reproducible. */
function* randomStrings(seed: number, count: number): Generator<string> {
  const pool = ['a', 'Z', '0', ' ', "'", '"', '\\', '#', '$', '{', '}', '%', '.', 'é', '\u00a0', '€', '😀'];
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state;
  };
  for (let n = 0; n < count; n++) {
    const length = 1 + (next() % 12);
    let s = '';
    for (let i = 0; i < length; i++) s += pool[next() % pool.length];
    yield s;
  }
}

describe('haproxyWord', () => {
  it('writes safe values unchanged', () => {
    for (const value of ['backend_1', 'example.com', '/path/to', 'a:b', 'é', '{x}']) assert.equal(haproxyWord(value), value);
  });

  it('writes numbers, bigints and booleans as text', () => {
    assert.equal(haproxyWord(8080), '8080');
    assert.equal(haproxyWord(-0), '0');
    assert.equal(haproxyWord(1.5), '1.5');
    assert.equal(haproxyWord(12n), '12');
    assert.equal(haproxyWord(true), 'true');
  });

  it('quotes whitespace, quotes, #, backslash and $ into a single word', () => {
    for (const value of ['a b', "it's", 'say "hi"', 'x#y', 'a\\b', '$HOME', "'", "''", ' lead', 'trail ', 'a  b']) {
      const written = haproxyWord(value);
      assert.notEqual(written, value);
      assert.deepEqual(haproxyWords(`set-header X ${written} if TRUE`), ['set-header', 'X', value, 'if', 'TRUE'], `for ${JSON.stringify(value)}`);
    }
  });

  it('round-trips arbitrary printable strings as exactly one word', () => {
    for (const value of randomStrings(7, 500)) {
      assert.deepEqual(haproxyWords(`a ${haproxyWord(value)} b`), ['a', value, 'b'], `for ${JSON.stringify(value)}`);
    }
  });

  it('rejects control characters, which would end the line', () => {
    aborts(() => haproxyWord('x\nbind :1'), /U\+000A/);
    aborts(() => haproxyWord('x\rbind'), /U\+000D/);
    aborts(() => haproxyWord('a\0b'), /U\+0000/);
    aborts(() => haproxyWord('a\tb'), /U\+0009/);
    aborts(() => haproxyWord('a\u007fb'), /U\+007F/);
    aborts(() => haproxyWord('a\u0085b'), /U\+0085/);
  });

  it('rejects the empty string, after which HAProxy drops the remaining arguments', () => {
    aborts(() => haproxyWord(''), /empty string/);
  });

  it('rejects values that are not scalars', () => {
    aborts(() => haproxyWord(undefined), /cannot write undefined/);
    aborts(() => haproxyWord(null), /cannot write null/);
    aborts(() => haproxyWord({ a: 1 }), /cannot write an object/);
    aborts(() => haproxyWord(['a']), /cannot write an array/);
    aborts(() => haproxyWord(NaN), /cannot write NaN/);
    aborts(() => haproxyWord(Infinity), /cannot write Infinity/);
    aborts(() => haproxyWord(Symbol('s')), /cannot write a symbol/);
  });
});

describe('auxText', () => {
  it('writes values unchanged, spaces and quotes included', () => {
    assert.equal(auxText("a b 'c' #d"), "a b 'c' #d");
    assert.equal(auxText(443), '443');
  });

  it('rejects any control character, so a value cannot add a line or a column', () => {
    aborts(() => auxText('host.example.com\nevil.example.com be_evil'), /U\+000A/);
    aborts(() => auxText('a\tb'), /U\+0009/);
    aborts(() => auxText('a\r'), /U\+000D/);
    aborts(() => auxText(undefined), /cannot write undefined/);
  });
});

describe('mapKey', () => {
  it('accepts a single non-comment word', () => {
    assert.equal(mapKey('example.com'), 'example.com');
    assert.equal(mapKey('/api'), '/api');
  });

  it('rejects keys that would shift the value column or comment the line', () => {
    aborts(() => mapKey('a b'), /cannot be a map key/);
    aborts(() => mapKey(''), /cannot be a map key/);
    aborts(() => mapKey('#x'), /cannot be a map key/);
    aborts(() => mapKey('a\u00a0b'), /cannot be a map key/);
    aborts(() => mapKey('a\nb'), /U\+000A/);
  });
});

describe('isFileName', () => {
  it('accepts plain names', () => {
    for (const name of ['hosts.map', 'a', 'tls_1-2.pem', 'x.y.z', '_x', '-x']) assert.equal(isFileName(name), true, name);
  });

  it('rejects paths, hidden names and other characters', () => {
    for (const name of ['', '.hidden', '..', '.', 'a/b', '../x', '/abs', 'a b', 'é.map', 'a\\b', 'a\nb', 'x'.repeat(256)]) {
      assert.equal(isFileName(name), false, JSON.stringify(name));
    }
  });
});
