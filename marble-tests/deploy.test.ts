import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Observable, NEVER, defer, map, tap, throwError } from 'rxjs';
import type { DeployRequest, Endpoint, InstanceOutcome } from '../src/events.ts';
import { type DeployEvent, deployer } from '../streams/deploy.ts';
import { OK, configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const requestFor = (...ids: string[]): DeployRequest => ({
  reconcile: reconcileNo(1),
  config: configNamed('c'),
  endpoints: ids.map(endpoint),
  reason: 'change',
  queuedAt: 0,
});
const label = map((e: DeployEvent) => {
  switch (e.type) {
    case 'DeploymentStarted':
      return `start#${e.deployment.id}`;
    case 'InstanceDeployed':
      return `ok:${e.result.endpoint.id}`;
    case 'InstanceDeployFailed':
      return `fail:${e.result.endpoint.id}:${e.result.error}`;
    case 'DeploymentCompleted':
      return `done:${e.results.map((r) => `${r.endpoint.id}=${r.ok}`).join(',')}`;
  }
});

describe('deploy', () => {
  it('deploys to every endpoint in parallel and reports each, then the whole', () => {
    marbles().run(({ cold, expectObservable }) => {
      const latency: Record<string, string> = { a: '300ms (r|)', b: '100ms (r|)', c: '200ms (r|)' };
      const deploy = deployer({ deployTo: (e: Endpoint) => cold<InstanceOutcome>(latency[e.id]!, { r: OK }) }, { maxParallel: 0, timeoutMs: 10_000 });
      expectObservable(deploy(requestFor('a', 'b', 'c')).pipe(label)).toBe('s 99ms b 99ms c 99ms (ad|)', {
        s: 'start#1',
        a: 'ok:a',
        b: 'ok:b',
        c: 'ok:c',
        d: 'done:b=true,c=true,a=true',
      });
    });
  });

  it('does not let a failing or hanging endpoint hold back the others', () => {
    marbles().run(({ cold, expectObservable }) => {
      const behaviour: Record<string, () => Observable<InstanceOutcome>> = {
        ok: () => cold('100ms (r|)', { r: OK }),
        broken: () => throwError(() => new Error('connection refused')),
        hangs: () => NEVER,
        says_no: () => cold('50ms (r|)', { r: { ok: false, reloaded: false, runtimeOps: 0, error: 'reload failed' } }),
      };
      const deploy = deployer({ deployTo: (e: Endpoint) => behaviour[e.id]!() }, { maxParallel: 0, timeoutMs: 1000 });
      expectObservable(deploy(requestFor('hangs', 'broken', 'says_no', 'ok')).pipe(label)).toBe('(sb) 46ms n 49ms o 899ms (hd|)', {
        s: 'start#1',
        b: 'fail:broken:connection refused',
        n: 'fail:says_no:reload failed',
        o: 'ok:ok',
        h: 'fail:hangs:no answer within 1000 ms',
        d: 'done:broken=false,says_no=false,ok=true,hangs=false',
      });
    });
  });

  it('abandons a hanging endpoint: its deployment is unsubscribed at the timeout', () => {
    marbles().run(({ expectObservable, expectSubscriptions, cold }) => {
      const hang = cold<InstanceOutcome>('-');
      const deploy = deployer({ deployTo: () => hang }, { maxParallel: 0, timeoutMs: 500 });
      expectObservable(deploy(requestFor('x')).pipe(label)).toBe('s 499ms (fd|)', {
        s: 'start#1',
        f: 'fail:x:no answer within 500 ms',
        d: 'done:x=false',
      });
      expectSubscriptions(hang.subscriptions).toBe('^ 499ms !');
    });
  });

  it('bounds concurrency by maxParallel', () => {
    const scheduler = marbles();
    let running = 0;
    let peak = 0;
    scheduler.run(({ cold, flush }) => {
      const deploy = deployer(
        {
          deployTo: () =>
            defer(() => {
              peak = Math.max(peak, ++running);
              return cold<InstanceOutcome>('100ms (r|)', { r: OK }).pipe(tap({ next: () => running-- }));
            }),
        },
        { maxParallel: 2, timeoutMs: 10_000 },
      );
      deploy(requestFor('a', 'b', 'c', 'd', 'e')).subscribe();
      flush();
    });
    assert.equal(peak, 2);
  });

  it('numbers deployments and times them in scheduler time', () => {
    marbles().run(({ cold, expectObservable }) => {
      const deploy = deployer({ deployTo: () => cold<InstanceOutcome>('250ms (r|)', { r: OK }) }, { maxParallel: 0, timeoutMs: 10_000 });
      const completed = (e: DeployEvent) => (e.type === 'DeploymentCompleted' ? `#${e.deployment.id}:${e.durationMs}:${e.results[0]!.durationMs}` : null);
      expectObservable(deploy(requestFor('a')).pipe(map(completed))).toBe('n 249ms (ad|)', { n: null, a: null, d: '#1:250:250' });
    });
  });
});
