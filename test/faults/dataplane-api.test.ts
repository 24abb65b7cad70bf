/**
 * Faults of the Data Plane API (through its double, which drives a real haproxy):
 * for each, haprx keeps running, the last good configuration keeps answering real
 * HTTP through haproxy, the log names the cause, and the change goes live by itself
 * within seconds of the fault being removed, with drift off: the retry edge alone
 * brings it (1 s, 2 s, 4 s ... backoff).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it, type TestContext } from 'node:test';
import { FaultRig, type RigOptions } from './dataplane-rig.ts';

/** How long each fault lasts once the change first failed: two or three retries fail. */
const FAULT_MS = 2_500;
/** Recovery once the fault is gone: the retry in force (at most 2.4 s here, then 4.8 s) and one deployment. */
const RECOVERY_BOUND_MS = 8_000;

interface Fault {
  name: string;
  options?: RigOptions;
  inject(rig: FaultRig): void | Promise<void>;
  /** What the failure's message must name. */
  cause: RegExp;
}

const faults: Fault[] = [
  { name: 'every call answers 503', inject: (rig) => rig.double.faults.status(503, {}, Infinity), cause: /503/ },
  { name: 'connections are refused (the API is down)', inject: (rig) => rig.double.faults.refuse(), cause: /ECONNREFUSED/ },
  {
    name: 'answers are too slow: the deployment times out',
    options: { deployTimeoutMs: 1_500 },
    inject: (rig) => rig.double.faults.slow(3_000),
    cause: /no answer within 1500 ms/,
  },
  { name: 'a storm of 409 conflicts: someone else keeps writing', inject: (rig) => rig.double.faults.conflict(Infinity), cause: /409 conflict/ },
  { name: 'reloads fail: haproxy cannot start the new configuration', inject: (rig) => rig.double.faults.failReloads(Infinity), cause: /reload \S+ failed: .*injected fault/ },
];

describe('Data Plane faults: the last good configuration serves, and the change recovers by itself', () => {
  for (const fault of faults) {
    it(fault.name, async (t: TestContext) => {
      const rig = await FaultRig.start(fault.options);
      try {
        rig.startTraffic();
        const mark = rig.events.length;
        await fault.inject(rig);
        rig.moveToTwo();
        const failed = await rig.waitFor('InstanceDeployFailed', mark, 20_000);
        const firstFailure = Date.now();
        assert.match(failed.result.error ?? '', fault.cause);
        assert.ok(
          rig.logLines(mark).some((line) => line.startsWith('deployment to haproxy-0 failed:') && fault.cause.test(line)),
          `a log line names the cause:\n${rig.logLines(mark).join('\n')}`,
        );
        await sleep(FAULT_MS);
        const retries = rig.events.slice(mark).filter((e) => e.event.type === 'DeploymentStarted' && e.event.deployment.reason === 'retry').length;
        assert.ok(retries >= 1, `retried while the fault lasted, with drift off:\n${rig.timeline(mark)}`);
        const during = rig.served(firstFailure);
        assert.deepEqual(Object.keys(during.bodies), ['one'], 'the last good configuration serves while the fault lasts');

        const removed = Date.now();
        await rig.double.faults.clear();
        const live = await rig.servedBy('two', 20_000);
        const recoveredMs = live - removed;
        const served = rig.served();
        t.diagnostic(`${fault.name}: recovered ${recoveredMs} ms after the fault was removed (${retries} retries failed before); ${served.failed} of ${served.sent} requests failed`);
        assert.equal(served.failed, 0, `no request failed: ${served.errors.join('; ')}`);
        assert.ok(recoveredMs < RECOVERY_BOUND_MS, `recovered in ${recoveredMs} ms`);
        assert.equal(rig.events.filter((e) => e.event.type === 'StageFailed').length, 0, 'no stage failed');
      } finally {
        await rig.stop();
      }
    });
  }
});
