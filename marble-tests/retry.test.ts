import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Subject, map } from 'rxjs';
import type { ControllerEvent, DeployRequest, Deployment, Desired, Endpoint } from '../src/events.ts';
import { instanceRetries } from '../streams/retry.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const state = (name: string, ...endpoints: Endpoint[]): Desired => ({ reconcile: reconcileNo(1), config: configNamed(name), endpoints });
const deployment = (...ids: string[]): Deployment => ({ ...state('any', ...ids.map(endpoint)), reason: 'change', queuedAt: 0, id: 1, startedAt: 0 });
const result = (id: string, ok: boolean): ControllerEvent => ({
  type: ok ? 'InstanceDeployed' : 'InstanceDeployFailed',
  deployment: deployment(id),
  result: { endpoint: endpoint(id), ok, reloaded: false, runtimeOps: 0, durationMs: 0, ...(!ok && { error: 'HTTP 503' }) },
});
const events: Record<string, ControllerEvent> = {
  f: result('e1', false),
  o: result('e1', true),
  g: result('e2', false),
  s: { type: 'DeploymentStarted', deployment: deployment('e1', 'e2') },
};
const label = map((r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[0]!.slice(2)}:${r.endpoints.map((e) => e.id).join(',')}`);
/** No jitter: delays are exactly 1 s, 2 s, 4 s ... */
const exact = { backoff: { initialMs: 1000, maxMs: 60_000, jitter: 0.2 }, random: () => 0 };

describe('instanceRetries', () => {
  it('retries a failed instance alone, after 1 s, then 2 s, with the newest configuration; a success resets the backoff', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a 1499ms b', { a: state('one', endpoint('e1'), endpoint('e2')), b: state('two', endpoint('e1'), endpoint('e2')) });
      const deployed = hot<ControllerEvent>('f 1099ms f 2099ms o 799ms f', events);
      // Failures at 0, 1100 (the retry failed again), 4000 (after a success at 3200).
      expectObservable(instanceRetries(deployed, states, exact).pipe(label)).toBe('1000ms r 2099ms t 1899ms u', {
        r: 'retry:one:e1',
        t: 'retry:two:e1',
        u: 'retry:two:e1',
      });
    });
  });

  it('doubles the delay of each failure in a row up to 60 s, each stretched by the jitter', () => {
    const scheduler = marbles();
    const times: number[] = [];
    scheduler.run(({ hot }) => {
      const states = hot<Desired>('a', { a: state('one', endpoint('e1')) });
      // Fed back as in the graph: every retry fails at once.
      const deployed = new Subject<ControllerEvent>();
      const retries = instanceRetries(deployed, states, { ...exact, random: () => 0.5 }).subscribe(() => {
        times.push(scheduler.now());
        deployed.next(events.f!);
      });
      scheduler.schedule(() => deployed.next(events.f!), 0);
      scheduler.schedule(() => retries.unsubscribe(), 140_000);
    });
    // 1.1 s, 2.2 s, 4.4 s ... (half of the 20 % jitter), then 66 s: 60 s is the longest before jitter.
    assert.deepEqual(times, [1100, 3300, 7700, 16_500, 34_100, 69_300, 135_300]);
  });

  it('lets a deployment that starts replace the pending retry, keeping the count', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a', { a: state('one', endpoint('e1'), endpoint('e2')) });
      // Failed at 0; a deployment to both starts at 500 (no retry at 1000) and e1 fails again at 600: 2 s later.
      const deployed = hot<ControllerEvent>('f 499ms s 99ms f', events);
      expectObservable(instanceRetries(deployed, states, exact).pipe(label)).toBe('2600ms r', { r: 'retry:one:e1' });
    });
  });

  it('keeps instances apart: one failing does not delay or reset another', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a', { a: state('one', endpoint('e1'), endpoint('e2')) });
      const deployed = hot<ControllerEvent>('f 299ms g 199ms o', events);
      // e1 succeeded at 500 (its retry is cancelled); e2's retry still comes 1 s after its failure at 300.
      expectObservable(instanceRetries(deployed, states, exact).pipe(label)).toBe('1300ms r', { r: 'retry:one:e2' });
    });
  });

  it('stops the retries of an instance that leaves, and starts afresh when it is back', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a 499ms b 999ms a', { a: state('one', endpoint('e1'), endpoint('e2')), b: state('one', endpoint('e1')) });
      // e2 fails at 0 and at 200 (its retry would come 2 s later), leaves at 500, is back at 1500 and fails at 2000.
      const deployed = hot<ControllerEvent>('g 199ms g 1799ms g', events);
      expectObservable(instanceRetries(deployed, states, exact).pipe(label)).toBe('3000ms r', { r: 'retry:one:e2' });
    });
  });

  it('lets go of its inputs when unsubscribed, with instances still followed', () => {
    marbles().run(({ hot, expectObservable, expectSubscriptions }) => {
      const states = hot<Desired>('a', { a: state('one', endpoint('e1'), endpoint('e2')) });
      const deployed = hot<ControllerEvent>('f-g', events);
      expectObservable(instanceRetries(deployed, states, exact), '^ 100ms !').toBe('');
      expectSubscriptions(states.subscriptions).toBe('^ 100ms !');
      expectSubscriptions(deployed.subscriptions).toBe('^ 100ms !');
    });
  });
});
