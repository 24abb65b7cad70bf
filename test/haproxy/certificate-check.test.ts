import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHECK_LIST, certificateCheck } from '../../src/haproxy/certificate-check.ts';
import { configOf } from '../../src/haproxy/plan.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedConfig, RenderedFiles } from '../../src/templating/rendered.ts';
import { selfSigned } from '../support/certificates.ts';
import { recordedChecks } from '../support/recorded-checks.ts';

const pair = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nK${body}\n-----END PRIVATE KEY-----\n`;
const MAIN = ['global', '    maxconn 100', 'defaults', '    mode http', '    timeout connect 1s', '    timeout client 1s', '    timeout server 1s', 'frontend https', '    bind 127.0.0.1:8443 ssl crt-list ssl/https.crtlist', '    http-request return status 200', ''].join('\n');
const render = (certs: Record<string, string>, more: Partial<RenderedFiles> = {}): RenderedConfig => sealRendered({ main: MAIN, maps: {}, files: {}, certs, ...more });
const check = (passed: RenderedConfig, next: RenderedConfig) => certificateCheck(passed, next, () => configOf(next));

describe('certificateCheck: what a render that changed only certificates is checked as', () => {
  const base = render({ 'a.pem': pair('A'), 'c.pem': pair('C'), 'https.crtlist': 'ssl/a.pem a.example\nssl/c.pem c.example\n' });

  it('the global section, and one bind loading the new lines and the renewed certificates, with their files', () => {
    const next = render({ 'a.pem': pair('A2'), 'b.pem': pair('B'), 'c.pem': pair('C'), 'https.crtlist': 'ssl/a.pem a.example\nssl/b.pem b.example\nssl/c.pem c.example www.c.example\n' });
    const small = check(base, next)!;
    assert.ok(small, 'a small check');
    assert.deepEqual(Object.keys(small.certs).sort(), [CHECK_LIST, 'a.pem', 'b.pem', 'c.pem']);
    assert.equal(small.certs['b.pem'], pair('B'));
    assert.equal(small.certs[CHECK_LIST], 'ssl/b.pem b.example\nssl/c.pem c.example www.c.example\nssl/a.pem\n');
    assert.match(small.main, /^global\n {4}maxconn 100\n/);
    assert.match(small.main, new RegExp(`bind 127\\.0\\.0\\.1:1 ssl crt-list ssl/\\${CHECK_LIST}\\n`));
    assert.doesNotMatch(small.main, /https\.crtlist/);
    // A host removed, with its certificate: haproxy still reads the list, so a line it keeps is checked.
    const removed = check(base, render({ 'a.pem': pair('A'), 'https.crtlist': 'ssl/a.pem a.example\n' }))!;
    assert.deepEqual(removed.certs, { 'a.pem': pair('A'), [CHECK_LIST]: 'ssl/a.pem a.example\n' });
  });

  it('checks the render whole when anything but certificates changed, or a change cannot be checked apart', () => {
    const renewed = { 'a.pem': pair('A2'), 'c.pem': pair('C'), 'https.crtlist': 'ssl/a.pem a.example\nssl/c.pem c.example\n' };
    assert.ok(check(base, render(renewed)));
    const whole: [string, RenderedConfig][] = [
      ['nothing changed', base],
      ['haproxy.cfg', sealRendered({ main: MAIN.replace('maxconn 100', 'maxconn 200'), maps: {}, files: {}, certs: renewed })],
      ['a map', render(renewed, { maps: { 'hosts.map': 'a b\n' } })],
      ['a general file', render(renewed, { files: { 'x.lua': '-- x\n' } })],
      ['the marked files', render(renewed, { referencing: ['general/x'] })],
      ['a CA file (no key)', render({ ...renewed, 'ca.pem': '-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n' })],
      ['a new line with options', render({ ...renewed, 'b.pem': pair('B'), 'https.crtlist': 'ssl/a.pem a.example\nssl/c.pem c.example\nssl/b.pem [verify optional ca-file ssl/ca.pem] b.example\n' })],
      ['a new line naming a file not rendered', render({ ...renewed, 'https.crtlist': 'ssl/a.pem a.example\nssl/c.pem c.example\n/etc/ssl/z.pem z.example\n' })],
      ['a removed certificate a line still names', render({ 'a.pem': pair('A2'), 'https.crtlist': 'ssl/a.pem a.example\nssl/c.pem c.example\n' })],
      ['a crt-list no bind loads', render({ ...renewed, 'other.crtlist': 'ssl/a.pem x.example\n' })],
      ['a file named as the check list', render({ ...renewed, [CHECK_LIST]: pair('Z') })],
      ['a crt-list left empty', render({ 'https.crtlist': '# none\n' })],
    ];
    for (const [what, next] of whole) assert.equal(check(base, next), undefined, what);
    // haproxy refuses a bind whose crt-list has no line, whatever else changed.
    const two = `${MAIN}frontend other\n    bind 127.0.0.1:9443 ssl crt-list ssl/other.crtlist\n`;
    const twoBase = sealRendered({ main: two, maps: {}, files: {}, certs: { ...base.certs, 'x.pem': pair('X'), 'other.crtlist': 'ssl/x.pem x.example\n' } });
    const emptied = sealRendered({ ...twoBase, certs: { 'x.pem': pair('X2'), 'https.crtlist': '# none\n', 'other.crtlist': 'ssl/x.pem x.example\n' } });
    assert.equal(certificateCheck(twoBase, emptied, () => configOf(emptied)), undefined, 'a crt-list left empty beside a renewal');
    const based = (global: string) => sealRendered({ main: MAIN.replace('maxconn 100', global), maps: {}, files: {}, certs: base.certs });
    for (const line of ['crt-base /etc/ssl', 'ca-base /etc/ssl']) {
      assert.equal(certificateCheck(based(line), sealRendered({ ...based(line), certs: renewed }), () => configOf(sealRendered({ ...based(line), certs: renewed }))), undefined, line);
    }
  });
});

describe('Validator: certificates checked apart (real haproxy)', () => {
  const site = selfSigned('a.example');
  const other = selfSigned('c.example');
  const added = selfSigned('b.example');
  const tls = (certs: Record<string, string>, list: string[]) => render({ ...certs, 'https.crtlist': list.map((l) => `${l}\n`).join('') });
  const base = tls({ 'a.pem': site.pem, 'c.pem': other.pem }, ['ssl/a.pem a.example', 'ssl/c.pem c.example']);

  it('passes a new certificate and a renewal on the small check, and the next change from that one too', async () => {
    const { mains, runner } = recordedChecks();
    const validator = new Validator({ haproxyBin: 'haproxy', runner });
    assert.equal((await validator.validate(base)).ok, true);
    const next = tls({ 'a.pem': selfSigned('a.example').pem, 'b.pem': added.pem, 'c.pem': other.pem }, ['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example']);
    const result = await validator.validate(next);
    assert.deepEqual({ ok: result.ok, partial: result.ok && result.partial }, { ok: true, partial: 'certificates' });
    assert.equal(mains.length, 2);
    assert.match(mains[1]!, /frontend certificate-check/);
    // Chained: the next certificate change is checked against the render that passed this way.
    const third = tls({ ...next.certs, 'd.pem': selfSigned('d.example').pem }, ['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example', 'ssl/d.pem d.example']);
    assert.equal((await validator.validate(third)).ok, true);
    assert.equal(mains.length, 3);
    assert.match(mains[2]!, /frontend certificate-check/);
  });

  it('checks the render whole when the small check fails, and reports what haproxy says of the render', async () => {
    const { mains, runner } = recordedChecks();
    const validator = new Validator({ haproxyBin: 'haproxy', runner });
    assert.equal((await validator.validate(base)).ok, true);
    // A certificate with another one's key.
    const wrong = tls({ 'a.pem': site.pem, 'b.pem': added.crt + other.key, 'c.pem': other.pem }, ['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example']);
    const result = await validator.validate(wrong);
    assert.equal(result.ok, false);
    assert.equal(mains.length, 3, 'the whole render checked after the small check');
    assert.match(mains[1]!, /frontend certificate-check/);
    assert.doesNotMatch(mains[2]!, /certificate-check/);
    assert.ok(!result.ok && result.problems.some((p) => /inconsistencies between private key and certificate loaded 'ssl\/b\.pem'/.test(p.message) && p.file === 'haproxy.cfg'), JSON.stringify(result));
    // Fixed, the next one goes on the small check again, from the last render that passed.
    assert.equal((await validator.validate(tls({ ...wrong.certs, 'b.pem': added.pem }, ['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example']))).ok, true);
    assert.equal(mains.length, 4);
    assert.match(mains[3]!, /frontend certificate-check/);
  });
});
