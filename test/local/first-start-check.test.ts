import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type ChildRunner, runChild } from '../../src/haproxy/child-run.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import { LocalTarget } from '../../src/local/target.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { routingConfig } from '../support/routing-config.ts';

/**
 * haprx local checks its first configuration by starting haproxy on it (nothing runs
 * yet that a bad configuration could replace); haproxy -c decides whenever the start
 * does not answer for it.
 */
describe('first configuration checked by starting haproxy (real haproxy)', () => {
  let dir: string;
  let port: number;
  let target: LocalTarget;
  let checks: string[][];
  let echo: Awaited<ReturnType<typeof startEcho>>;
  const runner: ChildRunner = (request, signal) => {
    checks.push([...request.args]);
    return runChild(request, signal);
  };
  const validatorOf = (options: { failOnWarnings?: boolean } = {}) => {
    const validator = new Validator({ runner, ...options });
    return (config: ReturnType<typeof routingConfig>) => validator.validate(config, undefined, { start: (c) => target.checkByStarting(c) });
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-first-start-'));
    port = await freePort();
    checks = [];
    echo = await startEcho('a1');
    target = new LocalTarget({ bin: 'haproxy', stateDir: dir });
  });

  afterEach(async () => {
    await target.stop();
    await echo.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('passes the first configuration by starting haproxy on it, without haproxy -c; its deployment reports that start', async () => {
    const validate = validatorOf();
    const first = routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' });
    const result = await validate(first);
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(checks, [], 'no haproxy -c ran');
    assert.equal(target.haproxy.running, true);
    assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'a1\n' }, 'the started haproxy serves it');
    assert.deepEqual(await target.deploy(first), { ok: true, reloaded: true, runtimeOps: 0 }, 'the start, as a deployment that started haproxy reports it');
    assert.equal((await target.haproxy.showProc()).reloads, 0, 'haproxy was not reloaded');
    assert.deepEqual(await target.deploy(first), { ok: true, reloaded: false, runtimeOps: 0 }, 'deployed again: nothing to do');
  });

  it('checks every later configuration with haproxy -c, and deploys it as before', async () => {
    const validate = validatorOf();
    await validate(routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' }));
    const second = routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }], be_b: [{ name: 'b1', port: echo.port }] }, { 'a.test': 'be_a', 'b.test': 'be_b' });
    const result = await validate(second);
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(checks, [['-c', '-f', 'haproxy.cfg']]);
    assert.deepEqual(await target.deploy(second), { ok: true, reloaded: true, runtimeOps: 0 });
    assert.deepEqual(await get(port, '/', 'b.test'), { status: 200, body: 'a1\n' });
  });

  it('reports a first configuration haproxy refuses as haproxy -c does, starts nothing, and starts the next good one', async () => {
    const validate = validatorOf();
    const bad = routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' }, { extra: 'backend be_bad\n  no-such-keyword here' });
    const result = await validate(bad);
    assert.equal(result.ok, false);
    assert.ok(!result.ok && result.phase === 'haproxy', JSON.stringify(result));
    const lines = bad.main.split('\n');
    const badLine = lines.findIndex((l) => l.includes('no-such-keyword')) + 1;
    assert.ok(!result.ok && result.problems.some((p) => p.file === 'haproxy.cfg' && p.line === badLine && /no-such-keyword/.test(p.message)), JSON.stringify(result));
    assert.deepEqual(checks, [['-c', '-f', 'haproxy.cfg']], 'the verdict is haproxy -c');
    assert.equal(target.haproxy.running, false);

    const good = routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' });
    assert.equal((await validate(good)).ok, true);
    assert.equal(checks.length, 1, 'the good one was checked by its start');
    assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'a1\n' });
  });

  it('lets haproxy -c decide when the start fails for another reason (its port is taken); the deployment then reports the start', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const validate = validatorOf();
      const config = routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' });
      const result = await validate(config);
      assert.equal(result.ok, true, JSON.stringify(result));
      assert.deepEqual(checks, [['-c', '-f', 'haproxy.cfg']]);
      assert.equal(target.haproxy.running, false);
      const outcome = await target.deploy(config);
      assert.equal(outcome.ok, false);
      assert.match(outcome.ok ? '' : (outcome.error ?? ''), /haproxy did not start/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('reports the warnings haproxy printed while starting, as haproxy -c reports them', async () => {
    const extra = 'backend be_warn\n  mode tcp\n  option httplog\n  server w1 127.0.0.1:1';
    const config = routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' }, { extra });
    const byStart = await validatorOf()(config);
    assert.equal(byStart.ok, true, JSON.stringify(byStart));
    assert.deepEqual(checks, []);
    const byCheck = await new Validator().validate(config);
    assert.ok(byCheck.warnings.length > 0, 'the configuration has warnings');
    assert.deepEqual(byStart.warnings, byCheck.warnings);
  });

  it('never starts haproxy as a check when warnings fail a configuration', async () => {
    const validate = validatorOf({ failOnWarnings: true });
    const extra = 'backend be_warn\n  mode tcp\n  option httplog\n  server w1 127.0.0.1:1';
    const result = await validate(routingConfig(port, { be_a: [{ name: 'a1', port: echo.port }] }, { 'a.test': 'be_a' }, { extra }));
    assert.equal(result.ok, false);
    assert.deepEqual(checks, [['-c', '-f', 'haproxy.cfg']]);
    assert.equal(target.haproxy.running, false);
  });
});
