import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { haproxyWord } from '../../src/templating/escape.ts';
import { compareKeys, createHelpers, identifier } from '../../src/templating/helpers.ts';
import { readOnly } from '../../src/templating/readonly.ts';

const h = createHelpers({ maps: new Set(['hosts.map']), files: new Set(['503.http']), certs: new Set(['site.pem']) });

function aborts(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof TemplateAbort && pattern.test(e.reason));
}

describe('helpers', () => {
  it('is frozen, so a template cannot replace a helper for later templates', () => {
    assert.equal(Object.isFrozen(h), true);
  });

  describe('paths', () => {
    it('gives paths relative to the directory of haproxy.cfg', () => {
      assert.equal(h.mapPath('hosts.map'), 'maps/hosts.map');
      assert.equal(h.filePath('503.http'), 'general/503.http');
      assert.equal(h.certPath('site.pem'), 'ssl/site.pem');
    });

    it('rejects names that are not templates of that kind', () => {
      aborts(() => h.mapPath('other.map'), /no maps template named "other.map" \(defined: hosts.map\)/);
      aborts(() => h.certPath('hosts.map'), /no certs template named "hosts.map"/);
    });

    it('rejects names that are not plain file names', () => {
      aborts(() => h.mapPath('../hosts.map'), /not a valid file name/);
      aborts(() => h.filePath(undefined as unknown as string), /undefined is not a valid file name/);
    });
  });

  it('word() is the haproxy.cfg escape', () => {
    for (const value of ['plain', 'a b', "it's", 8080]) assert.equal(h.word(value), haproxyWord(value));
    aborts(() => h.word('a\nb'), /U\+000A/);
  });

  describe('identifier', () => {
    it('joins safe parts with _ unchanged', () => {
      assert.equal(identifier('default', 'web-svc', 8080), 'default_web-svc_8080');
      assert.equal(identifier('my.ns'), 'my.ns');
    });

    it('sanitizes other input and adds a hash of the exact parts', () => {
      const id = identifier('team a', 'svc/x');
      assert.match(id, /^team_a_svc_x:[0-9a-f]{16}$/);
      assert.equal(identifier('team a', 'svc/x'), id, 'deterministic');
    });

    it('only ever produces haproxy name characters', () => {
      for (const parts of [['a b'], ['ünïcode', '😀'], ['x\ny'], [''], ['a:b', 'c_d'], ['#', "'", '"']]) {
        assert.match(identifier(...parts), /^[A-Za-z0-9_.:-]+$/, JSON.stringify(parts));
      }
    });

    it('keeps distinct inputs distinct where naive sanitizing would merge them', () => {
      const pairs: unknown[][][] = [
        [['a_b', 'c'], ['a', 'b_c']],
        [['a b'], ['a_b']],
        [['a b'], ['a/b']],
        [['x', 'y'], ['x_y']],
        [['a', ''], ['a']],
        [['a:b'], ['a', 'b']],
        [['1', '2'], [1, 2, '']],
      ];
      for (const [left, right] of pairs) {
        assert.notEqual(identifier(...(left as unknown[])), identifier(...(right as unknown[])), `${JSON.stringify(left)} vs ${JSON.stringify(right)}`);
      }
      assert.equal(identifier('1', '2'), identifier(1, 2), 'numbers are written as their text');
    });

    it('shortens long sanitized input but keeps it distinct', () => {
      const a = identifier('x '.repeat(100) + 'a');
      const b = identifier('x '.repeat(100) + 'b');
      assert.ok(a.length < 120);
      assert.notEqual(a, b);
    });

    it('rejects missing and non-scalar parts', () => {
      aborts(() => identifier(), /at least one part/);
      aborts(() => identifier('a', undefined), /part 2 is undefined/);
      aborts(() => identifier({}), /part 1 is an object/);
    });
  });

  describe('sortBy', () => {
    const items = [
      { name: 'b', port: 10 },
      { name: 'B', port: 9 },
      { name: 'a', port: 100 },
      { port: 1 },
    ];

    it('sorts by code unit, never by locale, with missing keys last', () => {
      assert.deepEqual(
        h.sortBy(items, 'name').map((i) => i.name),
        ['B', 'a', 'b', undefined],
      );
    });

    it('sorts numbers numerically', () => {
      assert.deepEqual(
        h.sortBy(items, 'port').map((i) => i.port),
        [1, 9, 10, 100],
      );
    });

    it('takes a function or a segment list as the key, and is stable', () => {
      const byParity = h.sortBy(items, (i) => i.port % 2);
      assert.deepEqual(
        byParity.map((i) => i.port),
        [10, 100, 9, 1],
      );
      const annotated = [{ m: { 'a.b': 2 } }, { m: { 'a.b': 1 } }];
      assert.deepEqual(h.sortBy(annotated, ['m', 'a.b']), [annotated[1], annotated[0]]);
    });

    it('does not change its input', () => {
      const copy = [...items];
      h.sortBy(items, 'name');
      assert.deepEqual(items, copy);
    });

    it('orders mixed key types numbers, strings, booleans, then missing', () => {
      const keys = [true, 'x', undefined, 2, null, '1', 1n];
      assert.deepEqual(
        h.sortBy(keys, (k) => k),
        [1n, 2, '1', 'x', true, undefined, null],
      );
      assert.equal(compareKeys('a', 'b'), -1);
    });

    it('rejects keys it cannot order and inputs that are not lists', () => {
      aborts(() => h.sortBy([{ k: {} }], 'k'), /keys must be strings, numbers or booleans/);
      aborts(() => h.sortBy([{ k: NaN }], 'k'), /keys must be/);
      aborts(() => h.sortBy('abc' as unknown as string[], 'k'), /expected a list/);
      aborts(() => h.sortBy([1], 5 as unknown as string), /key must be a property path or a function/);
    });
  });

  it('uniq keeps the first of each key, or of each item', () => {
    assert.deepEqual(h.uniq([3, 1, 3, 2, 1]), [3, 1, 2]);
    const rules = [
      { host: 'a', path: '/' },
      { host: 'b', path: '/' },
      { host: 'a', path: '/x' },
    ];
    assert.deepEqual(h.uniq(rules, 'host'), [rules[0], rules[1]]);
  });

  it('groupBy returns groups sorted by key, items in list order', () => {
    const rules = [
      { host: 'b.example', path: '/1' },
      { host: 'a.example', path: '/2' },
      { host: 'b.example', path: '/3' },
    ];
    assert.deepEqual(h.groupBy(rules, 'host'), [
      ['a.example', [rules[1]]],
      ['b.example', [rules[0], rules[2]]],
    ]);
    aborts(() => h.groupBy([{ k: [] }], 'k'), /keys must be/);
  });

  it('keys and entries are sorted whatever the insertion order', () => {
    const object = { zeta: 1, alpha: 2, Beta: 3 };
    assert.deepEqual(h.keys(object), ['Beta', 'alpha', 'zeta']);
    assert.deepEqual(h.entries(object), [
      ['Beta', 3],
      ['alpha', 2],
      ['zeta', 1],
    ]);
    assert.deepEqual(h.entries(undefined), []);
    assert.deepEqual(h.keys(['x', 'y']), ['0', '1']);
    aborts(() => h.keys('text'), /expected an object/);
  });

  describe('b64decode', () => {
    it('decodes standard base64 to text', () => {
      const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
      assert.equal(h.b64decode(Buffer.from(pem).toString('base64')), pem);
      assert.equal(h.b64decode(''), '');
      assert.equal(h.b64decode(Buffer.from('héllo').toString('base64')), 'héllo');
    });

    it('rejects anything that is not strict base64 of UTF-8 text', () => {
      aborts(() => h.b64decode('not base64!'), /not standard base64/);
      aborts(() => h.b64decode('YWJj\n'), /not standard base64/);
      aborts(() => h.b64decode('YWJ'), /not standard base64/);
      aborts(() => h.b64decode(undefined), /undefined is not standard base64/);
      aborts(() => h.b64decode(Buffer.from([0xff, 0xfe, 0x00]).toString('base64')), /not UTF-8/);
    });
  });

  it('isHostname accepts DNS names and a leading wildcard only', () => {
    for (const ok of ['example.com', 'a', 'xn--bcher-kva.example', '*.example.com', 'a-b.c0']) assert.equal(h.isHostname(ok), true, ok);
    for (const bad of ['', '-a.com', 'a-.com', 'a..b', 'a b', 'a.*.com', '*', 'exa_mple.com', 'a.com.', `${'a'.repeat(64)}.com`, 'x'.repeat(254), 5]) {
      assert.equal(h.isHostname(bad), false, String(bad));
    }
  });

  it('isPath accepts absolute URL paths only', () => {
    for (const ok of ['/', '/api/v1', '/a%20b', "/~user/x.y-z_(1)!$&'*+,;=:@"]) assert.equal(h.isPath(ok), true, ok);
    for (const bad of ['', 'api', '/a b', '/a?b', '/a#b', '/a%2', '/a\nb', '/é', undefined]) assert.equal(h.isPath(bad), false, String(bad));
  });

  it('fail aborts with the given message', () => {
    aborts(() => h.fail('no backend for example.com'), /^no backend for example.com$/);
    aborts(() => h.fail(42), /^42$/);
  });

  describe('get', () => {
    const svc = { metadata: { name: 'web', annotations: { 'haproxy.org/timeout': '5s' } }, spec: { ports: [{ port: 80 }] }, empty: null };

    it('follows dotted paths and segment lists', () => {
      assert.equal(h.get(svc, 'metadata.name'), 'web');
      assert.equal(h.get(svc, 'spec.ports.0.port'), 80);
      assert.equal(h.get(svc, ['metadata', 'annotations', 'haproxy.org/timeout']), '5s');
      assert.equal(h.get(svc, ['spec', 'ports', 0, 'port']), 80);
    });

    it('returns the fallback for missing, null or non-object steps', () => {
      assert.equal(h.get(svc, 'metadata.labels.app', 'none'), 'none');
      assert.equal(h.get(svc, 'empty', 'dflt'), 'dflt');
      assert.equal(h.get(svc, 'metadata.name.length', 'n/a'), 'n/a');
      assert.equal(h.get(undefined, 'a'), undefined);
    });

    it('never reads through prototypes', () => {
      assert.equal(h.get(svc, 'constructor', 'none'), 'none');
      assert.equal(h.get(svc, '__proto__.toString', 'none'), 'none');
      assert.equal(h.get(svc, 'metadata.hasOwnProperty', 'none'), 'none');
    });

    it('works on the read-only views templates get', () => {
      assert.equal(h.get(readOnly(svc), ['metadata', 'annotations', 'haproxy.org/timeout']), '5s');
    });
  });
});
