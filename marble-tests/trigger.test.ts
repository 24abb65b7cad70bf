import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { interval, map, merge, take, of, concat } from 'rxjs';
import type { ResourceChange } from '../src/k8s/resource.ts';
import { trigger } from '../streams/trigger.ts';
import { marbles, synced, upsert } from './helpers.ts';

const options = { debounceMs: 500, maxWaitMs: 2000 };
const label = map((r: { seq: number; cause: { reason: string; changes: readonly unknown[] } }) => `${r.seq}:${r.cause.reason}:${r.cause.changes.length}`);

describe('trigger', () => {
  it('does nothing until every watched set has synced, then reconciles at once', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('a 99ms s 899ms b 99ms t', {
        a: upsert('services', 'web', '1'),
        s: synced('services'),
        b: upsert('ingresses', 'site', '1'),
        t: synced('ingresses'),
      });
      // Changes before the last sync are in the stores already; the sync itself is the trigger.
      expectObservable(trigger(changes, ['services', 'ingresses'], options).pipe(label)).toBe('1100ms x', { x: '1:config:0' });
    });
  });

  it('batches a burst of changes after the sync into one reconciliation', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('s 99ms a 49ms b 49ms c', {
        s: synced('services'),
        a: upsert('services', 'a', '1'),
        b: upsert('services', 'b', '1'),
        c: upsert('services', 'c', '1'),
      });
      // a@100, b@150, c@200: quiet from 200 → one reconcile at 700 carrying all three changes.
      expectObservable(trigger(changes, ['services'], options).pipe(label)).toBe('s 699ms x', { s: '1:config:0', x: '2:resources:3' });
    });
  });

  it('reconciles a lone change after a quiet period at once, and batches the changes that follow it', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('s 999ms a 99ms b 99ms c 1999ms d', {
        s: synced('services'),
        a: upsert('services', 'a', '1'),
        b: upsert('services', 'b', '1'),
        c: upsert('services', 'c', '1'),
        d: upsert('services', 'd', '1'),
      });
      // a@1000 after 1 s of quiet: at once; b@1100 and c@1200 follow it: one reconcile at
      // 1700; d@3200, quiet again: at once.
      expectObservable(trigger(changes, ['services'], options).pipe(label)).toBe('s 999ms a 699ms x 1499ms d', { s: '1:config:0', a: '2:resources:1', x: '3:resources:2', d: '4:resources:1' });
    });
  });

  it('reconciles the objects that arrive together after a quiet period (one file, one watch batch) at once, in one batch', () => {
    marbles().run(({ cold, expectObservable }) => {
      // A new backend: its Service, EndpointSlice and Ingress come in one turn.
      const changes = cold<ResourceChange>('s 999ms (abc) 99ms d', {
        s: synced('services'),
        a: upsert('services', 'web', '1'),
        b: upsert('endpointslices', 'web-1', '1'),
        c: upsert('ingresses', 'web', '1'),
        d: upsert('services', 'd', '1'),
      });
      // (abc)@1000: one reconcile at once with all three; d@1104 follows it: debounced to 1604.
      expectObservable(trigger(changes, ['services'], options).pipe(label)).toBe('s 999ms x 603ms d', { s: '1:config:0', x: '2:resources:3', d: '3:resources:1' });
    });
  });

  it('tells when the oldest change of each batch was seen, where its propagation starts', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('s 999ms a 99ms b 99ms c', { s: synced('services'), a: upsert('services', 'a', '1'), b: upsert('services', 'b', '1'), c: upsert('services', 'c', '1') });
      expectObservable(trigger(changes, ['services'], options).pipe(map((r) => `${r.seq}@${r.at}:${r.firstChangeAt ?? '-'}`))).toBe('s 999ms a 699ms x', { s: '1@0:-', a: '2@1000:1000', x: '3@1700:1100' });
    });
  });

  it('reconciles at least every 2 s while a set churns every 100 ms for 10 s', () => {
    const scheduler = marbles();
    const at: number[] = [];
    scheduler.run(({ flush }) => {
      const churn = interval(100, scheduler).pipe(
        take(100),
        map((i) => upsert('endpointslices', 'web', String(i + 1))),
      );
      trigger(concat(of(synced('endpointslices')), churn), ['endpointslices'], { ...options, scheduler }).subscribe(() => at.push(scheduler.now()));
      flush();
    });
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    assert.ok(at.length >= 6, `${at.length} reconciliations`);
    assert.ok(gaps.every((g) => g <= 2000), `gaps: ${gaps.join(', ')}`);
  });

  it('with debounce 0 reconciles on every change', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('s-a-b', { s: synced('svc'), a: upsert('svc', 'a', '1'), b: upsert('svc', 'b', '1') });
      expectObservable(trigger(changes, ['svc'], { debounceMs: 0, maxWaitMs: 2000 }).pipe(label)).toBe('x-y-z', {
        x: '1:config:0',
        y: '2:resources:1',
        z: '3:resources:1',
      });
    });
  });

  it('with nothing to watch reconciles once, at start', () => {
    marbles().run(({ cold, expectObservable }) => {
      expectObservable(trigger(cold<ResourceChange>('-----'), [], options).pipe(label)).toBe('x', { x: '1:config:0' });
    });
  });

  it('ignores a later re-sync of a set: it changes nothing a template sees', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = merge(cold<ResourceChange>('s 999ms s', { s: synced('svc') }));
      expectObservable(trigger(changes, ['svc'], options).pipe(label)).toBe('x', { x: '1:config:0' });
    });
  });

  it('records each batched change for tracing: kind, namespace, name, resourceVersion', () => {
    marbles().run(({ cold, expectObservable }) => {
      const changes = cold<ResourceChange>('s a', { s: synced('svc'), a: upsert('svc', 'web', '42') });
      expectObservable(trigger(changes, ['svc'], options).pipe(map((r) => r.cause.changes))).toBe('x 500ms y', {
        x: [],
        y: [{ resource: 'svc', type: 'upsert', kind: 'Service', namespace: 'default', name: 'web', resourceVersion: '42' }],
      });
    });
  });
});
