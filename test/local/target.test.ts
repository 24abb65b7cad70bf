import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalTarget } from '../../src/local/target.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { routingConfig } from '../support/routing-config.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { selfSigned, servedSerial } from '../support/certificates.ts';

/** The shared routing configuration, with one server `s<port>` per port. */
function config(port: number, backends: Record<string, number[]>, hosts: Record<string, string>, extra = ''): RenderedConfig {
  const servers = Object.fromEntries(Object.entries(backends).map(([name, ports]) => [name, ports.map((p) => ({ name: `s${p}`, port: p }))]));
  return routingConfig(port, servers, hosts, { extra });
}

describe('LocalTarget (real haproxy)', () => {
  let dir: string;
  let port: number;
  let target: LocalTarget;
  const steps: string[] = [];
  const echo: Record<string, Awaited<ReturnType<typeof startEcho>>> = {};
  const reloads = async () => (await target.haproxy.showProc()).reloads;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-target-'));
    port = await freePort();
    for (const name of ['a1', 'a2', 'b1']) echo[name] = await startEcho(name);
    target = new LocalTarget({ bin: 'haproxy', stateDir: dir, onStep: (s) => steps.push(`${s.kind}: ${s.detail}`) });
  });

  after(async () => {
    await target.stop();
    await Promise.all(Object.values(echo).map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('starts haproxy with the first configuration', async () => {
    const outcome = await target.deploy(config(port, { be_a: [echo.a1!.port] }, { 'a.test': 'be_a' }));
    assert.deepEqual(outcome, { ok: true, reloaded: true, runtimeOps: 0 });
    assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'a1\n' });
  });

  it('adds an endpoint at runtime: traffic reaches it and haproxy does not reload', async () => {
    const before = await reloads();
    const outcome = await target.deploy(config(port, { be_a: [echo.a1!.port, echo.a2!.port] }, { 'a.test': 'be_a' }));
    assert.deepEqual(outcome, { ok: true, reloaded: false, runtimeOps: 1 });
    const bodies = new Set<string>();
    for (let i = 0; i < 6; i++) bodies.add((await get(port, '/', 'a.test')).body);
    assert.deepEqual([...bodies].sort(), ['a1\n', 'a2\n']);
    assert.equal(await reloads(), before);
    assert.match(await readFile(join(dir, 'haproxy.cfg'), 'utf8'), new RegExp(`server s${echo.a2!.port} `), 'the files on disk follow');
  });

  it('routes a new host to an existing backend through the map, without a reload', async () => {
    const before = await reloads();
    const outcome = await target.deploy(config(port, { be_a: [echo.a1!.port, echo.a2!.port] }, { 'a.test': 'be_a', 'alias.test': 'be_a' }));
    assert.equal(outcome.reloaded, false);
    assert.equal((await get(port, '/', 'alias.test')).status, 200);
    assert.equal(await reloads(), before);
    assert.equal(await readFile(join(dir, 'maps', 'hosts.map'), 'utf8'), 'a.test be_a\nalias.test be_a\n');
  });

  it('takes a configuration that differs from the running one only in its map order as running, and writes it', async () => {
    const before = await reloads();
    // What a full render does after the fast path appended an entry its template sorts elsewhere.
    const reordered = config(port, { be_a: [echo.a1!.port, echo.a2!.port] }, { 'alias.test': 'be_a', 'a.test': 'be_a' });
    assert.notEqual(reordered.hash, target.current!.hash);
    assert.deepEqual(await target.deploy(reordered), { ok: true, reloaded: false, runtimeOps: 0 });
    assert.equal(target.current, reordered, 'the next fast path plans from it, so it must be what the target counts as running');
    assert.equal(await readFile(join(dir, 'maps', 'hosts.map'), 'utf8'), 'alias.test be_a\na.test be_a\n', 'the files on disk follow');
    assert.equal(await reloads(), before);
  });

  it('reloads once for a new backend', async () => {
    const before = await reloads();
    const outcome = await target.deploy(
      config(port, { be_a: [echo.a1!.port, echo.a2!.port], be_b: [echo.b1!.port] }, { 'a.test': 'be_a', 'alias.test': 'be_a', 'b.test': 'be_b' }),
    );
    assert.deepEqual(outcome, { ok: true, reloaded: true, runtimeOps: 0 });
    assert.equal(await reloads(), before + 1);
    assert.deepEqual(await get(port, '/', 'b.test'), { status: 200, body: 'b1\n' });
  });

  it('removes an endpoint at runtime', async () => {
    const before = await reloads();
    const outcome = await target.deploy(
      config(port, { be_a: [echo.a2!.port], be_b: [echo.b1!.port] }, { 'a.test': 'be_a', 'alias.test': 'be_a', 'b.test': 'be_b' }),
    );
    assert.deepEqual(outcome, { ok: true, reloaded: false, runtimeOps: 1 });
    for (let i = 0; i < 4; i++) assert.equal((await get(port, '/', 'a.test')).body, 'a2\n');
    assert.equal(await reloads(), before);
  });

  it('reports a refused reload with haproxy message, restores the files and keeps serving', async () => {
    const good = target.current!;
    const outcome = await target.deploy(config(port, { be_a: [echo.a2!.port] }, { 'a.test': 'be_a' }, 'backend broken\n  bogus-directive'));
    assert.equal(outcome.ok, false);
    assert.equal(outcome.reloaded, false);
    assert.match(outcome.error!, /unknown keyword 'bogus-directive'/);
    assert.equal(await readFile(join(dir, 'haproxy.cfg'), 'utf8'), good.main, 'the previous config is back on disk');
    assert.equal(target.current, good);
    assert.equal((await get(port, '/', 'b.test')).body, 'b1\n');
  });

  it('applies fast path operations at runtime as planned, and never reloads for them', async () => {
    const before = await reloads();
    const running = target.current!;
    const next = config(port, { be_a: [echo.a1!.port, echo.a2!.port], be_b: [echo.b1!.port] }, { 'a.test': 'be_a', 'alias.test': 'be_a', 'b.test': 'be_b' });
    const ops = [{ kind: 'server-add' as const, backend: 'be_a', server: `s${echo.a1!.port}`, address: `127.0.0.1:${echo.a1!.port}`, args: [], state: 'ready' as const, health: false, agent: false }];
    assert.deepEqual(await target.deploy(next, { from: running.hash, ops }), { ok: true, reloaded: false, runtimeOps: 1 });
    assert.equal(target.current, next);
    const bodies = new Set<string>();
    for (let i = 0; i < 6; i++) bodies.add((await get(port, '/', 'a.test')).body);
    assert.deepEqual([...bodies].sort(), ['a1\n', 'a2\n']);
    // One that would need a reload is refused, and changes nothing.
    const structural = config(port, { be_a: [echo.a2!.port], be_c: [echo.b1!.port] }, { 'a.test': 'be_a' });
    const refused = await target.deploy(structural, { from: 'another configuration', ops: [] });
    assert.equal(refused.ok, false);
    assert.match(refused.error!, /^fast path: .*left to the full deployment$/);
    assert.equal(target.current, next);
    // One whose operations haproxy refuses fails, and does not reload either.
    const wrong = await target.deploy(structural, { from: next.hash, ops: [{ kind: 'server-addr', backend: 'be_nope', server: 's1', host: '127.0.0.1', port: 1 }] });
    assert.equal(wrong.ok, false);
    assert.match(wrong.error!, /^fast path: runtime command "set server be_nope\/s1" failed/);
    assert.equal(await reloads(), before);
    assert.equal(target.current, next);
  });

  it('sends the runtime commands of a large fast plan on a turn of their own, those of a small one at once', async () => {
    const running = target.current!;
    const next = config(port, { be_a: [echo.a1!.port, echo.a2!.port], be_b: [echo.b1!.port] }, { 'a.test': 'be_a', 'alias.test': 'be_a', 'b.test': 'be_b', 'c.test': 'be_b' });
    // Setting a server's address to what it is: harmless, as often as wanted.
    const same = { kind: 'server-addr' as const, backend: 'be_a', server: `s${echo.a1!.port}`, host: '127.0.0.1', port: echo.a1!.port };
    const order: string[] = [];
    const send = target.haproxy.runtime.bind(target.haproxy);
    target.haproxy.runtime = (command: string) => {
      order.push('command');
      return send(command);
    };
    try {
      setImmediate(() => order.push('turn'));
      assert.equal((await target.deploy(next, { from: running.hash, ops: Array.from({ length: 100 }, () => same) })).ok, true);
      assert.equal(order[0], 'turn', 'what waited for the event loop went first');
      order.length = 0;
      const again = config(port, { be_a: [echo.a1!.port, echo.a2!.port], be_b: [echo.b1!.port] }, { 'a.test': 'be_a', 'alias.test': 'be_a', 'b.test': 'be_b' });
      setImmediate(() => order.push('turn'));
      assert.equal((await target.deploy(again, { from: next.hash, ops: [same] })).ok, true);
      assert.equal(order[0], 'command', 'one command goes without waiting a turn');

      // Hundreds of commands are written a few hundred per turn, with what waits answered in between, and all succeed.
      order.length = 0;
      let turns = 0;
      const tick = () => {
        order.push('turn');
        if (++turns < 50) setImmediate(tick);
      };
      setImmediate(tick);
      const many = await target.deploy(next, { from: again.hash, ops: Array.from({ length: 600 }, () => same) });
      assert.deepEqual(many, { ok: true, reloaded: false, runtimeOps: 600 });
      const runs = order.join(' ').split('turn').map((run) => run.trim().split(' ').filter(Boolean).length).filter((n) => n > 0);
      assert.deepEqual(runs, [256, 256, 88], 'commands written between turns');
    } finally {
      target.haproxy.runtime = send;
    }
  });

  it('does nothing for the configuration already running', async () => {
    const before = await reloads();
    assert.deepEqual(await target.deploy(target.current!), { ok: true, reloaded: false, runtimeOps: 0 });
    assert.equal(await reloads(), before);
  });
});

/**
 * A LocalTarget on a state folder of its own, and a backend that answers the requests
 * `slow` picks after 1.5 s (the rest at once), all stopped after the test.
 */
async function busyRig(prefix: string, slow: (path: string | undefined) => boolean) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const port = await freePort();
  const backend = createServer((req, res) => (slow(req.url) ? setTimeout(() => res.end('slow\n'), 1_500) : res.end('fast\n')));
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const slowPort = (backend.address() as { port: number }).port;
  const target = new LocalTarget({ bin: 'haproxy', stateDir: dir });
  after(async () => {
    await target.stop();
    backend.closeAllConnections();
    await new Promise((r) => backend.close(r));
    await rm(dir, { recursive: true, force: true });
  });
  return { port, slowPort, target };
}

describe('LocalTarget deleting a busy server (real haproxy)', () => {
  it('does not reload: the server leaves rotation at once and is deleted when its request ends', async () => {
    // A backend that answers after 1.5 s, so a request is in flight during the deletion.
    const { port, slowPort, target } = await busyRig('haprx-target-busy-', () => true);
    await target.deploy(config(port, { be_s: [slowPort] }, { 's.test': 'be_s' }));
    const reloadsBefore = (await target.haproxy.showProc()).reloads;

    const inFlight = get(port, '/', 's.test');
    await new Promise((r) => setTimeout(r, 300));
    const outcome = await target.deploy(config(port, { be_s: [] }, { 's.test': 'be_s' }));
    assert.deepEqual(outcome, { ok: true, reloaded: false, runtimeOps: 1 });
    assert.deepEqual(target.deletionsPending, [`be_s/s${slowPort}`], 'haproxy refused the delete while the request runs');
    assert.equal((await get(port, '/', 's.test')).status, 503, 'no new traffic reaches it');
    assert.deepEqual(await inFlight, { status: 200, body: 'slow\n' }, 'the request in flight completes');

    const deadline = Date.now() + 20_000;
    while (target.deletionsPending.length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(target.deletionsPending, []);
    assert.doesNotMatch(await target.haproxy.runtime('show servers state be_s'), new RegExp(`s${slowPort} `));
    assert.equal((await target.haproxy.showProc()).reloads, reloadsBefore);
  });

  it('takes back a server whose deletion still waits when it is wanted again: no reload, traffic reaches it, it is not deleted later', async () => {
    // /slow answers after 1.5 s, so a request is in flight during the deletion; the rest at once.
    const { port, slowPort, target } = await busyRig('haprx-target-readd-', (path) => path === '/slow');
    const wanted = config(port, { be_s: [slowPort] }, { 's.test': 'be_s' });
    await target.deploy(wanted);
    const reloadsBefore = (await target.haproxy.showProc()).reloads;

    const inFlight = get(port, '/slow', 's.test');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(await target.deploy(config(port, { be_s: [] }, { 's.test': 'be_s' })), { ok: true, reloaded: false, runtimeOps: 1 });
    assert.deepEqual(target.deletionsPending, [`be_s/s${slowPort}`], 'the deletion waits for the request');
    assert.equal((await get(port, '/', 's.test')).status, 503);

    const outcome = await target.deploy(wanted);
    assert.deepEqual(outcome, { ok: true, reloaded: false, runtimeOps: 1 });
    assert.deepEqual(target.deletionsPending, [], 'the deletion is called off');
    assert.deepEqual(await get(port, '/', 's.test'), { status: 200, body: 'fast\n' }, 'traffic reaches it again');
    assert.deepEqual(await inFlight, { status: 200, body: 'slow\n' }, 'the request in flight completes');

    // Past the time a deletion retry would have fired once its connections closed.
    await new Promise((r) => setTimeout(r, 2_500));
    assert.match(await target.haproxy.runtime('show servers state be_s'), new RegExp(`s${slowPort} `), 'the server is still there');
    assert.deepEqual(await get(port, '/', 's.test'), { status: 200, body: 'fast\n' });
    assert.equal((await target.haproxy.showProc()).reloads, reloadsBefore, 'haproxy never reloaded');

    // Gone for good, it is deleted for real.
    assert.deepEqual(await target.deploy(config(port, { be_s: [] }, { 's.test': 'be_s' })), { ok: true, reloaded: false, runtimeOps: 1 });
    const deadline = Date.now() + 20_000;
    while (target.deletionsPending.length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(target.deletionsPending, []);
    assert.doesNotMatch(await target.haproxy.runtime('show servers state be_s'), new RegExp(`s${slowPort} `), 'no server is left in maintenance');
    assert.equal((await target.haproxy.showProc()).reloads, reloadsBefore);
  });
});

/**
 * A LocalTarget on a real haproxy for the tests of one describe: an HTTPS front end on a
 * port of its own whose crt-list is ssl/https.crtlist, routing to one echo server.
 * `first` is deployed before the tests, and must start haproxy.
 */
function tlsTarget(prefix: string, first: () => RenderedConfig) {
  const fx = { dir: '', port: 0, tlsPort: 0, steps: [] as string[], target: undefined as unknown as LocalTarget, echo: undefined as unknown as Awaited<ReturnType<typeof startEcho>> };
  before(async () => {
    fx.dir = await mkdtemp(join(tmpdir(), prefix));
    fx.port = await freePort();
    fx.tlsPort = await freePort();
    fx.echo = await startEcho('a1');
    fx.target = new LocalTarget({ bin: 'haproxy', stateDir: fx.dir, onStep: (s) => fx.steps.push(`${s.kind}: ${s.detail}`) });
    assert.deepEqual(await fx.target.deploy(first()), { ok: true, reloaded: true, runtimeOps: 0 });
  });
  after(async () => {
    await fx.target.stop();
    await fx.echo.close();
    await rm(fx.dir, { recursive: true, force: true });
  });
  /** The routing configuration with that front end, `hosts` routed to the echo server. */
  const config = (hosts: readonly string[], certs: Record<string, string>) =>
    routingConfig(fx.port, { be_a: [{ name: 's1', port: fx.echo.port }] }, Object.fromEntries(hosts.map((h) => [h, 'be_a'])), {
      extra: ['frontend fe_tls', `  bind 127.0.0.1:${fx.tlsPort} ssl crt-list ssl/https.crtlist`, '  default_backend be_a'].join('\n'),
      certs,
    });
  const reloads = async () => (await fx.target.haproxy.showProc()).reloads;
  return { fx, config, reloads };
}

describe('LocalTarget renewing a certificate (real haproxy)', () => {
  const first = selfSigned('tls.test');
  const renewed = selfSigned('tls.test');
  const spare = selfSigned('spare.test');
  /** The crt-list serves `site` for tls.test; `spare.pem` is loaded by nothing. */
  const withCerts = (site: string, sparePem = spare.pem) => config(['tls.test'], { 'site.pem': site, 'spare.pem': sparePem, 'https.crtlist': 'ssl/site.pem tls.test\n' });
  const { fx, config, reloads } = tlsTarget('haprx-certs-', () => withCerts(first.pem));

  it('replaces a renewed certificate at runtime: new handshakes get it, haproxy does not reload, the file on disk follows', async () => {
    assert.equal(await servedSerial(fx.tlsPort, 'tls.test'), first.serial);
    const before = await reloads();
    assert.deepEqual(await fx.target.deploy(withCerts(renewed.pem)), { ok: true, reloaded: false, runtimeOps: 1 });
    assert.equal(await servedSerial(fx.tlsPort, 'tls.test'), renewed.serial);
    assert.equal(await reloads(), before);
    assert.equal(await readFile(join(fx.dir, 'ssl', 'site.pem'), 'utf8'), renewed.pem);
    assert.ok(fx.steps.includes('runtime: cert-set site.pem'), fx.steps.join('\n'));
  });

  it('reloads when haproxy refuses the replacement (a certificate no configuration line loads), and serves on', async () => {
    const before = await reloads();
    const outcome = await fx.target.deploy(withCerts(renewed.pem, selfSigned('spare.test').pem));
    assert.deepEqual(outcome, { ok: true, reloaded: true, runtimeOps: 0 });
    assert.equal(await reloads(), before + 1);
    assert.ok(fx.steps.includes("fallback: runtime command \"set ssl cert\" failed: Can't replace a certificate which is not referenced by the configuration!\nCan't update ssl/spare.pem!"), fx.steps.join('\n'));
    assert.equal(await servedSerial(fx.tlsPort, 'tls.test'), renewed.serial);
  });
});

describe('LocalTarget adding and removing TLS hosts (real haproxy)', () => {
  const site = selfSigned('tls.test');
  const added = selfSigned('b.test');
  /** The crt-list serves site.pem for tls.test, and each of `more` (file → [pem, its hosts]) for its hosts. */
  const withHosts = (more: Record<string, [string, string]>) =>
    config(['tls.test', ...Object.values(more).map(([, hosts]) => hosts.split(' ')[0]!)], {
      'site.pem': site.pem,
      ...Object.fromEntries(Object.entries(more).map(([file, [pem]]) => [file, pem])),
      'https.crtlist': ['ssl/site.pem tls.test', ...Object.entries(more).map(([file, [, hosts]]) => `ssl/${file} ${hosts}`)].map((l) => `${l}\n`).join(''),
    });
  const { fx, config, reloads } = tlsTarget('haprx-hosts-', () => withHosts({}));

  it('serves a new host its own certificate without a reload, as a fresh start on the files does', async () => {
    assert.equal(await servedSerial(fx.tlsPort, 'b.test'), site.serial);
    const before = await reloads();
    const next = withHosts({ 'b.pem': [added.pem, 'b.test'] });
    // The certificate loaded, its crt-list line, the map entry of its host.
    assert.deepEqual(await fx.target.deploy(next), { ok: true, reloaded: false, runtimeOps: 3 });
    assert.equal(await reloads(), before);
    assert.ok(fx.steps.includes('runtime: cert-new b.pem') && fx.steps.includes('runtime: crt-list-add https.crtlist b.pem'), fx.steps.join('\n'));
    assert.equal(await servedSerial(fx.tlsPort, 'b.test'), added.serial);
    assert.equal(await servedSerial(fx.tlsPort, 'tls.test'), site.serial);
    // A name no line has still gets the first line's certificate.
    assert.equal(await servedSerial(fx.tlsPort, 'other.test'), site.serial);
    assert.equal(await readFile(join(fx.dir, 'ssl', 'https.crtlist'), 'utf8'), next.certs['https.crtlist']);
    assert.equal(await readFile(join(fx.dir, 'ssl', 'b.pem'), 'utf8'), added.pem);
    // What a fresh start on the files serves is the same.
    assert.deepEqual(await fx.target.haproxy.reload(), { ok: true });
    assert.deepEqual(await Promise.all(['b.test', 'tls.test', 'other.test'].map((n) => servedSerial(fx.tlsPort, n))), [added.serial, site.serial, site.serial]);
  });

  it('adds and removes hosts of a certificate on its line without a reload, every name served throughout', async () => {
    const before = await reloads();
    // The line of b.pem gains www.b.test: the new line goes in, then the old one goes by its number.
    // Handshakes for b.test meanwhile all get its certificate.
    let deploying = true;
    const seen: (string | undefined)[] = [];
    const handshakes = (async () => {
      while (deploying && seen.length < 500) seen.push(await servedSerial(fx.tlsPort, 'b.test'));
    })();
    const outcome = await fx.target.deploy(withHosts({ 'b.pem': [added.pem, 'b.test www.b.test'] }));
    deploying = false;
    await handshakes;
    assert.deepEqual(outcome, { ok: true, reloaded: false, runtimeOps: 2 });
    assert.ok(seen.length > 0 && seen.every((serial) => serial === added.serial), `${seen.length} handshakes: ${[...new Set(seen)].join(', ')}`);
    assert.deepEqual(await Promise.all(['b.test', 'www.b.test'].map((n) => servedSerial(fx.tlsPort, n))), [added.serial, added.serial]);
    assert.match(await fx.target.haproxy.runtime('show ssl crt-list ssl/https.crtlist'), /^ssl\/b\.pem b\.test www\.b\.test$/m);
    assert.doesNotMatch(await fx.target.haproxy.runtime('show ssl crt-list ssl/https.crtlist'), /^ssl\/b\.pem b\.test$/m);
    assert.deepEqual(await fx.target.deploy(withHosts({ 'b.pem': [added.pem, 'b.test'] })), { ok: true, reloaded: false, runtimeOps: 2 });
    assert.deepEqual(await Promise.all(['b.test', 'www.b.test'].map((n) => servedSerial(fx.tlsPort, n))), [added.serial, site.serial]);
    assert.equal(await reloads(), before);
    assert.ok(fx.steps.includes('runtime: crt-list-del https.crtlist b.pem'), fx.steps.join('\n'));
  });

  it('removes a host\'s line and certificate without a reload', async () => {
    const before = await reloads();
    assert.deepEqual(await fx.target.deploy(withHosts({})), { ok: true, reloaded: false, runtimeOps: 3 });
    assert.equal(await reloads(), before);
    assert.ok(fx.steps.includes('runtime: crt-list-del https.crtlist b.pem') && fx.steps.includes('runtime: cert-del b.pem'), fx.steps.join('\n'));
    assert.equal(await servedSerial(fx.tlsPort, 'b.test'), site.serial);
    assert.doesNotMatch(await fx.target.haproxy.runtime('show ssl cert'), /ssl\/b\.pem/);
  });

  it('falls back to a reload when haproxy refuses a new certificate; refused again, the files go back and the other hosts are served on', async () => {
    const before = await reloads();
    // A certificate with another certificate's key: haproxy refuses it at runtime and in a configuration.
    const mismatched = added.crt + site.key;
    const outcome = await fx.target.deploy(withHosts({ 'c.pem': [mismatched, 'c.test'] }));
    assert.equal(outcome.ok, false);
    assert.ok(fx.steps.includes("fallback: runtime command \"commit ssl cert\" failed: inconsistencies between private key and certificate loaded 'ssl/c.pem'.\nCan't commit ssl/c.pem!"), fx.steps.join('\n'));
    assert.match(outcome.error ?? '', /inconsistencies between private key and certificate loaded 'ssl\/c\.pem'/);
    assert.equal(await reloads(), before + 1);
    assert.equal(await servedSerial(fx.tlsPort, 'tls.test'), site.serial);
    assert.equal(await readFile(join(fx.dir, 'ssl', 'https.crtlist'), 'utf8'), 'ssl/site.pem tls.test\n');
    // The running haproxy kept what went in before the refusal (an empty store for c.pem, the map entry of
    // c.test): fixed, the host reloads once, which settles that, and the next one goes at runtime again.
    const good = selfSigned('c.test');
    assert.deepEqual(await fx.target.deploy(withHosts({ 'c.pem': [good.pem, 'c.test'] })), { ok: true, reloaded: true, runtimeOps: 0 });
    assert.ok(fx.steps.at(-1)?.startsWith('reload: haproxy still holds runtime changes of a deployment that failed (runtime command "commit ssl cert" failed'), fx.steps.at(-1));
    assert.equal(await servedSerial(fx.tlsPort, 'c.test'), good.serial);
    const third = selfSigned('d.test');
    assert.deepEqual(await fx.target.deploy(withHosts({ 'c.pem': [good.pem, 'c.test'], 'd.pem': [third.pem, 'd.test'] })), { ok: true, reloaded: false, runtimeOps: 3 });
    assert.equal(await servedSerial(fx.tlsPort, 'd.test'), third.serial);
  });
});
