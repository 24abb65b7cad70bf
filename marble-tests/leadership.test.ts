import { describe, it } from 'node:test';
import { type Observable, map, mergeMap } from 'rxjs';
import type { DeployRequest, Desired } from '../src/events.ts';
import { whileLeader } from '../streams/leadership.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const state = (name: string): Desired => ({ reconcile: reconcileNo(1), config: configNamed(name), endpoints: [endpoint('e1'), endpoint('e2')] });
const request = (name: string): DeployRequest => ({ ...state(name), endpoints: [endpoint('e1')], reason: 'change', queuedAt: 0 });
const label = (r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[0]!.slice(2)}:${r.endpoints.map((e) => e.id).join(',')}`;
/** A term of leadership that passes its requests straight on, as labels. */
const passOn = (requests$: Observable<DeployRequest>) => requests$.pipe(map(label));
const shown = map((e: string | { type: string }) => (typeof e === 'string' ? e : e.type));

describe('whileLeader', () => {
  it('holds requests back while another replica leads, and deploys the desired state to every instance at once on taking the lead', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a--b------c', { a: request('one'), b: request('two'), c: request('three') });
      const states = hot<Desired>('a--b', { a: state('one'), b: state('two') });
      const leader = hot<boolean>('f------t', { f: false, t: true });
      expectObservable(whileLeader(requests, states, leader, passOn).pipe(shown)).toBe('-------l--c', { l: 'leader:two:e1,e2', c: 'change:three:e1' });
    });
  });

  it('aborts the deployment in flight when leadership is lost, says so, and takes the newest state over on regaining it', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const requests = hot<DeployRequest>('a-------b', { a: request('one'), b: request('two') });
      const states = hot<Desired>('a-------b', { a: state('one'), b: state('two') });
      const leader = hot<boolean>('t--f--------t', { t: true, f: false });
      // Each deployment takes 5 frames: the first is still running when the lead is lost at 3.
      const deployment = cold<string>('-----(x|)', { x: 'deployed' });
      const deploying = (requests$: Observable<DeployRequest>) => requests$.pipe(mergeMap(() => deployment));
      expectObservable(whileLeader(requests, states, leader, deploying).pipe(shown)).toBe('---L-------------x', { L: 'LeadershipLost', x: 'deployed' });
      // The first deployment is cut at the loss; the lead taken at 12 deploys b's state, done at 17.
      expectSubscriptions(deployment.subscriptions).toBe(['^--!', '------------^----!']);
    });
  });

  it('ignores a repeated leadership signal', () => {
    marbles().run(({ hot, expectObservable }) => {
      const requests = hot<DeployRequest>('-a', { a: request('one') });
      const leader = hot<boolean>('t-t-t', { t: true });
      expectObservable(whileLeader(requests, hot<Desired>('a', { a: state('one') }), leader, passOn).pipe(shown)).toBe('-a', { a: 'change:one:e1' });
    });
  });
});
