import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { DeployRequest } from '../src/events.ts';
import { whileLeader } from '../streams/leadership.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const request = (name: string): DeployRequest => ({ reconcile: reconcileNo(1), config: configNamed(name), endpoints: [endpoint('e')], reason: 'change', queuedAt: 0 });
const label = map((r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[0]!.slice(2)}`);

describe('whileLeader', () => {
  it('holds requests back while another replica leads, and deploys the newest at once on becoming leader', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a--b------c', { a: request('one'), b: request('two'), c: request('three') });
      const leader = hot<boolean>('f------t', { f: false, t: true });
      expectObservable(whileLeader(requests, leader).pipe(label)).toBe('-------l--c', { l: 'leader:two', c: 'change:three' });
    });
  });

  it('stops deploying when leadership is lost', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a---b---c', { a: request('one'), b: request('two'), c: request('three') });
      const leader = hot<boolean>('t-f---t', { t: true, f: false });
      expectObservable(whileLeader(requests, leader).pipe(label)).toBe('a-----l-c', { a: 'change:one', l: 'leader:two', c: 'change:three' });
    });
  });

  it('ignores a repeated leadership signal', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a', { a: request('one') });
      const leader = hot<boolean>('t-t-t', { t: true });
      expectObservable(whileLeader(requests, leader).pipe(label)).toBe('a', { a: 'change:one' });
    });
  });
});
