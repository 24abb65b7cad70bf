import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { HaproxyProcess } from '../../src/local/haproxy-process.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';

const config = (port: number, backendPort: number, extra = '') => `global
  log stdout format raw local0
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:${port}
  default_backend be
backend be
  balance roundrobin
  server s1 127.0.0.1:${backendPort}
${extra}`;

describe('HaproxyProcess (real haproxy, master-worker)', () => {
  let dir: string;
  let port: number;
  let haproxy: HaproxyProcess;
  const echoes: Awaited<ReturnType<typeof startEcho>>[] = [];
  /** What the work given to start saw, each time it ran. */
  const duringStart: { spawned: boolean; ended: boolean }[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-proc-'));
    port = await freePort();
    echoes.push(await startEcho('one'), await startEcho('two'));
    await writeFile(join(dir, 'haproxy.cfg'), config(port, echoes[0]!.port));
    haproxy = new HaproxyProcess({ bin: 'haproxy', stateDir: dir });
    let ended = false;
    await haproxy.start(() => duringStart.push({ spawned: haproxy.running, ended }));
    ended = true;
  });

  after(async () => {
    await haproxy.stop();
    await Promise.all(echoes.map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('starts and serves traffic', async () => {
    assert.deepEqual(await get(port), { status: 200, body: 'one\n' });
  });

  it('runs the work given to the start once, with haproxy spawned and before the start ends', () => {
    assert.deepEqual(duringStart, [{ spawned: true, ended: false }]);
  });

  it('sends runtime commands to the current worker', async () => {
    const state = await haproxy.runtime('show servers state be');
    assert.match(state, new RegExp(`be 1 s1 127\\.0\\.0\\.1 .* ${echoes[0]!.port} `));
  });

  it('pipelines runtime commands over one connection, each answer to its command', async () => {
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => [haproxy.runtime(`add server be/p${i} 127.0.0.1:${10_000 + i}`), haproxy.runtime(`del server be/missing${i}`)]).flat(),
    );
    for (let i = 0; i < 200; i++) {
      assert.equal(replies[2 * i]!.trim(), 'New server registered.');
      assert.equal(replies[2 * i + 1]!.trim(), 'No such server.');
    }
    assert.equal((await haproxy.runtime('show servers state be')).split('\n').filter((l) => / p\d+ 127\.0\.0\.1 /.test(l)).length, 200);
    const removed = await Promise.all(Array.from({ length: 200 }, (_, i) => haproxy.runtime(`del server be/p${i}`)));
    assert.deepEqual(new Set(removed.map((r) => r.trim())), new Set(['Server deleted.']));
  });

  it('confirms a successful reload through show proc', async () => {
    const before = await haproxy.showProc();
    await writeFile(join(dir, 'haproxy.cfg'), config(port, echoes[1]!.port));
    assert.deepEqual(await haproxy.reload(), { ok: true });
    const after = await haproxy.showProc();
    assert.equal(after.reloads, before.reloads + 1);
    assert.notDeepEqual(after.workers.map((w) => w.pid), before.workers.map((w) => w.pid));
    assert.deepEqual(await get(port), { status: 200, body: 'two\n' });
    // The reload dropped the runtime connection; the next command opens another, to the new worker.
    assert.match(await haproxy.runtime('show servers state be'), new RegExp(`be 1 s1 127\\.0\\.0\\.1 .* ${echoes[1]!.port} `));
  });

  it('reports a refused reload with haproxy own message, and keeps serving the old config', async () => {
    await writeFile(join(dir, 'haproxy.cfg'), config(port, echoes[0]!.port, '  bogus-keyword\n'));
    const result = await haproxy.reload();
    assert.equal(result.ok, false);
    assert.match((result as { message: string }).message, /parsing \[haproxy\.cfg:14\] : unknown keyword 'bogus-keyword' in 'backend' section/);
    assert.deepEqual(await get(port), { status: 200, body: 'two\n' });
  });

  it('stops haproxy and every worker', async () => {
    const pid = Number((await readFile(join(dir, 'haproxy.pid'), 'utf8')).trim());
    const workers = (await haproxy.showProc()).workers.map((w) => w.pid);
    await haproxy.stop();
    for (const p of [pid, ...workers]) assert.throws(() => process.kill(p, 0), /ESRCH/, `process ${p} is gone`);
    await assert.rejects(get(port));
  });

  it('fails to start on a config haproxy refuses, with its message', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'haprx-proc-bad-'));
    after(() => rm(bad, { recursive: true, force: true }));
    await writeFile(join(bad, 'haproxy.cfg'), 'global\n  nonsense-directive\n');
    const p = new HaproxyProcess({ bin: 'haproxy', stateDir: bad });
    await assert.rejects(p.start(), /haproxy did not start: .*unknown keyword 'nonsense-directive'/s);
  });
});

describe('HaproxyProcess collecting what a start printed (real haproxy)', () => {
  it('hands over the lines of a start, and no more than 4 MiB of them however much haproxy prints', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'haprx-proc-output-'));
    after(() => rm(dir, { recursive: true, force: true }));
    // 30k backends with long names, each with a keyword haproxy ignores in a backend: a WARNING of some 200 bytes for
    // each (6 MiB); the unknown keyword at the end makes haproxy refuse the file once it has read it all.
    const long = 'x'.repeat(80);
    const backends = Array.from({ length: 30_000 }, (_, i) => `backend be_${i}_${long}\n  option httplog`).join('\n');
    await writeFile(join(dir, 'haproxy.cfg'), `defaults\n  mode http\n${backends}\nbackend last\n  unknown-keyword\n`);
    const p = new HaproxyProcess({ bin: 'haproxy', stateDir: dir });
    const output: string[] = [];
    await assert.rejects(p.start(undefined, output), /haproxy did not start/);
    const bytes = output.reduce((n, line) => n + line.length + 1, 0);
    assert.ok(output.filter((l) => l.includes('option httplog')).length > 10_000, `${output.length} lines collected`);
    assert.ok(bytes <= 4 * 1024 * 1024, `${bytes} bytes collected`);
    assert.ok(output.some((l) => l.includes(`be_0_${long}`)), 'the first lines are kept');
  });
});

describe('HaproxyProcess with a binary that cannot be run', () => {
  it('fails to start instead of waiting forever', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'haprx-proc-missing-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const p = new HaproxyProcess({ bin: join(dir, 'no-such-haproxy'), stateDir: dir, startTimeoutMs: 60_000 });
    const started = Date.now();
    await assert.rejects(p.start(), /haproxy did not start: cannot start .*no-such-haproxy: spawn .* ENOENT/);
    assert.ok(Date.now() - started < 5_000);
  });
});

describe('HaproxyProcess with a configuration that takes haproxy long to read (real haproxy)', () => {
  // At 10k certificates haproxy 2.6 needs 6.8 s to start and 6.6-7.9 s to reload on a
  // 2-core machine; a slower or busier one needs more. A Lua file that sleeps while
  // it is loaded stands in for them: 12 s to start, 16 s to reload.
  it('waits for a start and a reload that take longer than 10 and 15 s, by default', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'haprx-proc-slow-'));
    const p = new HaproxyProcess({ bin: 'haproxy', stateDir: dir });
    after(async () => {
      await p.stop();
      await rm(dir, { recursive: true, force: true });
    });
    const port = await freePort();
    const slow = (seconds: number) => writeFile(join(dir, 'slow.lua'), `os.execute("sleep ${seconds}")\n`);
    await writeFile(join(dir, 'haproxy.cfg'), `global\n  lua-load slow.lua\ndefaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\nfrontend fe\n  bind 127.0.0.1:${port}\n  http-request return status 200\n`);
    await slow(12);
    const started = Date.now();
    await p.start();
    assert.ok(Date.now() - started >= 12_000, 'the start took the time the configuration asked for');
    await slow(16);
    assert.deepEqual(await p.reload(), { ok: true });
  });
});
