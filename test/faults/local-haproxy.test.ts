/**
 * Faults of the haproxy that `haprx local` runs: kill -9 of its master and of its
 * worker, and a haproxy that cannot start again for a while. haprx must stay up,
 * restart haproxy with the last configuration it took (within 1 s when it can), log
 * the cause, count the restart, and say the truth on /healthz and /readyz meanwhile.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

describe('local mode: haproxy faults (real haproxy)', () => {
  const haprx = new LocalHaprx();
  /** While this file exists, the wrapper refuses to start haproxy (haproxy -c still runs). */
  let broken = '';
  let bin = '';

  before(async () => {
    bin = await mkdtemp(join(tmpdir(), 'haprx-bin-'));
    broken = join(bin, 'broken');
    const wrapper = join(bin, 'haproxy');
    await writeFile(
      wrapper,
      `#!/bin/sh\ncase " $* " in *" -W "*) if [ -e '${broken}' ]; then echo "[ALERT]    (0) : cannot start: the test broke haproxy" >&2; exit 1; fi ;; esac\nexec haproxy "$@"\n`,
    );
    await chmod(wrapper, 0o755);
    const manifests = {
      'services.yaml': [manifest.service('a'), manifest.service('b')].join('---\n'),
      'stable.yaml': manifest.ingress('stable', 'stable.test', 'a'),
    };
    // The shipped scheduling; drift off, so that no recovery below comes from the periodic redeploy.
    await haprx.start({ manifests, echoes: ['e1', 'e2'], settings: { driftInterval: '0s' }, haproxyBin: wrapper });
    await writeFile(join(haprx.manifests, 'slices.yaml'), [manifest.slice('a', 'a', haprx.echo.e1!.port), manifest.slice('b', 'b', haprx.echo.e2!.port)].join('---\n'));
    await haprx.served('stable.test', 'e1');
  });

  after(async () => {
    await haprx.stop();
    await rm(bin, { recursive: true, force: true });
  });

  const restarts = async () => Number(/^haprx_target_restarts_total\{endpoint="local"\} (\d+)$/m.exec((await haprx.health('/metrics')).body)?.[1] ?? 0);

  for (const victim of ['master', 'worker'] as const) {
    it(`restarts haproxy within 1 s after kill -9 of its ${victim}, and logs why`, async (t) => {
      // The master's socket is briefly away while it reloads.
      const proc = await haprx.until('show proc', () => haprx.showProc(), 5_000);
      const before = await restarts();
      const traffic = haprx.traffic('stable.test', 'e1');
      await haprx.until('some traffic', () => (traffic.sent > 20 ? true : undefined));
      const mark = haprx.logs.length;
      const failedBefore = traffic.failed;
      const killed = Date.now();
      process.kill(victim === 'master' ? proc.masterPid : proc.workers[0]!.pid, 'SIGKILL');
      const down = await haprx.until('the log line', () => haprx.logged(mark, /^haproxy local is down/), 5_000);
      assert.match(down.msg, victim === 'master' ? /killed by SIGKILL/ : /Current worker \(\d+\) exited with code 137 \(Killed\)/);
      await haprx.until('the restart', () => haprx.logged(mark, /^haproxy local restarted with the last configuration/), 5_000);
      // Recovered: the next request through haproxy is answered.
      await haprx.served('stable.test', 'e1', 5_000);
      const recovered = Date.now() - killed;
      await new Promise((r) => setTimeout(r, 300));
      const result = await traffic.stop();
      t.diagnostic(`kill -9 of the ${victim}: serving again after ${recovered} ms; ${result.failed - failedBefore} of ${result.sent} requests failed (connections refused while it was down)`);
      assert.ok(recovered < 1_000, `${recovered} ms`);
      assert.equal(await restarts(), before + 1, 'counted');
      assert.notEqual((await haprx.until('show proc', () => haprx.showProc(), 5_000)).masterPid, proc.masterPid);
      assert.ok(haprx.alive);
      // It takes deployments again.
      await writeFile(join(haprx.manifests, `after-${victim}.yaml`), manifest.ingress(`after-${victim}`, `after-${victim}.test`, 'b'));
      await haprx.served(`after-${victim}.test`, 'e2');
    });
  }

  it('says the truth on /healthz and /readyz while haproxy cannot be restarted, retries, and sends it the newest configuration once back', async (t) => {
    assert.equal((await haprx.health('/healthz')).status, 200);
    assert.equal((await haprx.health('/readyz')).status, 200);
    const mark = haprx.logs.length;
    await writeFile(broken, '');
    const proc = await haprx.until('show proc', () => haprx.showProc(), 5_000);
    process.kill(proc.masterPid, 'SIGKILL');
    await haprx.until('a failed restart', () => haprx.logged(mark, /is down: .*restarting failed: haproxy did not start: .*cannot start: the test broke haproxy/), 5_000);
    const healthz = await haprx.health('/healthz');
    assert.equal(healthz.status, 503);
    assert.match(healthz.body, /"status": "target down"/);
    assert.match(healthz.body, /"endpoint": "local"/);
    assert.match(healthz.body, /killed by SIGKILL/);
    const readyz = await haprx.health('/readyz');
    assert.equal(readyz.status, 503);
    assert.match(readyz.body, /haproxy to run again/);
    assert.equal(await haprx.body('stable.test'), undefined, 'nothing serves');
    // A change while haproxy is down is validated, and waits for it.
    await writeFile(join(haprx.manifests, 'while-down.yaml'), manifest.ingress('while-down', 'while-down.test', 'b'));
    await new Promise((r) => setTimeout(r, 1_500));
    const fixed = Date.now();
    await rm(broken);
    await haprx.served('stable.test', 'e1', 10_000);
    const recovered = Date.now() - fixed;
    await haprx.served('while-down.test', 'e2', 10_000);
    const current = Date.now() - fixed;
    t.diagnostic(`haproxy that could not start: serving ${recovered} ms after the cause was removed, the change made meanwhile live after ${current} ms`);
    assert.equal((await haprx.health('/healthz')).status, 200);
    assert.equal((await haprx.health('/readyz')).status, 200);
    // Attempts back off: 0, 0.25, 0.5, 1, 2 s ... so a fix is taken within the next one.
    assert.ok(recovered < 4_500, `${recovered} ms`);
    assert.ok(haprx.alive);
  });
});
