import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Observable, defer, tap } from 'rxjs';
import type { DeployRequest } from '../src/events.ts';
import { schedule } from '../streams/schedule.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const request = (name: string): DeployRequest => ({
  reconcile: reconcileNo(1),
  config: configNamed(name),
  endpoints: [endpoint('a')],
  reason: 'change',
  queuedAt: 0,
});
const values = { a: request('a'), b: request('b'), c: request('c'), d: request('d') };
const nameOf = (r: DeployRequest) => r.config.main.split('\n')[0]!.slice(2);

describe('schedule', () => {
  it('a request waiting for the interval takes the configuration of a newer one deployed elsewhere (the fast path), and only a newer one', () => {
    const at = (name: string, seq: number): DeployRequest => ({ ...request(name), reconcile: reconcileNo(seq) });
    marbles().run(({ cold, hot, expectObservable }) => {
      // b (reconciliation 2) waits behind a; f (3) is deployed elsewhere meanwhile; o (1) is older than what waits.
      const requests = hot<DeployRequest>('a 99ms b 3999ms c', { a: at('a', 1), b: at('b', 2), c: at('c', 5) });
      const displace = hot<DeployRequest>('-- 499ms f 2199ms o', { f: at('f', 3), o: at('o', 1) });
      const run = (r: DeployRequest): Observable<string> => cold('100ms (x|)', { x: `${nameOf(r)}${r.reconcile.seq}` });
      expectObservable(schedule(requests, run, 2000, undefined, displace)).toBe('100ms a 1999ms f 2099ms c', { a: 'a1', f: 'f3', c: 'c5' });
    });
  });

  it('deploys two validations 500 ms apart 2 s apart', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const requests = hot<DeployRequest>('a 499ms b', values);
      // A deployment takes 100 ms and emits its name when done.
      const run = (r: DeployRequest): Observable<string> => cold('100ms (x|)', { x: nameOf(r) });
      expectObservable(schedule(requests, run, 2000)).toBe('100ms a 1999ms b', { a: 'a', b: 'b' });
    });
  });

  it('while a deployment runs, keeps only the newest request and starts it when the run ends', () => {
    const started: string[] = [];
    marbles().run(({ cold, hot, expectObservable }) => {
      // The first deployment takes 5 s, longer than the interval; b, c and d arrive meanwhile.
      const requests = hot<DeployRequest>('a 999ms b 999ms c 999ms d', values);
      const run = (r: DeployRequest): Observable<string> => {
        started.push(nameOf(r));
        return cold(nameOf(r) === 'a' ? '5000ms (x|)' : '100ms (x|)', { x: nameOf(r) });
      };
      expectObservable(schedule(requests, run, 2000)).toBe('5000ms a 99ms d', { a: 'a', d: 'd' });
    });
    assert.deepEqual(started, ['a', 'd']);
  });

  it('merges the requests that wait: one for a single instance never displaces one for all, and the newest configuration goes to every instance named', () => {
    const started: string[] = [];
    marbles().run(({ cold, hot, expectObservable }) => {
      const forOnly = (r: DeployRequest, reason: DeployRequest['reason'], ...ids: string[]): DeployRequest => ({ ...r, reason, endpoints: ids.map(endpoint) });
      // While a runs: a change of b for e1 and e2, then a retry of e3 and a joiner e4, both already carrying c.
      const requests = hot<DeployRequest>('a 999ms b 999ms c 999ms d', {
        a: values.a,
        b: forOnly(values.b, 'change', 'e1', 'e2'),
        c: forOnly(values.c, 'retry', 'e3'),
        d: forOnly(values.c, 'endpoints', 'e4'),
      });
      const run = (r: DeployRequest): Observable<string> => {
        started.push(`${r.reason}:${nameOf(r)}:${r.endpoints.map((e) => e.id).join(',')}`);
        return cold(nameOf(r) === 'a' ? '5000ms (x|)' : '100ms (x|)', { x: nameOf(r) });
      };
      expectObservable(schedule(requests, run, 2000)).toBe('5000ms a 99ms c', { a: 'a', c: 'c' });
    });
    assert.deepEqual(started, ['change:a:a', 'change:c:e1,e2,e3,e4']);
  });

  it('never runs two deployments at once', () => {
    const scheduler = marbles();
    const log: string[] = [];
    scheduler.run(({ cold, hot, flush }) => {
      const requests = hot<DeployRequest>('a 1999ms b 1999ms c 1999ms d', values);
      let running = 0;
      // Each run takes 2.5 s, longer than the 2 s interval.
      const run = (r: DeployRequest): Observable<string> =>
        defer(() => {
          running++;
          log.push(`start ${nameOf(r)} at ${scheduler.now()} with ${running} running`);
          return cold('2500ms (x|)', { x: nameOf(r) }).pipe(tap({ complete: () => running-- }));
        });
      schedule(requests, run, 2000).subscribe();
      flush();
    });
    assert.ok(log.length >= 3, log.join('\n'));
    assert.ok(log.every((line) => line.endsWith('with 1 running')), log.join('\n'));
  });

  it('aborts the running deployment when the schedule is torn down', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const requests = hot<DeployRequest>('a', values);
      const deployment = cold<string>('1000ms (x|)', { x: 'a' });
      expectObservable(schedule(requests, () => deployment, 2000), '^ 300ms !').toBe('');
      expectSubscriptions(deployment.subscriptions).toBe('^ 300ms !');
    });
  });

  it('lets the first request through at once', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const requests = hot<DeployRequest>('---a', values);
      expectObservable(schedule(requests, (r) => cold('(x|)', { x: nameOf(r) }), 2000)).toBe('---a', { a: 'a' });
    });
  });
});
