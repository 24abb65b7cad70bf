/** Leader election on a coordination.k8s.io/v1 Lease, with the real client against the API server double. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { LeaderElector, type LeaseObject } from '../../src/k8s/leader-election.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { apiFor, sleep, until } from './helpers.ts';

const TIMINGS = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 };

let double: KubeApiDouble;
const electors: LeaderElector[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'a', tokens: ['b', 'c'] });
});
afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop()));
  await double.stop();
});

/** An elector whose leadership history is recorded with times. */
function elector(identity: string, token: string) {
  const history: { leader: boolean; at: number }[] = [];
  const e = new LeaderElector(apiFor(double, token), { namespace: 'sys', name: 'haprx-leader', identity, ...TIMINGS });
  e.leader$.subscribe((leader) => history.push({ leader, at: Date.now() }));
  electors.push(e);
  return { e, history };
}

const lease = () => double.get('coordination.k8s.io/v1', 'leases', 'sys', 'haprx-leader') as unknown as LeaseObject | undefined;

/** Whether two electors ever led at the same moment, from their recorded histories. */
function overlapped(a: { leader: boolean; at: number }[], b: { leader: boolean; at: number }[]): boolean {
  const intervals = (h: typeof a) => {
    const out: [number, number][] = [];
    let start: number | undefined;
    for (const { leader, at } of h) {
      if (leader && start === undefined) start = at;
      if (!leader && start !== undefined) {
        out.push([start, at]);
        start = undefined;
      }
    }
    if (start !== undefined) out.push([start, Infinity]);
    return out;
  };
  return intervals(a).some(([s1, e1]) => intervals(b).some(([s2, e2]) => s1 < e2 && s2 < e1));
}

describe('LeaderElector', () => {
  it('with two replicas on one API, exactly one leads, and the Lease names it', async () => {
    const one = elector('one', 'a');
    const two = elector('two', 'b');
    one.e.start();
    two.e.start();
    await until('a leader', () => one.e.isLeader || two.e.isLeader);
    await sleep(500);
    assert.notEqual(one.e.isLeader, two.e.isLeader, 'exactly one leads');
    const leader = one.e.isLeader ? 'one' : 'two';
    const spec = lease()!.spec!;
    assert.equal(spec.holderIdentity, leader);
    assert.equal(spec.leaseDurationSeconds, 1);
    assert.match(spec.renewTime!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // The leader keeps renewing.
    const renewed = spec.renewTime;
    await sleep(250);
    assert.notEqual(lease()!.spec!.renewTime, renewed);
  });

  it('fails over at once when the leader stops and releases the lease', async () => {
    const one = elector('one', 'a');
    one.e.start();
    await until('one leads', () => one.e.isLeader);
    const two = elector('two', 'b');
    two.e.start();
    await sleep(300);
    assert.ok(!two.e.isLeader);
    const stoppedAt = Date.now();
    await one.e.stop();
    assert.ok(!one.e.isLeader);
    assert.equal(lease()!.spec!.holderIdentity === 'one', false, 'released');
    await until('two leads', () => two.e.isLeader);
    const took = Date.now() - stoppedAt;
    assert.ok(took < TIMINGS.leaseDurationMs, `took over in ${took} ms, before the lease could expire`);
    assert.equal(lease()!.spec!.holderIdentity, 'two');
    assert.equal(lease()!.spec!.leaseTransitions, 1, 'created by one (0), taken by two (1)');
  });

  it('when the leader loses the API, it steps down within the renew deadline, and the other takes over only after the lease expired', async () => {
    const one = elector('one', 'a');
    one.e.start();
    await until('one leads', () => one.e.isLeader);
    const two = elector('two', 'b');
    two.e.start();
    await sleep(200);
    // Partition: every request of replica one fails from now on.
    const cutAt = Date.now();
    double.failNext({ token: 'a', status: 503, times: Infinity });
    await until('two leads', () => two.e.isLeader, 5_000);
    const stepDown = one.history.find((h) => !h.leader && h.at >= cutAt)!;
    const takeOver = two.history.find((h) => h.leader)!;
    assert.ok(stepDown.at - cutAt <= TIMINGS.renewDeadlineMs + 50, `one stepped down ${stepDown.at - cutAt} ms after the cut`);
    assert.ok(takeOver.at - cutAt >= TIMINGS.leaseDurationMs - TIMINGS.retryPeriodMs, `two took over ${takeOver.at - cutAt} ms after the cut`);
    assert.ok(!overlapped(one.history, two.history), 'never two leaders at once');
    // Back on the API, one finds the lease held and stays a follower.
    double.clearFaults();
    await sleep(400);
    assert.ok(!one.e.isLeader);
    assert.ok(two.e.isLeader);
  });

  it('waits for a lease held by a replica that keeps renewing, however long', async () => {
    const one = elector('one', 'a');
    one.e.start();
    await until('one leads', () => one.e.isLeader);
    const two = elector('two', 'b');
    two.e.start();
    await sleep(TIMINGS.leaseDurationMs * 2);
    assert.ok(one.e.isLeader);
    assert.ok(!two.e.isLeader);
    assert.ok(!overlapped(one.history, two.history));
  });

  it('refuses timings where the lease could expire before the leader notices', () => {
    assert.throws(() => new LeaderElector(apiFor(double), { namespace: 'n', name: 'l', identity: 'x', leaseDurationMs: 1_000, renewDeadlineMs: 1_000 }), /renew deadline/);
    assert.throws(() => new LeaderElector(apiFor(double), { namespace: 'n', name: 'l', identity: 'x', renewDeadlineMs: 1_000, retryPeriodMs: 1_000 }), /retry period/);
  });
});
