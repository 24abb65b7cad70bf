import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { haproxyWord } from '../../src/templating/escape.ts';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lfText, regexEscape } from '../../src/templating/escape.ts';
import { compareKeys, createHelpers, identifier } from '../../src/templating/helpers.ts';
import { readOnly } from '../../src/templating/readonly.ts';
import { selfSigned } from '../support/certificates.ts';

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

  it('warn and certFile refuse to work outside a render', () => {
    aborts(() => h.warn('x', 'y'), /no render is running/);
    aborts(() => h.certFile('a.pem', 'x'), /no render is running/);
  });

  it('digest is 12 stable hex digits that tell parts apart', () => {
    assert.match(h.digest('a', 1), /^[0-9a-f]{12}$/);
    assert.equal(h.digest('a', 1), h.digest('a', '1'));
    assert.notEqual(h.digest('a', 'b'), h.digest('ab'));
    aborts(() => h.digest({}), /part 1 is an object/);
  });

  it('lfText doubles % so that a log-format argument stays literal', () => {
    assert.equal(h.lfText('50% off %[src]'), '50%% off %%[src]');
    assert.equal(h.lfText, lfText);
    aborts(() => h.lfText('a\nb'), /U\+000A/);
  });

  it('regexEscape escapes every PCRE metacharacter', () => {
    const text = 'a.b*c+d?e(f)[g]{h}|i^j$k\\l';
    const escaped = regexEscape(text);
    assert.equal(new RegExp(`^${escaped}$`).test(text), true);
    assert.equal(new RegExp(`^${escaped}$`).test('aXb*c+d?e(f)[g]{h}|i^j$k\\l'), false);
  });

  it('isIP and isCidr accept addresses and networks only', () => {
    for (const ok of ['10.0.0.1', '::1', 'fd00::1', '2001:db8::8a2e:370:7334']) assert.equal(h.isIP(ok), true, ok);
    for (const bad of ['300.1.1.1', '01.2.3.4', '10.0.0', 'fe80::1%eth0', 'example.com', '10.0.0.1 backup', '', 7]) assert.equal(h.isIP(bad), false, String(bad));
    for (const ok of ['10.0.0.0/8', '192.0.2.1', '::/0', '2001:db8::/32', '0.0.0.0/0']) assert.equal(h.isCidr(ok), true, ok);
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/08', '10.0.0.0/', '/8', '10.0.0.0/8 ::1']) assert.equal(h.isCidr(bad), false, bad);
  });

  it('isPort, isDuration', () => {
    for (const ok of [1, 80, 65535, '8080']) assert.equal(h.isPort(ok), true, String(ok));
    for (const bad of [0, 65536, 1.5, '080', '', 'http', -1, NaN]) assert.equal(h.isPort(bad), false, String(bad));
    for (const ok of ['30s', '500ms', '5m', '1h', '2d', '100', '10us', '24d']) assert.equal(h.isDuration(ok), true, ok);
    for (const bad of ['30 s', '1.5s', '-1s', '30sec', '25d', '', '1s\n']) assert.equal(h.isDuration(bad), false, bad);
  });

  it('isHeaderName and isHeaderValue', () => {
    for (const ok of ['X-Version', 'x_b.c', "a!#$&*+.^_`|~-"]) assert.equal(h.isHeaderName(ok), true, ok);
    for (const bad of ['', 'a b', 'a:b', "a'b", 'a%b', 'a\\b', 'a(b)', 'a,b', 'ü']) assert.equal(h.isHeaderName(bad), false, bad);
    for (const ok of ['v', 'a b, c', '"quoted" #x %y']) assert.equal(h.isHeaderValue(ok), true, ok);
    for (const bad of ['', ' lead', 'trail ', 'a\tb', 'a\nb', 'é']) assert.equal(h.isHeaderValue(bad), false, bad);
  });

  it('isRegex accepts what PCRE and JavaScript read alike', () => {
    for (const ok of ['/items/[0-9]+', '^/a(?:b|c)*$', '\\d{2,3}\\.x', 'a\\x41']) assert.equal(h.isRegex(ok), true, ok);
    for (const bad of ['(', '[]', '[^]', 'a{,2}', '(?<n>a)', '(?=a)', '\\1', '\\k<a>', '\\p{L}', '\\u0041', '\\cA', 'a\nb', '', '[\\d-z]']) {
      assert.equal(h.isRegex(bad), false, bad);
    }
  });

  describe('tlsBundle', () => {
    const a = selfSigned('a.example');
    const b = selfSigned('b.example');

    it('joins a certificate and its key into one canonical PEM bundle', () => {
      const bundle = h.tlsBundle(a.crt.replaceAll('\n', '\r\n'), a.key);
      assert.ok(bundle);
      assert.match(bundle, /^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END PRIVATE KEY-----\n$/);
      assert.equal(new X509Certificate(bundle).subject, 'CN=a.example');
    });

    it('refuses a key of another certificate, extra text, and anything that does not parse', () => {
      assert.equal(h.tlsBundle(a.crt, b.key), undefined);
      assert.equal(h.tlsBundle(`${a.crt}\nlua-load /tmp/x.lua\n`, a.key), undefined);
      assert.equal(h.tlsBundle(a.crt.replace(/[A-Za-z]{8}/, 'AAAAAAAA'), a.key), undefined);
      assert.equal(h.tlsBundle(a.key, a.key), undefined);
      assert.equal(h.tlsBundle(a.crt, `${a.key}${a.key}`), undefined);
      const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
      assert.equal(h.tlsBundle(a.crt, rsa), undefined);
      assert.equal(h.tlsBundle(undefined, a.key), undefined);
    });

    it('answers the same when asked again, in any order: what it remembers of a pair is that pair', () => {
      const first = [h.tlsBundle(a.crt, b.key), h.tlsBundle(b.crt, b.key), h.tlsBundle(a.crt, a.key), h.tlsBundle(b.crt, a.key)];
      const again = [h.tlsBundle(b.crt, a.key), h.tlsBundle(a.crt, a.key), h.tlsBundle(b.crt, b.key), h.tlsBundle(a.crt, b.key)].reverse();
      assert.deepEqual(again, first);
      assert.deepEqual(first.map((x) => x !== undefined), [false, true, true, false]);
      // Written differently, the same pair: one canonical bundle.
      assert.equal(h.tlsBundle(a.crt.replaceAll('\n', '\r\n'), a.key), first[2]);
    });
  });

  it('caBundle keeps CA certificates that parse, canonically, and refuses anything else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'haprx-ca-'));
    let ca: string;
    let key: string;
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=test ca', '-keyout', join(dir, 'k'), '-out', join(dir, 'c')], { stdio: 'ignore' });
      ca = readFileSync(join(dir, 'c'), 'utf8');
      key = readFileSync(join(dir, 'k'), 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const bundle = h.caBundle(`${ca.replaceAll('\n', '\r\n')}\n${ca}`);
    assert.ok(bundle);
    assert.equal(bundle, `${ca}${ca}`.replace(/\r/g, ''));
    assert.equal(new X509Certificate(bundle).subject, 'CN=test ca');
    assert.equal(h.caBundle(`${ca}${key}`), undefined, 'a private key is no CA');
    assert.equal(h.caBundle(`${ca}\nssl-engine x\n`), undefined);
    assert.equal(h.caBundle(ca.replace(/[A-Za-z]{8}/, 'AAAAAAAA')), undefined);
    assert.equal(h.caBundle(''), undefined);
    assert.equal(h.caBundle(7), undefined);
  });

  it('htpasswd keeps lines with usable crypt hashes and numbers the others', () => {
    const text = 'alice:$5$salt$abcdefghijklmnopqrstuvwxyz./0123456789ABCD\n\nbob:$apr1$x$y\ncarol:plain\nalice:$6$again$x\nbad user:$5$a$b\ndave:$2b$10$abcdefghijklmnopqrstuu\r\n';
    assert.deepEqual(h.htpasswd(text), {
      users: [
        { name: 'alice', hash: '$5$salt$abcdefghijklmnopqrstuvwxyz./0123456789ABCD' },
        { name: 'dave', hash: '$2b$10$abcdefghijklmnopqrstuu' },
      ],
      invalid: [3, 4, 5, 6],
    });
    assert.deepEqual(h.htpasswd(undefined), { users: [], invalid: [0] });
  });
});

