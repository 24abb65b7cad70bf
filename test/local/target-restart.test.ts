import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalTarget, type TargetHealth } from '../../src/local/target.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { routingConfig } from '../support/routing-config.ts';
import { until } from '../support/until.ts';

describe('LocalTarget restarts a haproxy that stopped on its own (real haproxy)', () => {
  let dir: string;
  let port: number;
  let target: LocalTarget;
  const health: TargetHealth[] = [];
  const echo: Awaited<ReturnType<typeof startEcho>>[] = [];
  const config = (backendPort: number) => routingConfig(port, { be_a: [{ name: 's1', port: backendPort }] }, { 'a.test': 'be_a' });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-restart-'));
    port = await freePort();
    echo.push(await startEcho('one'), await startEcho('two'));
    target = new LocalTarget({ bin: 'haproxy', stateDir: dir, onHealth: (h) => health.push(h) });
    assert.equal((await target.deploy(config(echo[0]!.port))).ok, true);
    assert.equal((await target.deploy(config(echo[1]!.port))).ok, true, 'a second configuration, taken by reload');
  });

  after(async () => {
    await target.stop();
    await Promise.all(echo.map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  for (const victim of ['master', 'worker'] as const) {
    it(`restarts within 1 s after kill -9 of the ${victim}, with the last configuration, and says why`, async () => {
      const proc = await target.haproxy.showProc();
      const pid = victim === 'master' ? proc.masterPid : proc.workers[0]!.pid;
      health.length = 0;
      const killedAt = Date.now();
      process.kill(pid, 'SIGKILL');
      await until('the restart', () => health.find((h) => h.up), 5_000, () => JSON.stringify(health), 10);
      const recovered = Date.now() - killedAt;
      assert.ok(recovered < 1_000, `${recovered} ms from kill -9 to a running haproxy`);
      const [down, up] = health;
      assert.equal(down?.up, false);
      assert.match(down!.cause, victim === 'master' ? /^haproxy master \(pid \d+\) was killed by SIGKILL/ : /exited with code 137.*Current worker \(\d+\) exited with code 137 \(Killed\)/);
      assert.equal(up?.up, true);
      assert.ok((up as { downMs: number }).downMs <= recovered);
      assert.notEqual((await target.haproxy.showProc()).masterPid, proc.masterPid);
      assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'two\n' }, 'the last configuration serves');
    });
  }

  it('deploys to the restarted haproxy as before', async () => {
    const outcome = await target.deploy(config(echo[0]!.port));
    assert.equal(outcome.ok, true);
    assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'one\n' });
  });

  it('does not restart a haproxy it was asked to stop', async () => {
    health.length = 0;
    await target.stop();
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(health, []);
    await assert.rejects(get(port, '/', 'a.test'));
  });
});
