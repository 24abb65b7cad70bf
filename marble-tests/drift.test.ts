import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { DeployRequest } from '../src/events.ts';
import { drift } from '../streams/drift.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const request = (name: string): DeployRequest => ({ reconcile: reconcileNo(1), config: configNamed(name), endpoints: [endpoint('e')], reason: 'change', queuedAt: 0 });
const label = map((r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[0]!.slice(2)}`);

describe('drift', () => {
  it('redeploys the last configuration after the idle interval, not before, and again while idle', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a', { a: request('one') });
      expectObservable(drift(requests, 60_000).pipe(label), '^ 130s !').toBe('60s d 59999ms d', { d: 'drift:one' });
    });
  });

  it('restarts the idle clock on every deployment request', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a 59s b', { a: request('one'), b: request('two') });
      // b comes 1 s before a's drift would have fired: the next drift is 60 s after b.
      expectObservable(drift(requests, 60_000).pipe(label), '^ 130s !').toBe('59001ms 60s d', { d: 'drift:two' });
    });
  });

  it('is off with an interval of 0', () => {
    marbles().run(({ hot, expectObservable }) => {
      expectObservable(drift(hot<DeployRequest>('a', { a: request('one') }), 0)).toBe('|');
    });
  });
});
