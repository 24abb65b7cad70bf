// The spawn helper that starts haproxy -c for the controller: real haproxy for verdicts,
// the haproxy test double for slow checks, and the helper killed or frozen under a check.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Validator } from '../../src/haproxy/validate.ts';
import { SpawnHelper } from '../../src/haproxy/spawn-helper.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { until } from '../support/until.ts';

const FAKE_HAPROXY = fileURLToPath(new URL('../support/fake-haproxy/haproxy-test-double.sh', import.meta.url));

function rendered(tag: string, server = 'server s1 127.0.0.1:80'): RenderedConfig {
  const main = [`# tag ${tag}`, 'global', 'frontend fe', '  bind :8080', '  default_backend be', 'backend be', `  ${server}`, ''].join('\n');
  return sealRendered({ main, maps: {}, files: {}, certs: {} });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Process ids of the double's sleeping children, from its log. */
async function sleepers(log: string): Promise<number[]> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return [...text.matchAll(/^child (\d+)$/gm)].map((m) => Number(m[1]));
}

let work: string;
let checkDir: string;
let log: string;
let helper: SpawnHelper;
let exits: string[];

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'haprx-spawn-helper-'));
  checkDir = join(work, 'checks');
  await mkdir(checkDir);
  log = join(work, 'double.log');
  exits = [];
  helper = new SpawnHelper({ graceMs: 1_000, onExit: (cause) => exits.push(cause) });
  helper.start();
});

afterEach(async () => {
  await helper.stop();
  await rm(work, { recursive: true, force: true });
});

function slowDouble(sleep: number, timeoutMs = 30_000): Validator {
  return new Validator({ haproxyBin: FAKE_HAPROXY, tmpDir: checkDir, cacheSize: 0, timeoutMs, runner: helper.run, env: { ...process.env, FAKE_HAPROXY_LOG: log, FAKE_HAPROXY_SLEEP: String(sleep) } });
}

describe('SpawnHelper', () => {
  test('runs in a process of its own, started before any check', () => {
    assert.equal(typeof helper.pid, 'number');
    assert.notEqual(helper.pid, process.pid);
    assert.equal(helper.starts, 1);
  });

  test('real haproxy through the helper: a valid render passes and a broken one is refused at its line', async () => {
    const validator = new Validator({ tmpDir: checkDir, cacheSize: 0, runner: helper.run });
    const good = await validator.validate(rendered('good'));
    assert.equal(good.ok, true, JSON.stringify(good));
    const bad = await validator.validate(rendered('bad', 'server s1 127.0.0.1:80 no-such-keyword'));
    assert.equal(bad.ok, false);
    assert.ok(!bad.ok && bad.phase === 'haproxy', JSON.stringify(bad));
    assert.ok(!bad.ok && bad.problems.some((p) => p.line === 7 && /no-such-keyword/.test(p.message)), JSON.stringify(bad));
    assert.equal(helper.starts, 1);
  });

  test('killed during a check: the check could not run, the next starts another helper and passes', async () => {
    const first = helper.pid!;
    const checking = slowDouble(30).validate(rendered('one'));
    await until('the double to start its child', async () => ((await sleepers(log)).length === 1 ? true : undefined), 10_000);
    const [sleeper] = await sleepers(log);
    process.kill(first, 'SIGKILL');
    const lost = await checking;
    assert.ok(!lost.ok && lost.phase === 'spawn', JSON.stringify(lost));
    assert.match(lost.ok ? '' : lost.problems[0]!.message, /spawn helper was killed by SIGKILL/);
    assert.deepEqual(exits, ['the spawn helper was killed by SIGKILL']);
    // The check it had started does not outlive it.
    await until('the orphaned check to be killed', () => (alive(sleeper!) ? undefined : true), 5_000);

    const next = await slowDouble(0).validate(rendered('two'));
    assert.equal(next.ok, true, JSON.stringify(next));
    assert.equal(helper.starts, 2);
    assert.notEqual(helper.pid, first);
  });

  test('frozen: a check is given up after its timeout and the grace, and the next one recovers', async () => {
    const first = helper.pid!;
    process.kill(first, 'SIGSTOP');
    const stuck = await slowDouble(0, 500).validate(rendered('frozen'));
    assert.ok(!stuck.ok && stuck.phase === 'timeout', JSON.stringify(stuck));
    assert.match(stuck.ok ? '' : stuck.problems[0]!.message, /did not finish within 500 ms/);
    await until('the frozen helper to be killed', () => (alive(first) ? undefined : true), 5_000);

    const next = await slowDouble(0).validate(rendered('after'));
    assert.equal(next.ok, true, JSON.stringify(next));
    assert.equal(helper.starts, 2);
  });

  test('an abort kills the check the helper started, and the helper goes on', async () => {
    const abort = new AbortController();
    const checking = slowDouble(30).validate(rendered('aborted'), abort.signal);
    await until('the double to start its child', async () => ((await sleepers(log)).length === 1 ? true : undefined), 10_000);
    const [sleeper] = await sleepers(log);
    abort.abort();
    const result = await checking;
    assert.ok(!result.ok && result.phase === 'aborted', JSON.stringify(result));
    await until('the check to be killed', () => (alive(sleeper!) ? undefined : true), 5_000);
    assert.equal((await slowDouble(0).validate(rendered('later'))).ok, true);
    assert.equal(helper.starts, 1);
  });

  test('a terminal signal to the process group (Ctrl-C, SIGTERM to the group) is left to the controller: the helper goes on, and ends when it is stopped', async () => {
    const pid = helper.pid!;
    // Up and answering (its program installed what it does on signals).
    assert.equal((await slowDouble(0).validate(rendered('before signals'))).ok, true);
    process.kill(pid, 'SIGINT');
    process.kill(pid, 'SIGTERM');
    process.kill(pid, 'SIGHUP');
    // Had a signal ended it, this check would fail for want of a helper, or start a second one.
    assert.equal((await slowDouble(0).validate(rendered('after signals'))).ok, true);
    assert.equal(alive(pid), true);
    assert.deepEqual(exits, []);
    assert.equal(helper.starts, 1);
    await helper.stop();
    assert.equal(alive(pid), false);
    assert.deepEqual(exits, [], 'a stop is no exit to report');
  });

  test('stop() ends the helper and what it was running', async () => {
    const checking = slowDouble(30).validate(rendered('stopping'));
    await until('the double to start its child', async () => ((await sleepers(log)).length === 1 ? true : undefined), 10_000);
    const [sleeper] = await sleepers(log);
    const pid = helper.pid!;
    await helper.stop();
    const result = await checking;
    assert.ok(!result.ok && result.phase === 'aborted', JSON.stringify(result));
    assert.equal(alive(pid), false);
    await until('the check to be killed', () => (alive(sleeper!) ? undefined : true), 5_000);
    assert.deepEqual(exits, []);
  });
});
