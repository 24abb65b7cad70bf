import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { DeployRequest, Desired, Endpoint } from '../src/events.ts';
import { drift } from '../streams/drift.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const state = (name: string, endpoints: Endpoint[] = [endpoint('e')]): Desired => ({ reconcile: reconcileNo(1), config: configNamed(name), endpoints });
const label = map((r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[0]!.slice(2)}:${r.endpoints.map((e) => e.id).join(',')}`);

describe('drift', () => {
  it('redeploys the desired state to every instance after the idle interval, not before, and again while idle', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a', { a: state('one', [endpoint('e1'), endpoint('e2')]) });
      expectObservable(drift(states, 60_000).pipe(label), '^ 130s !').toBe('60s d 59999ms d', { d: 'drift:one:e1,e2' });
    });
  });

  it('restarts the idle clock on every change of the desired state', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a 59s b', { a: state('one'), b: state('two') });
      // b comes 1 s before a's drift would have fired: the next drift is 60 s after b.
      expectObservable(drift(states, 60_000).pipe(label), '^ 130s !').toBe('59001ms 60s d', { d: 'drift:two:e' });
    });
  });

  it('has nothing to redeploy while there is no instance', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a 9s b', { a: state('one'), b: state('one', []) });
      expectObservable(drift(states, 60_000).pipe(label), '^ 130s !').toBe('');
    });
  });

  it('is off with an interval of 0', () => {
    marbles().run(({ hot, expectObservable }) => {
      expectObservable(drift(hot<Desired>('a', { a: state('one') }), 0)).toBe('|');
    });
  });
});
