/**
 * Faults of the graph itself, with real parts around it: a stage that fails (here the
 * change source ends with an error) and an instance that is replaced. The process and
 * haproxy go on; the graph restarts with backoff and syncs again before it deploys; a
 * replaced instance gets the current configuration at once (drift is off).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../support/until.ts';
import { FaultRig } from './dataplane-rig.ts';

describe('Graph faults with real components', () => {
  it('a stage that errors restarts the graph after 1 s; the last good configuration serves meanwhile, and changes made during the restart go live', async (t) => {
    const rig = await FaultRig.start();
    try {
      rig.startTraffic();
      const mark = rig.events.length;
      const failedAt = Date.now();
      rig.failSource(new Error('the watch stream ended: socket hang up'));
      // A change made while the graph is down is in the next list.
      rig.moveToTwo();
      const failure = await rig.waitFor('StageFailed', mark, 5_000);
      assert.equal(failure.stage, 'sources');
      assert.match(failure.message, /socket hang up/);
      assert.ok(failure.restartInMs >= 1_000 && failure.restartInMs <= 1_200, `restarts in ${failure.restartInMs} ms`);
      assert.ok(rig.logLines(mark).some((l) => /^stage sources failed: the watch stream ended: socket hang up; the graph restarts in \d+ ms/.test(l)), rig.logLines(mark).join('\n'));
      const live = await rig.servedBy('two', 15_000);
      const served = rig.served();
      t.diagnostic(`stage error: the change went live ${live - failedAt} ms after the stage failed (restart after ${failure.restartInMs} ms); ${served.failed} of ${served.sent} requests failed`);
      assert.equal(served.failed, 0, served.errors.join('; '));
      assert.ok(live - failedAt < 5_000);
      assert.ok(rig.served(failedAt, live).bodies.one! > 0, 'the last good configuration served during the restart');
    } finally {
      await rig.stop();
    }
  });

  it('a replaced instance (a new pod, bootstrap configuration) gets the current configuration at once, with drift off', async (t) => {
    const rig = await FaultRig.start();
    try {
      rig.startTraffic();
      const mark = rig.events.length;
      const gone = Date.now();
      const discovered = await rig.replaceInstance();
      const back = await until('an answer from the new pod', () => (rig.firstAnswerAfter(discovered) < Infinity ? rig.firstAnswerAfter(discovered) : undefined), 15_000);
      const deployed = await rig.waitFor('InstanceDeployed', mark, 10_000);
      assert.equal(deployed.deployment.reason, 'endpoints', 'deployed because the instance came back, not by drift');
      assert.equal(rig.served(back).bodies.two ?? 0, 0);
      const down = rig.served(gone, back);
      t.diagnostic(`instance replaced: serving again ${back - discovered} ms after discovery reported the new pod; ${down.failed} of ${down.sent} requests failed in the ${back - gone} ms without a pod serving`);
      assert.ok(back - discovered < 3_000, `served again in ${back - discovered} ms`);
      assert.equal(rig.served(back).failed, 0, 'none once it serves');
    } finally {
      await rig.stop();
    }
  });
});
