import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { ControllerEvent, DeployRequest, Deployment, Reconcile } from '../src/events.ts';
import { holdWhileFast } from '../streams/render-hold.ts';
import { OK, configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const options = { maxHoldMs: 500 };

function deployment(id: number, seq: number, reason: DeployRequest['reason'] = 'fast'): Deployment {
  return { id, startedAt: 0, reconcile: reconcileNo(seq), config: configNamed(`c${seq}`), endpoints: [endpoint('haproxy-0')], reason, queuedAt: 0 };
}
const started = (id: number, seq: number, reason?: DeployRequest['reason']): ControllerEvent => ({ type: 'DeploymentStarted', deployment: deployment(id, seq, reason) });
const completed = (id: number, seq: number, reason?: DeployRequest['reason']): ControllerEvent => ({
  type: 'DeploymentCompleted',
  deployment: deployment(id, seq, reason),
  results: [{ ...OK, endpoint: endpoint('haproxy-0'), durationMs: 1 }],
  durationMs: 1,
});
const seqs = map((r: Reconcile) => `${r.seq}`);

describe('holdWhileFast', () => {
  it('passes a reconciliation on at once when no fast deployment runs, whatever else deploys', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 99ms b', { a: reconcileNo(1), b: reconcileNo(2) });
      const deploys$ = hot<ControllerEvent>('s', { s: started(1, 1, 'change') });
      expectObservable(holdWhileFast(reconciles$, deploys$, options).pipe(seqs)).toBe('1 99ms 2');
    });
  });

  it('looks at once when asked to (a reconciliation held before): held while a fast deployment runs, through at once otherwise', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 9ms b 99ms c', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3) });
      // A fast deployment runs from 5 to 40 ms.
      const deploys$ = hot<ControllerEvent>('5ms s 34ms e', { s: started(7, 9), e: completed(7, 9) });
      expectObservable(holdWhileFast(reconciles$, deploys$, { ...options, atTurnEnd: false }).pipe(seqs)).toBe('1 39ms 2 69ms 3');
    });
  });

  it('starts the render of a change the fast path took once its runtime deployment is over', () => {
    marbles().run(({ hot, expectObservable }) => {
      // The fast deployment of reconciliation 1 starts in the turn it arrives in, and ends 30 ms later.
      const reconciles$ = hot<Reconcile>('a', { a: reconcileNo(1) });
      const deploys$ = hot<ControllerEvent>('s 29ms e', { s: started(7, 1), e: completed(7, 1) });
      expectObservable(holdWhileFast(reconciles$, deploys$, options).pipe(seqs)).toBe('30ms 1');
    });
  });

  it('holds while the fast path plans in slices, then while the deployment it planned runs, and no longer than the maximum', () => {
    marbles().run(({ hot, expectObservable }) => {
      // Reconciliation 1's plan runs from 0 to 20 ms; the fast deployment it planned starts
      // as its outcome goes out (19 ms, before the plan is over) and ends at 50 ms.
      const reconciles$ = hot<Reconcile>('a', { a: reconcileNo(1) });
      const planning$ = hot<boolean>('t 19ms f', { t: true, f: false });
      const deploys$ = hot<ControllerEvent>('19ms s 30ms e', { s: started(7, 1), e: completed(7, 1) });
      expectObservable(holdWhileFast(reconciles$, deploys$, { ...options, planning$ }).pipe(seqs)).toBe('50ms 1');
    });
    marbles().run(({ hot, expectObservable }) => {
      // A plan that never says it ended holds for the maximum only.
      const reconciles$ = hot<Reconcile>('a', { a: reconcileNo(1) });
      expectObservable(holdWhileFast(reconciles$, hot<ControllerEvent>(''), { ...options, planning$: hot<boolean>('t', { t: true }) }).pipe(seqs)).toBe('500ms 1');
    });
  });

  it('waits for every fast deployment under way, not only the first to end', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a', { a: reconcileNo(2) });
      const deploys$ = hot<ControllerEvent>('(st) 9ms e 19ms f', { s: started(7, 1), t: started(8, 2), e: completed(7, 1), f: completed(8, 2) });
      // 7 ends at 13, 8 at 33.
      expectObservable(holdWhileFast(reconciles$, deploys$, options).pipe(seqs)).toBe('33ms 2');
    });
  });

  it('holds no longer than the maximum, counted from when the reconciliation arrived', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 99ms b', { a: reconcileNo(1), b: reconcileNo(2) });
      const deploys$ = hot<ControllerEvent>('s 99ms t', { s: started(7, 1), t: started(8, 2) });
      // Neither deployment ends. 1 waits the whole 500 ms; 2 arrived at 100 with its own
      // fast deployment, queued behind 1, and goes at 600.
      expectObservable(holdWhileFast(reconciles$, deploys$, options).pipe(seqs)).toBe('500ms 1 99ms 2');
    });
  });

  it('keeps every reconciliation and their order: those that came during the hold follow it', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 9ms b 9ms c', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3) });
      const deploys$ = hot<ControllerEvent>('s 39ms e', { s: started(7, 1), e: completed(7, 1) });
      expectObservable(holdWhileFast(reconciles$, deploys$, options).pipe(seqs)).toBe('40ms (xyz)', { x: '1', y: '2', z: '3' });
    });
  });

  it('is not held by a fast deployment that never reported its end, once the maximum is past', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 599ms b', { a: reconcileNo(1), b: reconcileNo(2) });
      const deploys$ = hot<ControllerEvent>('s', { s: started(7, 1) });
      expectObservable(holdWhileFast(reconciles$, deploys$, options).pipe(seqs)).toBe('500ms 1 99ms 2');
    });
  });
});
