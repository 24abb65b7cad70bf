// Timeout, queueing, caching, abort and clean-up, observed through a test double of haproxy.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Validator } from '../../src/haproxy/validate.ts';
import type { ValidatorOptions } from '../../src/haproxy/validate.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';

const FAKE_HAPROXY = fileURLToPath(new URL('../support/fake-haproxy/haproxy-test-double.sh', import.meta.url));

/**
 * A structurally sound render; `tag` makes the hash differ and shows up in the double's log.
 * It stands in the global section, so that every render is checked whole (no server line is left out).
 */
function rendered(tag: string, aux: { maps?: Record<string, string>; files?: Record<string, string>; certs?: Record<string, string> } = {}): RenderedConfig {
  const main = ['global', `# tag ${tag}`, 'frontend fe', '  bind :8080', '  default_backend be', 'backend be', '  server s1 127.0.0.1:80', ''].join('\n');
  return sealRendered({ main, maps: aux.maps ?? {}, files: aux.files ?? {}, certs: aux.certs ?? {} });
}

interface Run {
  tag: string;
  pid: number;
  start: bigint;
  end?: bigint;
  child?: number;
  mode: string;
  args: string;
  files: string[];
}

let work: string;
let checkDir: string;
let log: string;

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'haprx-validate-queue-'));
  checkDir = join(work, 'checks');
  await mkdir(checkDir);
  log = join(work, 'double.log');
});

afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

function validator(options: ValidatorOptions & { sleep?: number; exit?: number; signal?: string } = {}): Validator {
  const { sleep, exit, signal, ...rest } = options;
  const env: NodeJS.ProcessEnv = { ...process.env, FAKE_HAPROXY_LOG: log };
  if (sleep !== undefined) env.FAKE_HAPROXY_SLEEP = String(sleep);
  if (exit !== undefined) env.FAKE_HAPROXY_EXIT = String(exit);
  if (signal !== undefined) env.FAKE_HAPROXY_SIGNAL = signal;
  return new Validator({ haproxyBin: FAKE_HAPROXY, tmpDir: checkDir, env, ...rest });
}

async function runs(): Promise<Run[]> {
  const text = await readFile(log, 'utf8').catch(() => '');
  const byPid = new Map<number, Run>();
  const order: Run[] = [];
  let last: Run | undefined;
  for (const line of text.split('\n')) {
    const [kind, a, b] = line.split(' ');
    if (kind === 'start') {
      const field = (name: string) => new RegExp(`${name}=(.*?)(?= \\w+=|$)`).exec(line)?.[1] ?? '';
      last = { tag: field('tag'), pid: Number(b), start: BigInt(a!), mode: field('mode'), args: field('args'), files: field('files').trim().split(' ') };
      byPid.set(last.pid, last);
      order.push(last);
    } else if (kind === 'child' && last) {
      last.child = Number(a);
    } else if (kind === 'end') {
      const run = byPid.get(Number(b));
      if (run) run.end = BigInt(a!);
    }
  }
  return order;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** True unless the process is gone or only a zombie waiting to be reaped. */
async function alive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

async function assertDead(pid: number | undefined): Promise<void> {
  assert.ok(pid !== undefined && pid > 0, 'the double should have logged the pid');
  await until(`pid ${pid} to disappear`, async () => ((await alive(pid)) ? undefined : true), 2000);
}

describe('Validator with a haproxy test double', () => {
  test('runs haproxy -c -f haproxy.cfg in a private directory holding every file, then removes it', async () => {
    const v = validator();
    const result = await v.validate(rendered('files', { maps: { 'hosts.map': 'a b\n' }, files: { '503.http': 'x' }, certs: { 'site.pem': 'y' } }));
    assert.equal(result.ok, true, JSON.stringify(result));
    const [run, ...more] = await runs();
    assert.equal(more.length, 0);
    assert.equal(run!.args, '-c -f haproxy.cfg');
    assert.equal(run!.mode, '700');
    assert.deepEqual(run!.files, ['./general/503.http', './haproxy.cfg', './maps/hosts.map', './ssl/site.pem']);
    assert.deepEqual(await readdir(checkDir), []);
  });

  test('a failing check keeps the double\'s message and location', async () => {
    const result = await validator({ exit: 1 }).validate(rendered('fails'));
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.phase, 'haproxy');
    assert.deepEqual(result.problems, [{ file: 'haproxy.cfg', line: 1, message: 'parsing [haproxy.cfg:1] : rejected by the test double' }]);
  });

  test('a check that crashes fails as one that could not run, and is not remembered', async () => {
    const v = validator({ signal: 'SEGV' });
    for (let i = 0; i < 2; i++) {
      const result = await v.validate(rendered('crash'));
      assert.equal(result.ok, false);
      assert.equal(result.cached, false);
      if (!result.ok) {
        assert.equal(result.phase, 'killed');
        assert.match(result.problems.at(-1)!.message, /SIGSEGV/);
      }
    }
    assert.equal((await runs()).length, 2);
  });

  test('a check that overruns is killed with everything it started, and reported as a timeout', async () => {
    const timeoutMs = 300;
    const v = validator({ sleep: 30, timeoutMs });
    const started = performance.now();
    const result = await v.validate(rendered('slow'));
    const elapsed = performance.now() - started;
    assert.equal(result.ok, false);
    if (!result.ok) assert.equal(result.phase, 'timeout');
    assert.ok(elapsed >= timeoutMs, `returned after ${elapsed} ms`);
    assert.ok(elapsed < timeoutMs + 1500, `returned after ${elapsed} ms`);
    const [run] = await runs();
    assert.equal(run!.end, undefined, 'the double must not have finished on its own');
    await assertDead(run!.pid);
    await assertDead(run!.child);
    assert.deepEqual(await readdir(checkDir), []);
  });

  test('concurrent validations run one at a time, in call order', async () => {
    const v = validator({ sleep: 0.15 });
    const results = await Promise.all(['a', 'b', 'c'].map((tag) => v.validate(rendered(tag))));
    assert.deepEqual(results.map((r) => r.ok), [true, true, true]);
    const all = await runs();
    assert.deepEqual(all.map((r) => r.tag), ['a', 'b', 'c']);
    for (let i = 1; i < all.length; i++) {
      const previous = all[i - 1]!;
      assert.ok(previous.end !== undefined && all[i]!.start >= previous.end, `run ${all[i]!.tag} started before run ${previous.tag} ended`);
    }
    assert.deepEqual(await readdir(checkDir), []);
  });

  test('the same render twice spawns once; a different render spawns again', async () => {
    const v = validator();
    const first = await v.validate(rendered('x'));
    const second = await v.validate(rendered('x'));
    assert.equal(first.cached, false);
    assert.equal(second.cached, true);
    assert.equal((await runs()).length, 1);
    const third = await v.validate(rendered('y'));
    assert.equal(third.cached, false);
    assert.equal((await runs()).length, 2);
  });

  test('identical renders validated concurrently spawn once', async () => {
    const v = validator({ sleep: 0.1 });
    const results = await Promise.all([v.validate(rendered('same')), v.validate(rendered('same'))]);
    assert.deepEqual(results.map((r) => r.cached), [false, true]);
    assert.equal((await runs()).length, 1);
  });

  test('haproxy\'s rejections are remembered too', async () => {
    const v = validator({ exit: 1 });
    const first = await v.validate(rendered('bad'));
    const second = await v.validate(rendered('bad'));
    assert.equal(second.cached, true);
    assert.equal(second.ok, false);
    if (!first.ok && !second.ok) assert.deepEqual(second.problems, first.problems);
    assert.equal((await runs()).length, 1);
  });

  test('a check that ran out of time gets twice as long the next time; one that finished sets the next bound to four times its run', async () => {
    const v = validator({ sleep: 0.5, timeoutMs: 200 });
    const bounds: string[] = [];
    for (const tag of ['slow', 'slow', 'slow', 'other']) {
      const result = await v.validate(rendered(tag));
      bounds.push(result.ok ? 'ok' : `${result.phase}: ${result.problems[0]!.message}`);
    }
    // 200 ms, then 400 ms run out; 800 ms is enough; then about 4 x 0.5 s, so the next passes at once.
    assert.deepEqual(bounds, ['timeout: haproxy -c did not finish within 200 ms', 'timeout: haproxy -c did not finish within 400 ms', 'ok', 'ok']);
    assert.equal((await runs()).length, 4);
  });

  test('timeouts are not remembered', async () => {
    const v = validator({ sleep: 5, timeoutMs: 100 });
    await v.validate(rendered('slow'));
    const again = await v.validate(rendered('slow'));
    assert.equal(again.cached, false);
    assert.equal((await runs()).length, 2);
  });

  test('the cache forgets the least recently used render first', async () => {
    const v = validator({ cacheSize: 2 });
    for (const tag of ['a', 'b', 'a', 'c']) await v.validate(rendered(tag)); // 'a' was used after 'b', so 'b' goes
    assert.equal((await v.validate(rendered('a'))).cached, true);
    assert.equal((await v.validate(rendered('c'))).cached, true);
    assert.equal((await v.validate(rendered('b'))).cached, false);
    assert.deepEqual((await runs()).map((r) => r.tag), ['a', 'b', 'c', 'b']);
  });

  test('cacheSize 0 turns the cache off', async () => {
    const v = validator({ cacheSize: 0 });
    await v.validate(rendered('a'));
    assert.equal((await v.validate(rendered('a'))).cached, false);
    assert.equal((await runs()).length, 2);
  });

  test('a cached verdict cannot be altered through a returned result', async () => {
    const v = validator({ exit: 1 });
    const first = await v.validate(rendered('bad'));
    if (!first.ok) first.problems.length = 0;
    const second = await v.validate(rendered('bad'));
    assert.equal(second.ok, false);
    if (!second.ok) assert.equal(second.problems.length, 1);
  });

  test('a call aborted while queued returns at once and never spawns', async () => {
    const v = validator({ sleep: 1 });
    const running = v.validate(rendered('first'));
    await until('the first run to start', async () => ((await runs()).length === 1 ? true : undefined));
    const controller = new AbortController();
    const queued = v.validate(rendered('second'), controller.signal);
    controller.abort();
    const result = await queued;
    assert.equal(result.ok, false);
    if (!result.ok) assert.equal(result.phase, 'aborted');
    assert.equal((await runs())[0]!.end, undefined, 'the aborted call must not wait for the running one');
    assert.equal((await running).ok, true);
    assert.deepEqual((await runs()).map((r) => r.tag), ['first']);
  });

  test('a call aborted while running kills the check', async () => {
    const v = validator({ sleep: 30 });
    const controller = new AbortController();
    const pending = v.validate(rendered('running'), controller.signal);
    const run = await until('the double to start its child', async () => (await runs()).find((r) => r.child !== undefined));
    const abortedAt = performance.now();
    controller.abort();
    const result = await pending;
    assert.ok(performance.now() - abortedAt < 1500);
    assert.equal(result.ok, false);
    if (!result.ok) assert.equal(result.phase, 'aborted');
    await assertDead(run.pid);
    await assertDead(run.child);
    assert.deepEqual(await readdir(checkDir), []);
    // The queue is free again, and nothing was remembered.
    assert.equal((await validator().validate(rendered('running'))).cached, false);
  });

  test('an already aborted signal never spawns', async () => {
    const result = await validator().validate(rendered('never'), AbortSignal.abort());
    assert.equal(result.ok, false);
    if (!result.ok) assert.equal(result.phase, 'aborted');
    assert.deepEqual(await runs(), []);
  });

  test('a structure problem is reported without spawning', async () => {
    const main = 'global\nfrontend fe\n  bind :8080\n  default_backend nope\n';
    const bad = sealRendered({ main, maps: {}, files: {}, certs: {} });
    const result = await validator().validate(bad);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.phase, 'structure');
      assert.deepEqual(result.problems.map((p) => [p.file, p.line]), [['haproxy.cfg', main.split('\n').indexOf('  default_backend nope') + 1]]);
    }
    assert.deepEqual(await runs(), []);
  });

  test('an executable that cannot be started is a spawn failure, not remembered', async () => {
    const v = new Validator({ haproxyBin: join(work, 'no-such-haproxy'), tmpDir: checkDir });
    for (let i = 0; i < 2; i++) {
      const result = await v.validate(rendered('nobin'));
      assert.equal(result.ok, false);
      assert.equal(result.cached, false);
      if (!result.ok) {
        assert.equal(result.phase, 'spawn');
        assert.match(result.problems[0]!.message, /ENOENT/);
      }
    }
    assert.deepEqual(await readdir(checkDir), []);
  });

  test('a check directory that cannot be created is reported, not thrown', async () => {
    const v = new Validator({ haproxyBin: FAKE_HAPROXY, tmpDir: join(work, 'missing', 'dir') });
    const result = await v.validate(rendered('nodir'));
    assert.equal(result.ok, false);
    if (!result.ok) assert.equal(result.phase, 'spawn');
  });
});
