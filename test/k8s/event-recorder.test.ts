/** Events written to the API server double: the fields it validates, series for repeats, the rate limit. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { EventRecorder } from '../../src/k8s/event-recorder.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { apiFor, sleep, until } from './helpers.ts';

let double: KubeApiDouble;
let recorder: EventRecorder | undefined;

beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token' });
});
afterEach(async () => {
  await recorder?.stop();
  recorder = undefined;
  await double.stop();
});

type StoredEvent = { type: string; reason: string; note: string; action: string; eventTime: string; reportingController: string; reportingInstance: string; regarding: Record<string, string>; series?: { count: number; lastObservedTime: string } };
const events = () => double.list('events.k8s.io/v1', 'events', 'sys') as unknown as StoredEvent[];

function start(limits: ConstructorParameters<typeof EventRecorder>[1]['limits'] = {}, notices: string[] = []) {
  recorder = new EventRecorder(apiFor(double), {
    namespace: 'sys',
    reportingInstance: 'replica-a',
    regarding: () => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'sys', name: 'haprx', uid: 'u-1' }),
    limits: { seriesFlushMs: 100, ...limits },
    onNotice: (n) => notices.push(n),
  });
  return recorder;
}

const warning = (note: string) => ({ type: 'Warning' as const, reason: 'RenderFailed', action: 'Render', note });

describe('EventRecorder', () => {
  it('creates an events.k8s.io/v1 Event the API server accepts, regarding the ConfigMap', async () => {
    const r = start();
    r.record(warning('render failed at haproxy.cfg:3'));
    await r.idle();
    const [event] = events();
    assert.ok(event);
    assert.equal(event.type, 'Warning');
    assert.equal(event.reason, 'RenderFailed');
    assert.equal(event.action, 'Render');
    assert.equal(event.note, 'render failed at haproxy.cfg:3');
    assert.equal(event.reportingController, 'haprx');
    assert.equal(event.reportingInstance, 'replica-a');
    assert.deepEqual(event.regarding, { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'sys', name: 'haprx', uid: 'u-1' });
    assert.match(event.eventTime, /\.\d{6}Z$/);
  });

  it('counts repeats into the series of the first Event instead of creating more', async () => {
    const r = start();
    for (let i = 0; i < 5; i++) r.record(warning('same failure'));
    await r.idle();
    assert.equal(events().length, 1);
    await until('the series written', () => events()[0]!.series?.count === 5, 2_000);
    assert.match(events()[0]!.series!.lastObservedTime, /\.\d{6}Z$/);
    r.record(warning('same failure'));
    await until('the series updated', () => events()[0]!.series?.count === 6, 2_000);
    assert.equal(events().length, 1);
    assert.equal(double.requestsFor('events', { method: 'PUT' }).length, 2);
  });

  it('writes a pending series when stopped', async () => {
    const r = start({ seriesFlushMs: 60_000 });
    r.record(warning('x'));
    r.record(warning('x'));
    await r.idle();
    assert.equal(events()[0]!.series, undefined);
    await r.stop();
    assert.equal(events()[0]!.series?.count, 2);
  });

  it('drops what exceeds its budget, so a flapping error cannot flood the API', async () => {
    const r = start({ burst: 3, refillMs: 60_000 });
    for (let i = 0; i < 50; i++) r.record(warning(`flapping ${i}`));
    await r.idle();
    await sleep(50);
    assert.equal(events().length, 3);
    assert.equal(r.dropped, 47);
    assert.equal(double.requestsFor('events', { method: 'POST' }).length, 3);
  });

  it('forgets each Event once its aggregation window is over, however many distinct Events were written', async () => {
    const r = start({ burst: 1_000, aggregateWindowMs: 200, seriesFlushMs: 50 });
    for (let i = 0; i < 300; i++) r.record(warning(`failure ${i}`));
    r.record(warning('failure 0'));
    await r.idle();
    assert.equal(events().length, 300);
    assert.equal(r.tracked, 300);
    await until('the windows over and the series written', () => r.tracked === 0, 3_000);
    assert.equal(events().find((e) => e.note === 'failure 0')!.series?.count, 2, 'the repeat was written before the Event was forgotten');
    // After the window the same failure is a new Event.
    r.record(warning('failure 0'));
    await r.idle();
    assert.equal(events().length, 301);
  });

  it('reports a refused write without throwing', async () => {
    const notices: string[] = [];
    const r = start({}, notices);
    double.failNext({ path: /events/, method: 'POST', status: 403 });
    r.record(warning('refused'));
    await r.idle();
    assert.equal(events().length, 0);
    assert.match(notices[0]!, /cannot create the RenderFailed Event: injected fault: 403/);
  });
});
