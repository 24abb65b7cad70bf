import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configOfSteps } from '../../src/haproxy/plan.ts';
import { unchangedCheckSteps } from '../../src/haproxy/unchanged-check.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import { runSteps } from '../../src/steps.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedConfig, RenderedFiles } from '../../src/templating/rendered.ts';
import { recordedChecks } from '../support/recorded-checks.ts';

const HEAD = ['global', '    maxconn 100', 'defaults', '    mode http', '    timeout connect 1s', '    timeout client 1s', '    timeout server 1s'];
const FRONTEND = ['frontend http', '    bind 127.0.0.1:18081', '    use_backend %[req.hdr(host),lower,map(maps/hosts.map)]', '    default_backend be_a'];
const backend = (name: string, servers: string[], more: string[] = []) => [`backend ${name}`, ...more, ...servers.map((s, i) => `    server s${i + 1} ${s}`)];
const cfg = (...sections: string[][]) => [...sections.flat(), ''].join('\n');
const render = (main: string, more: Partial<RenderedFiles> = {}): RenderedConfig => sealRendered({ main, maps: { 'hosts.map': 'a.example be_a\n' }, files: {}, certs: {}, ...more });
const check = (passed: RenderedConfig, next: RenderedConfig) => runSteps(unchangedCheckSteps(passed, next, configOfSteps))?.files;
const kindOf = (passed: RenderedConfig, next: RenderedConfig) => runSteps(unchangedCheckSteps(passed, next, configOfSteps))?.kind;
/** The lines of `main` with those `blank` matches left empty. */
const blanked = (main: string, blank: RegExp) => main.split('\n').map((l) => (blank.test(l) ? '' : l));

const BASE = cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001', '127.0.0.1:9002']), backend('be_b', ['127.0.0.1:9003']));

describe('unchangedCheckSteps: what a render is checked as, without what it did not change', () => {
  const base = render(BASE);

  it('the render itself, with every unchanged backend nothing names left blank, and the servers of the others, line for line', () => {
    const main = cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001', '127.0.0.1:9002']), backend('be_b', ['127.0.0.1:9003']), backend('be_c', ['127.0.0.1:9004']));
    const next = render(main, { maps: { 'hosts.map': 'a.example be_a\nc.example be_c\n' } });
    const small = check(base, next)!;
    assert.ok(small, 'a small check');
    assert.equal(kindOf(base, next), 'backends');
    // be_a is the frontend's default backend: it stays, without its servers. Nothing names be_b.
    assert.deepEqual(small.main.split('\n'), blanked(main, /^ {4}server s\d 127\.0\.0\.1:900[123]$|^backend be_b$/), 'the same lines, the unchanged blank');
    assert.match(small.main, /\nbackend be_a\n\n\n\n\nbackend be_c\n {4}server s1 127\.0\.0\.1:9004\n/);
    assert.deepEqual(small.maps, next.maps, 'the maps as rendered');
    // A changed backend keeps its servers; the others are left out.
    const moved = render(cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001', '127.0.0.2:9002']), backend('be_b', ['127.0.0.1:9003'])));
    const smallMoved = check(base, moved)!;
    assert.match(smallMoved.main, /backend be_a\n {4}server s1 127\.0\.0\.1:9001\n {4}server s2 127\.0\.0\.2:9002\n\n\n$/);
  });

  it('keeps a server line that tracks another server, and every server of a kept backend that picks servers by name', () => {
    const frontend = [...FRONTEND, '    use_backend be_u if { path /u }'];
    const tracking = render(cfg(HEAD, frontend, backend('be_a', ['127.0.0.1:9001 track be_b/s1', '127.0.0.1:9002']), backend('be_b', ['127.0.0.1:9003 check']), backend('be_u', ['127.0.0.1:9005'], ['    use-server s1 if { path /s1 }'])));
    const next = render(`${tracking.main}backend be_c\n    server s1 127.0.0.1:9004\n`);
    const small = check(tracking, next)!;
    assert.match(small.main, /backend be_a\n {4}server s1 127\.0\.0\.1:9001 track be_b\/s1\n\nbackend be_b\n\n/);
    assert.match(small.main, /backend be_u\n {4}use-server s1 if \{ path \/s1 \}\n {4}server s1 127\.0\.0\.1:9005\n/);
  });

  it('keeps an unchanged backend that a kept section names, or that names a proxy or a map that changed, or sets its id', () => {
    const deny = (name: string) => `    http-request deny if { nbsrv(${name}) lt 1 }`;
    // Both renders: be_changed's server moves; the next one adds be_new.
    const sections = (changedAt: string) => [
      HEAD,
      FRONTEND,
      backend('be_a', ['127.0.0.1:9001']),
      backend('be_named', ['127.0.0.1:9002']),
      backend('be_names_changed', ['127.0.0.1:9003'], [deny('be_changed')]),
      backend('be_changed', [changedAt]),
      backend('be_names_same', ['127.0.0.1:9005'], [deny('be_same')]),
      backend('be_same', ['127.0.0.1:9006']),
      backend('be_map', ['127.0.0.1:9007'], ['    http-request set-var(txn.x) src,map_ip(maps/ips.map)']),
      backend('be_other_map', ['127.0.0.1:9008'], ['    http-request set-var(txn.y) src,map_ip(maps/nets.map)']),
      backend('be_id', ['127.0.0.1:9009'], ['    id 7']),
      backend('be_prefix', ['127.0.0.1:9010']),
      backend('be_changed2', ['127.0.0.1:9012']),
      backend('be_names_longer', ['127.0.0.1:9013'], [deny('be_changed2')]),
    ];
    const passed = render(cfg(...sections('127.0.0.1:9004')), { maps: { 'hosts.map': 'a.example be_a\n', 'ips.map': '10.0.0.0/8 a\n', 'nets.map': '10.0.0.0/8 a\n' } });
    const main = cfg(...sections('127.0.0.2:9004'), backend('be_new', ['127.0.0.1:9011'], [deny('be_named'), deny('be_prefixed')]));
    const next = render(main, { maps: { 'hosts.map': 'a.example be_a\n', 'ips.map': '10.0.0.0/8 b\n', 'nets.map': '10.0.0.0/8 a\n' } });
    const small = check(passed, next)!;
    const kept = (name: string) => new RegExp(`^backend ${name}$`, 'm');
    for (const name of ['be_a', 'be_named', 'be_names_changed', 'be_changed', 'be_map', 'be_id', 'be_new']) assert.match(small.main, kept(name), `${name} kept`);
    // be_same is named only by be_names_same, which is left out with it; "be_prefixed" is not
    // be_prefix, and "be_changed2" not be_changed.
    for (const name of ['be_names_same', 'be_same', 'be_other_map', 'be_prefix', 'be_changed2', 'be_names_longer']) assert.doesNotMatch(small.main, kept(name), `${name} left out`);
    assert.match(small.main, /^ {4}id 7$/m);
    assert.equal(small.main.match(/^ {4}server /gm)!.length, 2, 'the servers of be_changed and be_new alone');
    assert.equal(small.main.split('\n').length, main.split('\n').length, 'line for line');
  });

  it('leaves out only server lines when more proxies changed than it searches the others for', () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => backend(`be_n${i}`, [`127.0.0.1:${10_000 + i}`]));
    const next = render(cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001', '127.0.0.1:9002']), backend('be_b', ['127.0.0.1:9003']), ...many(40)));
    const small = check(base, next)!;
    assert.equal(kindOf(base, next), 'servers');
    assert.match(small.main, /^backend be_b\n\n/m, 'its header kept, its server blank');
    const fewer = render(cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001', '127.0.0.1:9002']), backend('be_b', ['127.0.0.1:9003']), ...many(20)));
    assert.doesNotMatch(check(base, fewer)!.main, /^backend be_b$/m, 'with 20 new backends, be_b left out');
  });

  it('keeps the servers of a backend now under other defaults, or naming its defaults', () => {
    const under = check(
      render(`${BASE}defaults\n    mode tcp\nbackend be_d\n    server s1 127.0.0.1:9006\n`),
      render(`${BASE.replace('backend be_b\n', 'defaults\n    mode tcp\nbackend be_b\n')}backend be_d\n    server s1 127.0.0.1:9006\n`),
    )!;
    assert.match(under.main, /backend be_a\n\n\n/);
    assert.match(under.main, /mode tcp\nbackend be_b\n {4}server s1 127\.0\.0\.1:9003\n/);
    assert.match(under.main, /mode tcp\nbackend be_b\n {4}server s1 127\.0\.0\.1:9003\n\n\n$/, 'be_d left out: still under the same defaults');
    const named = check(render(`${BASE}defaults named\n    mode http\n`), render(`${BASE.replace('backend be_b', 'backend be_b from named')}defaults named\n    mode http\n`))!;
    assert.match(named.main, /backend be_a\n\n\n/);
    assert.match(named.main, /backend be_b from named\n {4}server s1 127\.0\.0\.1:9003\n/);
  });

  it('reads a large render in steps, with a turn between every thousand backends', () => {
    const many = (n: number) => cfg(HEAD, FRONTEND, ...Array.from({ length: n }, (_, i) => backend(`be_${i}`, [`127.0.0.1:${10_000 + i}`])));
    const steps = unchangedCheckSteps(render(many(3_000)), render(many(3_001)), configOfSteps);
    let yields = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) yields++;
    // Each pass over 3,000 backends yields at least twice: both renders indexed, compared,
    // searched for what they name, blanked. A pass in one piece held the event loop 60 ms at 10k.
    assert.ok(yields >= 15, `${yields} steps`);
    assert.equal(step.value!.files.main.match(/^ {4}server /gm)!.length, 1, 'only the new backend keeps its server');
    assert.deepEqual(step.value!.files.main.match(/^backend .*/gm), ['backend be_3000'], 'and its header: nothing names the others');
  });

  it('checks the render whole when what a left-out server depends on changed, or nothing would be left out', () => {
    const withC = (main: string) => `${main}backend be_c\n    server s1 127.0.0.1:9004\n`;
    const whole: [string, RenderedConfig, RenderedConfig][] = [
      ['nothing changed', base, base],
      ['the global section', base, render(withC(BASE.replace('maxconn 100', 'maxconn 200')))],
      ['a defaults section', base, render(withC(BASE.replace('timeout server 1s', 'timeout server 2s')))],
      ['a resolvers section', render(`${BASE}resolvers dns\n    nameserver ns1 127.0.0.1:53\n`), render(withC(`${BASE}resolvers dns\n    nameserver ns1 127.0.0.2:53\n`))],
      ['a section other than a proxy removed', render(`${BASE}userlist users\n    user a insecure-password b\n`), render(withC(BASE))],
      ['a certificate', render(BASE, { certs: { 'a.pem': 'A' } }), render(withC(BASE), { certs: { 'a.pem': 'B' } })],
      ['a general file', render(BASE, { files: { 'x.lua': '-- x' } }), render(withC(BASE), { files: { 'x.lua': '-- y' } })],
      ['the marked files', base, render(withC(BASE), { referencing: ['general/x'] })],
      ['a conditional block', base, render(withC(`${BASE}.if defined(X)\n.endif\n`))],
      ['a conditional block in the render that passed', render(`${BASE}.if defined(X)\n.endif\n`), render(withC(BASE))],
      ['a line before the first section', base, render(withC(`bad line\n${BASE}`))],
      ['every backend changed', base, render(cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.2:9001']), backend('be_b', ['127.0.0.2:9003'])))],
    ];
    for (const [what, passed, next] of whole) assert.equal(check(passed, next), undefined, what);
  });
});

describe('Validator: unchanged backends and servers left out (real haproxy)', () => {
  const withBackend = (main: string, name: string, server: string) => `${main}backend ${name}\n    server s1 ${server}\n`;

  it('passes a new backend on the small check, and the next change from that one too', async () => {
    const { mains, runner } = recordedChecks();
    const validator = new Validator({ haproxyBin: 'haproxy', runner });
    assert.equal((await validator.validate(render(BASE))).ok, true);
    const next = render(withBackend(BASE, 'be_c', '127.0.0.1:9004'), { maps: { 'hosts.map': 'a.example be_a\nc.example be_c\n' } });
    const result = await validator.validate(next);
    assert.deepEqual({ ok: result.ok, partial: result.ok && result.partial }, { ok: true, partial: 'backends' });
    assert.equal(mains.length, 2);
    assert.doesNotMatch(mains[1]!, /127\.0\.0\.1:900[123]/, 'the unchanged servers left out');
    assert.doesNotMatch(mains[1]!, /backend be_b/, 'and the unchanged backend nothing names');
    assert.match(mains[1]!, /127\.0\.0\.1:9004/);
    const third = render(withBackend(next.main, 'be_d', '127.0.0.1:9005'), { maps: next.maps });
    const again = await validator.validate(third);
    assert.deepEqual({ ok: again.ok, partial: again.ok && again.partial }, { ok: true, partial: 'backends' });
    assert.doesNotMatch(mains[2]!, /127\.0\.0\.1:900[1234]|backend be_[bc]/);
  });

  it('refuses what breaks an unchanged backend: a proxy it names removed, a map it reads made wrong, its id taken', async () => {
    const validator = new Validator({ haproxyBin: 'haproxy' });
    const refused = async (passed: string, next: string, pattern: RegExp, maps: Record<string, string> = {}, nextMaps = maps) => {
      assert.equal((await validator.validate(render(passed, { maps: { 'hosts.map': 'a.example be_a\n', ...maps } }))).ok, true, passed);
      const result = await validator.validate(render(next, { maps: { 'hosts.map': 'a.example be_a\n', ...nextMaps } }));
      assert.ok(!result.ok && result.problems.some((p) => pattern.test(p.message)), JSON.stringify(result));
    };
    const naming = cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001']), backend('be_b', ['127.0.0.1:9003'], ['    http-request deny if { nbsrv(be_x) lt 1 }']), backend('be_x', ['127.0.0.1:9005']));
    await refused(naming, withBackend(naming.replace(/backend be_x\n.*\n$/, ''), 'be_c', '127.0.0.1:9004'), /be_x/);
    const reading = cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001']), backend('be_m', ['127.0.0.1:9003'], ['    http-request set-var(txn.x) src,map_ip(maps/ips.map)']));
    await refused(reading, withBackend(reading, 'be_c', '127.0.0.1:9004'), /notanip/, { 'ips.map': '10.0.0.0/8 a\n' }, { 'ips.map': 'notanip a\n' });
    const numbered = cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001']), backend('be_i', ['127.0.0.1:9003'], ['    id 7']));
    await refused(numbered, `${numbered}backend be_c\n    id 7\n    server s1 127.0.0.1:9004\n`, /\b7\b|id/);
  });

  it('checks the render whole when the small check fails, and reports the line of the render', async () => {
    const { mains, runner } = recordedChecks();
    const validator = new Validator({ haproxyBin: 'haproxy', runner });
    assert.equal((await validator.validate(render(BASE))).ok, true);
    const bad = render(withBackend(BASE, 'be_c', '300.1.1.1:9004'));
    const result = await validator.validate(bad);
    assert.equal(result.ok, false);
    assert.equal(mains.length, 3, 'the whole render checked after the small check');
    assert.doesNotMatch(mains[1]!, /127\.0\.0\.1:9001/);
    assert.match(mains[2]!, /127\.0\.0\.1:9001/);
    const line = bad.main.split('\n').indexOf('    server s1 300.1.1.1:9004') + 1;
    assert.ok(!result.ok && result.problems.some((p) => p.file === 'haproxy.cfg' && p.line === line && /300\.1\.1\.1/.test(p.message)), JSON.stringify(result));
    // Mended, the next goes on the small check again, from the last render that passed.
    assert.equal((await validator.validate(render(withBackend(BASE, 'be_c', '127.0.0.1:9004')))).ok, true);
    assert.equal(mains.length, 4);
    assert.doesNotMatch(mains[3]!, /127\.0\.0\.1:9001/);
  });

  it('refuses what breaks an unchanged server: its resolvers gone, the server it tracks renamed', async () => {
    const validator = new Validator({ haproxyBin: 'haproxy' });
    const resolved = `${cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001 resolvers dns init-addr none']), backend('be_b', ['127.0.0.1:9003']))}resolvers dns\n    nameserver ns1 127.0.0.1:53\n`;
    assert.equal((await validator.validate(render(resolved))).ok, true);
    const gone = await validator.validate(render(withBackend(resolved.replace(/resolvers dns\n.*\n$/, ''), 'be_c', '127.0.0.1:9004')));
    assert.ok(!gone.ok && gone.problems.some((p) => /resolvers/.test(p.message)), JSON.stringify(gone));

    const tracked = cfg(HEAD, FRONTEND, backend('be_a', ['127.0.0.1:9001 track be_b/s1']), backend('be_b', ['127.0.0.1:9003 check']));
    assert.equal((await validator.validate(render(tracked))).ok, true);
    const renamed = await validator.validate(render(withBackend(tracked.replace('server s1 127.0.0.1:9003 check', 'server s2 127.0.0.1:9003 check'), 'be_c', '127.0.0.1:9004')));
    assert.ok(!renamed.ok && renamed.problems.some((p) => /be_b\/s1|unable to find/.test(p.message)), JSON.stringify(renamed));
  });

  it('checks whole after a render that passed with warnings, whose warnings the small check could not repeat', async () => {
    const { mains, runner } = recordedChecks();
    const validator = new Validator({ haproxyBin: 'haproxy', runner });
    // haproxy warns of a backend that sets a timeout the mode ignores.
    const warned = BASE.replace('backend be_b\n', 'backend be_b\n    timeout tunnel 1s\n    mode tcp\n    option httplog\n');
    const first = await validator.validate(render(warned));
    assert.ok(first.ok && first.warnings.length > 0, JSON.stringify(first));
    const next = await validator.validate(render(withBackend(warned, 'be_c', '127.0.0.1:9004')));
    assert.ok(next.ok && next.partial === undefined && next.warnings.length > 0, JSON.stringify(next));
    assert.match(mains[1]!, /127\.0\.0\.1:9001/, 'checked whole');
  });
});
