/**
 * haproxy -c that cannot run (it hangs past its timeout) while a change waits: the
 * check is reported as unavailable, never as a refusal, and is retried with backoff;
 * the last good configuration serves real HTTP meanwhile, readiness and the refusal
 * metric are untouched, and the change goes live by itself once checks run again.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FaultRig } from './dataplane-rig.ts';

const metric = async (rig: FaultRig, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await rig.observer.metrics.registry.metrics())?.[1]);

describe('Validation faults', () => {
  it('a validation that times out is retried, never called a refusal, and the change goes live once checks run again', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'haprx-fault-flag-'));
    const hang = join(dir, 'hang');
    // While the file exists, the haproxy used for checks hangs for 30 s: the validator kills it at 1 s.
    const rig = await FaultRig.start({ validateTimeoutMs: 1_000, validatorPrelude: `[ -e '${hang}' ] && sleep 30` });
    try {
      rig.startTraffic();
      const mark = rig.events.length;
      await writeFile(hang, '');
      rig.moveToTwo();
      const unavailable = await rig.waitFor('ValidationUnavailable', mark, 15_000);
      const firstFailure = Date.now();
      assert.match(unavailable.message, /haproxy -c did not finish within 1000 ms/);
      assert.ok(rig.logLines(mark).some((l) => /^validation could not run \(attempt 1\): haproxy -c did not finish within 1000 ms; checking again in \d+ ms/.test(l)), rig.logLines(mark).join('\n'));
      // Checked again after the backoff, and given twice as long: a check that only needs more time than the bound gets it.
      const second = await rig.waitFor('ValidationUnavailable', rig.events.length, 15_000);
      assert.match(second.message, /haproxy -c did not finish within 2000 ms/);
      const attempts = rig.events.slice(mark).filter((e) => e.event.type === 'ValidationUnavailable').length;
      assert.ok(attempts >= 2, `checked again while it could not run (${attempts} attempts)`);
      assert.equal(rig.events.slice(mark).filter((e) => e.event.type === 'ValidationFailed').length, 0, 'never reported as refused');
      assert.equal(await metric(rig, 'haprx_validation_errors_total'), 0);
      assert.ok((await metric(rig, 'haprx_validation_unavailable_total')) >= 2);
      const readiness = rig.observer.debug.readiness();
      assert.equal(readiness.ready, true, 'ready: a configuration haproxy accepted is live');
      assert.match(readiness.validationUnavailable ?? '', /did not finish/);
      assert.deepEqual(Object.keys(rig.served(firstFailure).bodies), ['one'], 'the last good configuration serves meanwhile');

      const removed = Date.now();
      await rm(hang);
      const live = await rig.servedBy('two', 20_000);
      const served = rig.served();
      t.diagnostic(`validation timeout: recovered ${live - removed} ms after checks could run again (${attempts} checks could not run); ${served.failed} of ${served.sent} requests failed`);
      assert.equal(served.failed, 0, served.errors.join('; '));
      assert.ok(live - removed < 8_000, `recovered in ${live - removed} ms`);
    } finally {
      await rig.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
