/**
 * Stopping `haprx local` stops the haproxy it runs, however the stop signals come. A
 * process group stopped together (a supervisor, or a wrapper such as `npm run demo`
 * that forwards the signal it got as well) sends haprx a second signal while it stops.
 * That one does not wait for the clean stop, but it must not leave haproxy serving the
 * last configuration on its own.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

describe('local mode: stop signals (real haproxy)', () => {
  for (const [first, second] of [['SIGTERM', 'SIGTERM'], ['SIGINT', 'SIGINT'], ['SIGTERM', undefined]] as const) {
    it(`stops haproxy on ${first}${second ? `, and on ${second} while a deployment holds the clean stop` : ''}`, async (t) => {
      const haprx = new LocalHaprx();
      t.after(() => haprx.stop());
      await haprx.start({ manifests: { 'services.yaml': manifest.service('a'), 'stable.yaml': manifest.ingress('stable', 'stable.test', 'a') }, echoes: [] });
      const proc = await haprx.until('show proc', () => haprx.showProc(), 5_000);
      const pids = [proc.masterPid, ...proc.workers.map((w) => w.pid)];
      if (second) {
        // A frozen master holds the reload of a new backend, and the clean stop waits for that deployment.
        process.kill(proc.masterPid, 'SIGSTOP');
        t.after(() => (gone(proc.masterPid) ? undefined : process.kill(proc.masterPid, 'SIGCONT')));
        const mark = haprx.logs.length;
        await writeFile(join(haprx.manifests, 'new.yaml'), [manifest.service('b'), manifest.ingress('new', 'new.test', 'b')].join('---\n'));
        await haprx.until('the reload of the new backend to begin', () => haprx.logs.slice(mark).find((l) => l.step === 'reload'), 10_000);
      }
      haprx.signal(first);
      if (second) {
        await haprx.until('the stop to begin', () => haprx.logs.find((l) => l.msg === `${first}: stopping`), 5_000);
        haprx.signal(second);
      }
      const code = await haprx.exit();
      if (second) {
        // Told to stop while frozen: SIGTERM waits among its pending signals (bit 15 of /proc's ShdPnd).
        // Nothing else stops it here: the reload it resumes with writes to the closed pipe, and dies of that.
        const pending = /^ShdPnd:\s*([0-9a-f]+)$/m.exec(await readFile(`/proc/${proc.masterPid}/status`, 'utf8'))?.[1];
        assert.ok(pending !== undefined && (BigInt(`0x${pending}`) & (1n << 14n)) !== 0n, `haproxy's master was not told to stop (pending ${pending}); ${haprx.recentLogs()}`);
        process.kill(proc.masterPid, 'SIGCONT');
      }
      // Checked before the helper's own cleanup (stop()) would stop a haproxy left behind.
      await haprx.until('haproxy to be gone', () => (pids.every(gone) ? true : undefined), 5_000);
      assert.equal(code, second ? 1 : 0, haprx.recentLogs());
      if (second) assert.ok(haprx.logs.some((l) => /^second signal: stopping haproxy and exiting now/.test(l.msg)), haprx.recentLogs());
    });
  }
});
