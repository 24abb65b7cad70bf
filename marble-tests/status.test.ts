import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Observable, type SchedulerLike, Subject, delay, map, merge, take, tap } from 'rxjs';
import type { ControllerEvent, InstanceResult } from '../src/events.ts';
import type { KubeObject, ResourceChange } from '../src/k8s/resource.ts';
import type { ObjectStatus } from '../src/status/types.ts';
import { type PatchAnswer, type StatusEvent, type StatusTarget, statusWriter } from '../streams/status.ts';
import { configNamed, marbles, reconcileNo } from './helpers.ts';

const GW = 'gateway.networking.k8s.io/v1';
const sets = new Map([['gateways', { apiVersion: GW, resource: 'gateways' }]]);

const gatewayObject = (name: string, status?: Record<string, unknown>, rv = '1', generation = 1): KubeObject => ({
  apiVersion: GW,
  kind: 'Gateway',
  metadata: { name, namespace: 'shop', resourceVersion: rv, generation },
  spec: {},
  ...(status && { status }),
});
const declared = (name: string, generation = 1): ObjectStatus => ({
  ref: { apiVersion: GW, kind: 'Gateway', namespace: 'shop', name },
  generation,
  conditions: [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: '' },
    { type: 'Programmed', status: 'True', reason: 'Programmed', message: '', live: true },
  ],
  fields: {},
  entries: [],
});
const rendered = (label: string, ...statuses: ObjectStatus[]): ControllerEvent => ({ type: 'Rendered', reconcile: reconcileNo(1), config: configNamed(label), durationMs: 0, statuses });
const ok: InstanceResult = { endpoint: { id: 'haproxy-0', address: 'x' }, ok: true, reloaded: true, runtimeOps: 0, durationMs: 1 };
const deployed = (label: string): ControllerEvent => ({
  type: 'DeploymentCompleted',
  deployment: { id: 1, reconcile: reconcileNo(1), config: configNamed(label), endpoints: [], reason: 'change', queuedAt: 0, startedAt: 0 },
  results: [ok],
  durationMs: 1,
});
const upsert = (object: KubeObject): ResourceChange => ({ type: 'upsert', resource: 'gateways', object });

/** A fake API: the objects, merge-patched on /status, answering after `latency` (or with the next queued failure). */
function fakeApi(cold: (marbles: string, values: Record<string, PatchAnswer>) => Observable<PatchAnswer>, latency = '10ms') {
  const objects = new Map<string, KubeObject>();
  const failures: PatchAnswer[] = [];
  const calls: { name: string; body: Record<string, unknown> }[] = [];
  let rv = 100;
  return {
    objects,
    failures,
    calls,
    patch(target: StatusTarget, body: Record<string, unknown>): Observable<PatchAnswer> {
      calls.push({ name: target.name, body });
      const failure = failures.shift();
      if (failure) return cold(`${latency} (a|)`, { a: failure });
      const current = objects.get(target.name)!;
      const next = { ...current, metadata: { ...current.metadata, resourceVersion: String(++rv) }, status: { ...(current.status as object), ...(body.status as object) } };
      objects.set(target.name, next);
      return cold(`${latency} (a|)`, { a: { ok: true, object: next } });
    },
  };
}

/** The scheduler, with the frame of every task it is given to run at once (a next slice: streams/operators/sliced.ts). */
function slicesOn(scheduler: SchedulerLike): { counting: SchedulerLike; slices: number[] } {
  const slices: number[] = [];
  const counting: SchedulerLike = {
    now: () => scheduler.now(),
    schedule: ((work: () => void, delay?: number) => {
      if (delay === 0) slices.push(scheduler.now());
      return scheduler.schedule(work, delay);
    }) as SchedulerLike['schedule'],
  };
  return { counting, slices };
}

const label = map((e: StatusEvent) => (e.type === 'StatusWritten' ? `w:${e.object.name}:${e.fields.join('+')}` : `f:${e.object.name}:${e.status}:${e.retryInMs}`));
const statusOf = (api: ReturnType<typeof fakeApi>, name: string, type: string) =>
  ((api.objects.get(name)?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).find((c) => c.type === type)?.status;

describe('statusWriter', () => {
  it('writes only while leading, and Programmed once the configuration is deployed', () => {
    marbles().run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      api.objects.set('edge', gatewayObject('edge'));
      const observed$ = hot<ResourceChange>('a', { a: upsert(gatewayObject('edge')) });
      const events$ = hot<ControllerEvent>('-r 99ms d', { r: rendered('one', declared('edge')), d: deployed('one') });
      const leader$ = hot<boolean>('f 49ms t', { f: false, t: true });
      const out = statusWriter({ events$, observed$, leader$, addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets });
      // The deployment at 101ms waits for the minimum interval after the first write.
      expectObservable(out.pipe(label)).toBe('60ms a 59ms b', { a: 'w:edge:conditions', b: 'w:edge:conditions' });
      flush();
      assert.equal(statusOf(api, 'edge', 'Programmed'), 'True');
      assert.equal(api.calls.length, 2);
      assert.deepEqual((api.calls[0]!.body.metadata as { resourceVersion: string }).resourceVersion, '1', 'the resourceVersion seen is the precondition');
    });
  });

  it('starts writes minIntervalMs apart, puts back what someone else changed, and writes nothing for its own echo', () => {
    marbles().run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      for (const n of ['a', 'b', 'c']) api.objects.set(n, gatewayObject(n));
      // The watch: the objects, someone removing a's conditions at 305ms, and the echo of every write 5 ms after it.
      const echoes$ = new Subject<ResourceChange>();
      const observed$ = merge(
        hot<ResourceChange>('(abc) 300ms e', {
          a: upsert(gatewayObject('a')),
          b: upsert(gatewayObject('b')),
          c: upsert(gatewayObject('c')),
          e: upsert(gatewayObject('a', { conditions: [] }, '999')),
        }),
        echoes$.pipe(delay(5)),
      );
      const patch = (t: StatusTarget, b: Record<string, unknown>) => api.patch(t, b).pipe(tap((answer) => answer.ok && echoes$.next(upsert(answer.object))));
      const events$ = hot<ControllerEvent>('-r', { r: rendered('one', declared('a'), declared('b'), declared('c')) });
      const out = statusWriter({ events$, observed$, leader$: hot('t', { t: true }), addresses$: hot('u', { u: undefined }) }, { patch, sets });
      expectObservable(out.pipe(label)).toBe('11ms a 59ms b 59ms c 183ms d', { a: 'w:a:conditions', b: 'w:b:conditions', c: 'w:c:conditions', d: 'w:a:conditions' });
      flush();
      assert.equal(api.calls.length, 4);
    });
  });

  it('tries again after a conflict, with a backoff that doubles, and forgets an object that is gone', () => {
    marbles().run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      api.objects.set('edge', gatewayObject('edge'));
      api.objects.set('gone', gatewayObject('gone'));
      api.failures.push({ ok: false, status: 409, message: 'conflict' }, { ok: false, status: 409, message: 'conflict' });
      const observed$ = hot<ResourceChange>('(ab)', { a: upsert(gatewayObject('edge')), b: upsert(gatewayObject('gone')) });
      const events$ = hot<ControllerEvent>('r', { r: rendered('one', declared('edge')) });
      const out = statusWriter({ events$, observed$, leader$: hot('t', { t: true }), addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets }, { retryMs: 100 });
      // 10ms: conflict, again in 100 ms; 120ms: conflict, again in 200 ms; 330ms: written.
      expectObservable(out.pipe(label)).toBe('10ms a 109ms b 209ms c', { a: 'f:edge:409:100', b: 'f:edge:409:200', c: 'w:edge:conditions' });
      flush();
      assert.equal(statusOf(api, 'edge', 'Accepted'), 'True');
    });
    marbles().run(({ cold, hot, expectObservable }) => {
      const api = fakeApi(cold);
      api.objects.set('edge', gatewayObject('edge'));
      api.failures.push({ ok: false, status: 500, message: 'boom' });
      const observed$ = hot<ResourceChange>('a 50ms d', { a: upsert(gatewayObject('edge')), d: { type: 'delete', resource: 'gateways', object: gatewayObject('edge') } });
      const events$ = hot<ControllerEvent>('r', { r: rendered('one', declared('edge')) });
      const out = statusWriter({ events$, observed$, leader$: hot('t', { t: true }), addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets }, { retryMs: 100 });
      // Deleted while waiting for its retry: never tried again.
      expectObservable(out.pipe(label), '^ 1s !').toBe('10ms a', { a: 'f:edge:500:100' });
    });
  });

  it('after a restart, leaves the address an Ingress shows until a deployment says what serves it', () => {
    const ingressSets = new Map([['ingresses', { apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' }]]);
    const shown = { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } };
    const web: KubeObject = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'web', namespace: 'shop', resourceVersion: '1', generation: 1 }, spec: {}, status: shown };
    const declaredWeb: ObjectStatus = { ref: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'shop', name: 'web' }, generation: 1, served: true, conditions: [], fields: {}, entries: [] };
    marbles().run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      api.objects.set('web', web);
      const observed$ = hot<ResourceChange>('a', { a: { type: 'upsert', resource: 'ingresses', object: web } });
      // Rendered at 1ms; the first deployment fails at 100ms (an instance is down), the next one at 300ms is live.
      const events$ = hot<ControllerEvent>('-r 98ms f 199ms d', { r: rendered('one', declaredWeb), f: { ...deployed('one'), results: [{ ...ok, ok: false, error: 'connection refused' }] } as ControllerEvent, d: deployed('one') });
      const out = statusWriter({ events$, observed$, leader$: hot('t', { t: true }), addresses$: hot('u', { u: [{ ip: '192.0.2.1' }] }) }, { patch: (t, b) => api.patch(t, b), sets: ingressSets });
      expectObservable(out.pipe(label), '^ 1s !').toBe('');
      flush();
      assert.deepEqual(api.calls, [], 'the address was never taken away, nor written again');
    });
  });

  it('after a restart, leaves a Programmed condition the cluster shows until a deployment says what is live, and writes Pending where none is shown', () => {
    marbles().run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      // edge shows what the haprx before the restart wrote; fresh is new, and shows nothing.
      const shown = { conditions: declared('edge').conditions.map((c) => ({ type: c.type, status: c.status, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z', reason: c.reason, message: c.message })) };
      api.objects.set('edge', gatewayObject('edge', shown));
      api.objects.set('fresh', gatewayObject('fresh'));
      const observed$ = hot<ResourceChange>('(ab)', { a: upsert(gatewayObject('edge', shown)), b: upsert(gatewayObject('fresh')) });
      const events$ = hot<ControllerEvent>('r 199ms d', { r: rendered('one', declared('edge'), declared('fresh')), d: deployed('one') });
      const out = statusWriter({ events$, observed$, leader$: hot('t', { t: true }), addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets });
      // fresh: Programmed Unknown/Pending at once, True once deployed. edge: nothing to write, before or after.
      expectObservable(out.pipe(label), '^ 1s !').toBe('10ms a 199ms b', { a: 'w:fresh:conditions', b: 'w:fresh:conditions' });
      flush();
      assert.deepEqual(api.calls.map((c) => c.name), ['fresh', 'fresh']);
      assert.equal(statusOf(api, 'edge', 'Programmed'), 'True');
      assert.equal(statusOf(api, 'fresh', 'Programmed'), 'True');
    });
  });

  it('looks for the next object to write in slices, so that thousands with nothing to write do not hold the event loop', () => {
    const scheduler = marbles();
    scheduler.run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      // 300 Gateways, each already showing what the render declares; the last one shows nothing yet.
      const names = Array.from({ length: 300 }, (_, i) => `gw-${i}`);
      const upToDate = (name: string) => {
        const { conditions } = declared(name);
        return { conditions: conditions.map((c) => ({ type: c.type, status: c.status, observedGeneration: 1, lastTransitionTime: '1970-01-01T00:00:00Z', reason: c.reason, message: c.message })) };
      };
      const objects = names.map((n, i) => gatewayObject(n, i < names.length - 1 ? upToDate(n) : undefined));
      for (const o of objects) api.objects.set(o.metadata.name, o);
      const observed$ = hot<ResourceChange>('a', { a: { type: 'replace', resource: 'gateways', objects } });
      const events$ = hot<ControllerEvent>('(rd)', { r: rendered('one', ...names.map((n) => declared(n))), d: deployed('one') });
      // Every plan costs a millisecond by this clock: a slice of the 10 ms budget plans ten objects.
      let clock = 0;
      const { counting, slices } = slicesOn(scheduler);
      const leader$ = hot<boolean>('f 19ms t', { f: false, t: true });
      const out = statusWriter({ events$, observed$, leader$, addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets, scheduler: counting, clock: () => clock++ });
      // Leading from 20ms: all 300 are looked at, and only the last has something to write (answered 10 ms later).
      expectObservable(out.pipe(label), '^ 1s !').toBe('30ms a', { a: 'w:gw-299:conditions' });
      flush();
      assert.deepEqual(api.calls.map((c) => c.name), ['gw-299']);
      assert.ok(slices.length >= 25, `the 300 plans after the deployment ran in ${slices.length} slices`);
    });
  });

  it("takes a render's declarations into the book in slices, each event in turn", () => {
    const scheduler = marbles();
    scheduler.run(({ cold, hot, expectObservable, flush }) => {
      const api = fakeApi(cold);
      const names = Array.from({ length: 600 }, (_, i) => `gw-${i}`);
      const objects = names.map((n) => gatewayObject(n));
      for (const o of objects) api.objects.set(o.metadata.name, o);
      // The render and its deployment at once, while not leading: nothing but the book's work.
      const observed$ = hot<ResourceChange>('a', { a: { type: 'replace', resource: 'gateways', objects } });
      const events$ = hot<ControllerEvent>('(rd)', { r: rendered('one', ...names.map((n) => declared(n))), d: deployed('one') });
      const leader$ = hot<boolean>('f 19ms t', { f: false, t: true });
      let clock = 0;
      const { counting, slices } = slicesOn(scheduler);
      // Every step costs a millisecond by this clock, and a slice may take one.
      const out = statusWriter({ events$, observed$, leader$, addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets, scheduler: counting, clock: () => clock++ }, { sliceMs: 1 });
      // Leading from 20ms: the first write shows the deployment taken after the render, Programmed True.
      expectObservable(out.pipe(label, take(1))).toBe('30ms (a|)', { a: 'w:gw-0:conditions' });
      flush();
      assert.ok(slices.filter((at) => at === 0).length >= 4, `the render's 600 declarations and the keys they changed, then the deployment's, in ${slices.filter((at) => at === 0).length} slices`);
      assert.equal(statusOf(api, 'gw-0', 'Programmed'), 'True');
    });
  });

  it('leaves an object alone while the cluster has a newer generation than the render that declared it', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const api = fakeApi(cold);
      api.objects.set('edge', gatewayObject('edge', undefined, '5', 2));
      const observed$ = hot<ResourceChange>('a', { a: upsert(gatewayObject('edge', undefined, '5', 2)) });
      const events$ = hot<ControllerEvent>('r 50ms s', { r: rendered('one', declared('edge', 1)), s: rendered('two', declared('edge', 2)) });
      const out = statusWriter({ events$, observed$, leader$: hot('t', { t: true }), addresses$: hot('u', { u: undefined }) }, { patch: (t, b) => api.patch(t, b), sets });
      expectObservable(out.pipe(label), '^ 1s !').toBe('61ms a', { a: 'w:edge:conditions' });
    });
  });
});
