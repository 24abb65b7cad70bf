/** The lease decision (client-go's tryAcquireOrRenew) and the Event rules, as pure functions. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ControllerEvent, Deployment, InstanceResult } from '../../src/events.ts';
import { configDiff } from '../../src/haproxy/config-diff.ts';
import { EventLimiter, clampNote, clusterEventFor } from '../../src/k8s/cluster-events.ts';
import { type LeaseObject, decideLease, microTime } from '../../src/k8s/leader-election.ts';
import { sealRendered } from '../../src/templating/rendered.ts';

const T0 = Date.parse('2026-05-01T10:00:00.000Z');
const lease = (holder: string, rv: string, extra: Partial<LeaseObject['spec']> = {}): LeaseObject => ({
  metadata: { name: 'l', namespace: 'n', resourceVersion: rv },
  spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: microTime(T0), acquireTime: microTime(T0 - 60_000), leaseTransitions: 3, ...extra },
});

describe('decideLease', () => {
  const ctx = { identity: 'me', leaseDurationMs: 15_000 };

  it('creates a missing lease, held by us', () => {
    const { decision } = decideLease(undefined, { ...ctx, now: T0 });
    assert.equal(decision.action, 'create');
    assert.deepEqual(decision.action === 'create' && decision.spec, { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: '2026-05-01T10:00:00.000000Z', renewTime: '2026-05-01T10:00:00.000000Z', leaseTransitions: 0 });
  });

  it('waits while another holder renews, judging expiry by when it saw the record change, not by the holder clock', () => {
    // The holder's renewTime is an hour old (its clock is behind); we only just saw it.
    const skewed = lease('other', '7', { renewTime: microTime(T0 - 3_600_000) });
    const first = decideLease(skewed, { ...ctx, now: T0 });
    assert.equal(first.decision.action, 'wait');
    assert.equal(first.decision.action === 'wait' && first.decision.expiresInMs, 15_000);
    const later = decideLease(skewed, { ...ctx, now: T0 + 14_000, observed: first.observed! });
    assert.equal(later.decision.action, 'wait', 'unchanged for 14 s: still held');
    assert.equal(later.observed, first.observed);
  });

  it('takes an expired lease with the resourceVersion it read, counting a transition', () => {
    const held = lease('other', '7');
    const { observed } = decideLease(held, { ...ctx, now: T0 });
    const { decision } = decideLease(held, { ...ctx, now: T0 + 15_001, observed: observed! });
    assert.equal(decision.action, 'update');
    if (decision.action !== 'update') return;
    assert.equal(decision.resourceVersion, '7');
    assert.equal(decision.spec.holderIdentity, 'me');
    assert.equal(decision.spec.leaseTransitions, 4);
    assert.equal(decision.spec.acquireTime, microTime(T0 + 15_001));
  });

  it('restarts the expiry clock when the holder renews', () => {
    const { observed } = decideLease(lease('other', '7'), { ...ctx, now: T0 });
    const renewed = lease('other', '8', { renewTime: microTime(T0 + 10_000) });
    const { decision } = decideLease(renewed, { ...ctx, now: T0 + 20_000, observed: observed! });
    assert.equal(decision.action, 'wait');
  });

  it('renews its own lease keeping acquireTime and transitions', () => {
    const { decision } = decideLease(lease('me', '9'), { ...ctx, now: T0 + 2_000 });
    assert.equal(decision.action, 'update');
    if (decision.action !== 'update') return;
    assert.equal(decision.spec.acquireTime, microTime(T0 - 60_000));
    assert.equal(decision.spec.renewTime, microTime(T0 + 2_000));
    assert.equal(decision.spec.leaseTransitions, 3);
  });

  it('takes a released lease (no holder) at once', () => {
    const { decision } = decideLease(lease('', '10', { leaseDurationSeconds: 1 }), { ...ctx, now: T0 });
    assert.equal(decision.action, 'update');
    assert.equal(decision.action === 'update' && decision.spec.leaseTransitions, 4);
  });

  it('writes MicroTime with six fraction digits', () => {
    assert.equal(microTime(Date.parse('2026-01-02T03:04:05.678Z')), '2026-01-02T03:04:05.678000Z');
  });
});

const reconcile = { seq: 1, cause: { reason: 'resources' as const, changes: [] }, at: 0 };
const config = { main: '', maps: {}, files: {}, certs: {}, hash: 'abcdef0123456789' };
const deployment: Deployment = { reconcile, config, endpoints: [{ id: 'p1', address: 'http://x' }], reason: 'change', queuedAt: 0, id: 1, startedAt: 0 };
const result = (ok: boolean, error?: string): InstanceResult => ({ ok, reloaded: false, runtimeOps: 0, endpoint: { id: 'p1', address: 'http://x' }, durationMs: 5, ...(error && { error }) });

describe('clusterEventFor', () => {
  it('warns of a rejected configuration with its path', () => {
    assert.deepEqual(clusterEventFor({ type: 'ConfigRejected', path: 'settings.debounce', message: '"soon" is not a duration' }), {
      type: 'Warning',
      reason: 'ConfigRejected',
      action: 'LoadConfig',
      note: 'the controller configuration was rejected, the previous one keeps running: settings.debounce: "soon" is not a duration',
    });
  });

  it('warns of render, validation and deployment failures; notes a complete deployment; ignores the rest', () => {
    const events: ControllerEvent[] = [
      { type: 'RenderFailed', reconcile, error: { template: 'haproxy.cfg', line: 3, message: 'x is not defined' }, durationMs: 1 },
      { type: 'ValidationFailed', reconcile, config, problems: [{ file: 'haproxy.cfg', line: 9, message: 'unknown keyword' }], durationMs: 1 },
      { type: 'InstanceDeployFailed', deployment, result: result(false, 'HTTP 401') },
      { type: 'DeploymentCompleted', deployment, results: [result(true)], durationMs: 9 },
      { type: 'DeploymentCompleted', deployment, results: [result(true), result(false, 'x')], durationMs: 9 },
      { type: 'Rendered', reconcile, config, durationMs: 1 },
      { type: 'SourceProblem', source: 'x', message: 'y' },
    ];
    const mapped = events.map(clusterEventFor).map((e) => e && `${e.type} ${e.reason}: ${e.note}`);
    assert.deepEqual(mapped, [
      'Warning RenderFailed: render failed at haproxy.cfg:3: x is not defined; the last good configuration stays live',
      'Warning ValidationFailed: haproxy refused the configuration, the last good one stays live: haproxy.cfg:9: unknown keyword',
      'Warning DeployFailed: deployment to p1 failed: HTTP 401',
      'Normal Deployed: configuration abcdef012345 deployed to 1 instance(s) (change)',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('keeps haproxy\'s own error lines in a DeployFailed note, without the API\'s transaction noise, within the size limit', () => {
    const alert = (n: number) => `line=${n} msg="'bind :443' in section 'frontend' : 'crt-list' : unable to stat SSL certificate from file 'ssl/site-${n}.pem' : No such file or directory."`;
    const error = `POST /v3/services/haproxy/configuration/raw: 400 Bad Request: validation error: exit status 1: err transactionId=1a15ff32-f3f6-4997 \n${alert(32)}\n${alert(48)}`;
    const note = clusterEventFor({ type: 'InstanceDeployFailed', deployment, result: result(false, error) })!.note;
    assert.equal(
      note,
      `deployment to p1 failed: POST /v3/services/haproxy/configuration/raw: 400 Bad Request: validation error: exit status 1\n${alert(32)}\n${alert(48)}`,
    );
    // Many long lines: each is cut, the first ones are kept, and the note says how many more there were.
    const many = `reload 2026-01-01-1 failed: [NOTICE] (1) : haproxy version is 2.6.12\n${Array.from({ length: 40 }, (_, i) => `[ALERT] (1) : ${'x'.repeat(400)} ${i}`).join('\n')}`;
    const long = clusterEventFor({ type: 'InstanceDeployFailed', deployment, result: result(false, many) })!.note;
    assert.ok(Buffer.byteLength(long) <= 1024, String(Buffer.byteLength(long)));
    const lines = long.split('\n');
    assert.equal(lines[0], 'deployment to p1 failed: reload 2026-01-01-1 failed:');
    assert.match(lines[1]!, /^\[ALERT\] \(1\) : x+…$/, 'alerts come before notices, each cut');
    assert.ok(lines.length >= 3);
    assert.match(lines.at(-1)!, /^… and \d+ more lines$/);
  });

  it('notes a deployment with the files it changed and its diff, cut at a line boundary to fit and marked so', () => {
    const before = sealRendered({ main: 'global\n  maxconn 100\nbackend b\n  server s1 10.0.0.1:80\n', maps: { 'hosts.map': 'a.test b\n' }, files: {}, certs: {} });
    const after = sealRendered({ main: 'global\n  maxconn 100\nbackend b\n  server s1 10.0.0.2:80\n', maps: { 'hosts.map': 'a.test b\n' }, files: {}, certs: {} });
    const small = clusterEventFor({ type: 'DeploymentCompleted', deployment: { ...deployment, config: after }, results: [result(true)], durationMs: 9, diff: configDiff(before, after) })!;
    const lines = small.note.split('\n');
    assert.equal(lines[0], `configuration ${after.hash.slice(0, 12)} deployed to 1 instance(s) (change): haproxy.cfg +1 -1`);
    assert.deepEqual(lines.slice(1, 3), [`--- a/haproxy.cfg\t${before.hash.slice(0, 12)}`, `+++ b/haproxy.cfg\t${after.hash.slice(0, 12)}`]);
    assert.ok(lines.includes('-  server s1 10.0.0.1:80') && lines.includes('+  server s1 10.0.0.2:80'));
    assert.ok(!small.note.includes('truncated'));

    const many = (weight: number) => `global\n${Array.from({ length: 200 }, (_, i) => `backend b${i}\n  server s 10.0.0.1:80 weight ${weight}\n`).join('')}`;
    const big = [many(1), many(2)].map((main) => sealRendered({ main, maps: {}, files: {}, certs: {} }));
    const note = clusterEventFor({ type: 'DeploymentCompleted', deployment: { ...deployment, config: big[1]! }, results: [result(true)], durationMs: 9, diff: configDiff(big[0], big[1]!) })!.note;
    assert.ok(Buffer.byteLength(note) <= 1024, String(Buffer.byteLength(note)));
    assert.match(note, /\n(-|\+| ).*\n… \(truncated: the whole diff is in \/debug\/vars\)$/);
  });

  it('keeps notes within the 1024 bytes the API allows', () => {
    const note = clampNote('é'.repeat(2_000));
    assert.ok(Buffer.byteLength(note) <= 1024);
    assert.ok(note.endsWith('...'));
    assert.equal(clampNote('short'), 'short');
  });
});

describe('EventLimiter', () => {
  const ev = (note: string) => ({ type: 'Warning' as const, reason: 'RenderFailed', action: 'Render', note });

  it('creates an event once, then counts its repeats into a series written at most every flush interval', () => {
    const limiter = new EventLimiter({ burst: 5, refillMs: 1_000, aggregateWindowMs: 60_000, seriesFlushMs: 10_000 });
    assert.equal(limiter.offer(ev('a'), 0).action, 'create');
    for (let t = 1; t <= 20; t++) assert.equal(limiter.offer(ev('a'), t * 100).action, 'count');
    assert.deepEqual(limiter.due(5_000), [], 'not before the flush interval');
    assert.deepEqual(limiter.due(10_000), [{ key: EventLimiter.keyOf(ev('a')), count: 21, lastObservedAt: 2_000 }]);
    assert.deepEqual(limiter.due(30_000), [], 'nothing new to write');
    limiter.offer(ev('a'), 31_000);
    assert.equal(limiter.due(31_000)[0]!.count, 22);
  });

  it('creates the same event anew after the aggregation window', () => {
    const limiter = new EventLimiter({ aggregateWindowMs: 1_000 });
    assert.equal(limiter.offer(ev('a'), 0).action, 'create');
    assert.equal(limiter.offer(ev('a'), 999).action, 'count');
    assert.equal(limiter.offer(ev('a'), 1_000).action, 'create');
  });

  it('drops creates beyond the burst until the bucket refills', () => {
    const limiter = new EventLimiter({ burst: 3, refillMs: 1_000, aggregateWindowMs: 60_000 });
    const actions = ['a', 'b', 'c', 'd', 'e'].map((n) => limiter.offer(ev(n), 0).action);
    assert.deepEqual(actions, ['create', 'create', 'create', 'drop', 'drop']);
    assert.equal(limiter.dropped, 2);
    assert.equal(limiter.offer(ev('f'), 999).action, 'drop');
    assert.equal(limiter.offer(ev('g'), 1_000).action, 'create');
    assert.equal(limiter.offer(ev('h'), 1_500).action, 'drop');
    // A flapping error across many notes cannot exceed the budget: at most burst + elapsed/refill creates.
    let creates = 0;
    for (let t = 2_000; t < 12_000; t += 10) if (limiter.offer(ev(`flap ${t}`), t).action === 'create') creates++;
    assert.ok(creates <= 3 + 10, `${creates} creates in 10 s`);
  });

  it('keeps a budget for Warnings that Normal Events cannot spend', () => {
    const limiter = new EventLimiter({ burst: 2, refillMs: 60_000, aggregateWindowMs: 60_000 });
    const normal = (note: string) => ({ type: 'Normal' as const, reason: 'Deployed', action: 'Deploy', note });
    assert.deepEqual(['a', 'b', 'c'].map((n) => limiter.offer(normal(n), 0).action), ['create', 'create', 'drop']);
    assert.deepEqual(['x', 'y', 'z'].map((n) => limiter.offer(ev(n), 1).action), ['create', 'create', 'drop']);
    assert.equal(limiter.offer(normal('d'), 60_000).action, 'create', 'each bucket refills on its own');
    assert.equal(limiter.offer(ev('w'), 60_001).action, 'create');
  });
});
