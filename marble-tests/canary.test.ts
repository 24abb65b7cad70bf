import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Observable, type SchedulerAction, type SchedulerLike, type Subscription, asyncScheduler, concat, map, tap } from 'rxjs';
import type { Steps } from '../src/steps.ts';
import type { DeployRequest, Endpoint, InstanceOutcome } from '../src/events.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { type CanaryCheck, type CanaryEvent, canaryRollout } from '../streams/canary.ts';
import { type DeployEvent, deployer } from '../streams/deploy.ts';
import { schedule } from '../streams/schedule.ts';
import { OK, configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

type Cold = <T>(marbles: string, values?: Record<string, T>) => Observable<T>;

const L = configNamed('L');
const X = configNamed('X');
const Y = configNamed('Y');
const name = (config: RenderedConfig) => config.main.split('\n')[0]!.slice(2);
const fleet = ['e1', 'e2', 'e3'].map(endpoint);

function request(config: RenderedConfig, endpoints: readonly Endpoint[] = fleet, reason: DeployRequest['reason'] = 'change', seq = 1): DeployRequest {
  return { reconcile: reconcileNo(seq), config, endpoints, reason, queuedAt: 0 };
}

const label = map((e: DeployEvent | CanaryEvent): string => {
  switch (e.type) {
    case 'CanaryStarted':
      return `canary ${name(e.config)} on ${e.endpoint.id}, then ${e.rest.map((r) => r.id).join(',')}`;
    case 'CanaryPassed':
      return `passed ${name(e.config)} after ${e.checks} checks`;
    case 'CanaryFailed':
      return `failed ${name(e.config)}: ${e.problems.join('; ')}${e.rollbackTo ? ` → back to ${e.rollbackTo === L.hash ? 'L' : e.rollbackTo}` : ', no rollback'}`;
    case 'CanaryAbandoned':
      return `abandoned ${name(e.config)} for #${e.by.seq}`;
    case 'DeploymentStarted':
      return `start ${e.deployment.reason} ${name(e.deployment.config)} ${e.deployment.endpoints.map((x) => x.id).join(',')}`;
    case 'InstanceDeployed':
      return `ok ${e.result.endpoint.id}`;
    case 'InstanceDeployFailed':
      return `fail ${e.result.endpoint.id}`;
    case 'DeploymentCompleted':
      return 'done';
  }
});

/**
 * Instances that take 10 ms to deploy and remember what they run (as the targets do),
 * every change reloading, and checks answering from `checks` in turn (5 ms each).
 */
function world(cold: Cold, options: { running?: Record<string, RenderedConfig>; checks?: CanaryCheck[]; failing?: string[]; reloads?: boolean; hangs?: boolean; verdictSteps?: number } = {}) {
  const running = new Map(Object.entries(options.running ?? { e1: L, e2: L, e3: L }));
  // With verdictSteps, the verdict comes as that many steps of 6 ms each by a clock of their own.
  let clock = 0;
  const slices = { scheduled: 0 };
  const sliceScheduler: SchedulerLike = {
    now: () => asyncScheduler.now(),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
      slices.scheduled++;
      return asyncScheduler.schedule(work, delay, state);
    },
  };
  const verdict = (reloads: boolean): boolean | Steps<boolean> =>
    options.verdictSteps === undefined
      ? reloads
      : (function* () {
          for (let i = 0; i < options.verdictSteps!; i++) {
            clock += 6;
            yield;
          }
          return reloads;
        })();
  const checks = [...(options.checks ?? [])];
  const checked: string[] = [];
  const deploy = deployer(
    {
      deployTo: (e, d): Observable<InstanceOutcome> => {
        const fails = options.failing?.includes(e.id) && d.reason === 'canary';
        return cold<InstanceOutcome>('10ms (r|)', { r: fails ? { ok: false, reloaded: false, runtimeOps: 0, error: 'reload 2026-07-01-3 failed' } : { ...OK, reloaded: true } }).pipe(
          tap((r) => (r.ok ? running.set(e.id, d.config) : running.delete(e.id))),
        );
      },
    },
    { maxParallel: 0, timeoutMs: 10_000 },
  );
  const rollout = canaryRollout(
    deploy,
    {
      check: (e, config) => {
        checked.push(`${e.id}:${name(config)}`);
        return options.hangs ? cold<CanaryCheck>('-') : cold<CanaryCheck>('5ms (r|)', { r: checks.shift() ?? { ok: true } });
      },
      reloads: (from, to) => verdict((options.reloads ?? true) && from.hash !== to.hash),
      running: (e) => running.get(e.id),
      sliceScheduler,
      clock: () => clock,
    },
    { checkForMs: 1000, intervalMs: 300 },
  );
  return { rollout, running, checked, slices };
}

/** X canaried on e1, passed after four checks, then deployed to the rest. */
const passedX = {
  a: 'canary X on e1, then e2,e3',
  b: 'start canary X e1',
  c: 'ok e1',
  d: 'done',
  e: 'passed X after 4 checks',
  f: 'start change X e2,e3',
  g: 'ok e2',
  h: 'ok e3',
  i: 'done',
};

describe('canaryRollout', () => {
  it('deploys a configuration that reloads to one instance, checks it for the stated time, then deploys to the rest', () => {
    marbles().run(({ cold, expectObservable, flush }) => {
      const { rollout, running, checked } = world(cold);
      // Checks at 10, 310, 610 and 910 ms, all fine; the window ends 1000 ms after the canary deployed.
      expectObservable(rollout(request(X)).pipe(label)).toBe('(ab) 6ms (cd) 996ms (ef) 6ms (ghi|)', passedX);
      flush();
      assert.deepEqual(checked, ['e1:X', 'e1:X', 'e1:X', 'e1:X']);
      assert.deepEqual([...running.values()].map(name), ['X', 'X', 'X']);
    });
  });

  it('rolls the canary back to what the rest run when a check fails, with a Warning, and leaves the rest untouched', () => {
    marbles().run(({ cold, expectObservable, flush }) => {
      const { rollout, running } = world(cold, { checks: [{ ok: true }, { ok: false, problems: ['reload 2026-07-01-4 failed', 'probe GET /healthz: 503'] }] });
      expectObservable(rollout(request(X)).pipe(label)).toBe('(ab) 6ms (cd) 301ms (ef) 6ms (gh|)', {
        a: 'canary X on e1, then e2,e3',
        b: 'start canary X e1',
        c: 'ok e1',
        d: 'done',
        // The second check (at 310 ms) answers a failure at 315 ms.
        e: 'failed X: reload 2026-07-01-4 failed; probe GET /healthz: 503 → back to L',
        f: 'start rollback L e1',
        g: 'ok e1',
        h: 'done',
      });
      flush();
      assert.deepEqual(Object.fromEntries([...running].map(([id, c]) => [id, name(c)])), { e1: 'L', e2: 'L', e3: 'L' });
    });
  });

  it('fails the canary when a round of checks has not answered by the next', () => {
    marbles().run(({ cold, expectObservable }) => {
      const { rollout } = world(cold, { hangs: true });
      expectObservable(rollout(request(X)).pipe(label)).toBe('(ab) 6ms (cd) 296ms (ef) 6ms (gh|)', {
        a: 'canary X on e1, then e2,e3',
        b: 'start canary X e1',
        c: 'ok e1',
        d: 'done',
        e: 'failed X: a check did not answer within 300 ms → back to L',
        f: 'start rollback L e1',
        g: 'ok e1',
        h: 'done',
      });
    });
  });

  it('rolls back at once when the canary deployment itself fails, and gives every later request for that configuration what the rest run', () => {
    marbles().run(({ cold, expectObservable }) => {
      const { rollout } = world(cold, { failing: ['e1'] });
      // A retry of e2 and a drift redeploy, both carrying the refused configuration, after the canary.
      const after = concat(rollout(request(X)), rollout(request(X, [endpoint('e2')], 'retry')), rollout(request(X, fleet, 'drift')));
      expectObservable(after.pipe(label)).toBe('(ab) 6ms (cdef) 4ms (ghi) 5ms (jkl) 5ms (mnop|)', {
        a: 'canary X on e1, then e2,e3',
        b: 'start canary X e1',
        c: 'fail e1',
        d: 'done',
        e: 'failed X: the deployment failed: reload 2026-07-01-3 failed → back to L',
        f: 'start rollback L e1',
        g: 'ok e1',
        h: 'done',
        i: 'start retry L e2',
        j: 'ok e2',
        k: 'done',
        l: 'start drift L e1,e2,e3',
        m: 'ok e1',
        n: 'ok e2',
        o: 'ok e3',
        p: 'done',
      });
    });
  });

  it('leaves nothing to roll back to when what the rest run is unknown, and deploys the refused configuration nowhere else', () => {
    marbles().run(({ cold, expectObservable, flush }) => {
      const { rollout, running } = world(cold, { running: {}, checks: [{ ok: false, problems: ['Data Plane health: haproxy down'] }] });
      const after = concat(rollout(request(X)), rollout(request(X, fleet, 'drift')));
      expectObservable(after.pipe(label)).toBe('(ab) 6ms (cd) 1ms (e|)', {
        a: 'canary X on e1, then e2,e3',
        b: 'start canary X e1',
        c: 'ok e1',
        d: 'done',
        e: 'failed X: Data Plane health: haproxy down, no rollback',
      });
      flush();
      assert.deepEqual([...running.keys()], ['e1']);
    });
  });

  it('deploys a change that needs no reload, or one to a single instance, to every instance named at once', () => {
    marbles().run(({ cold, expectObservable }) => {
      const { rollout } = world(cold, { reloads: false });
      const { rollout: alone } = world(cold);
      const both = concat(rollout(request(X)), alone(request(X, [endpoint('e2')])));
      expectObservable(both.pipe(label)).toBe('a 9ms (bcdef) 3ms (gh|)', {
        a: 'start change X e1,e2,e3',
        b: 'ok e1',
        c: 'ok e2',
        d: 'ok e3',
        e: 'done',
        f: 'start change X e2',
        g: 'ok e2',
        h: 'done',
      });
    });
  });

  it('stops checking when a newer configuration arrives, leaves the rest as they are, and canaries the newer one next', () => {
    marbles().run(({ cold, hot, expectObservable, flush }) => {
      const { rollout, running } = world(cold);
      // X at 0; Y at 500, while X is checked on e1. The scheduler runs one at a time, 2 s apart.
      const requests = hot<DeployRequest>('x 499ms y', { x: request(X), y: request(Y, fleet, 'change', 2) });
      const events = schedule(requests, rollout, 2000);
      expectObservable(events.pipe(label), '^ 4000ms !').toBe('(ab) 6ms (cd) 486ms e 1499ms (fg) 6ms (hi) 996ms (jk) 6ms (lmn)', {
        a: 'canary X on e1, then e2,e3',
        b: 'start canary X e1',
        c: 'ok e1',
        d: 'done',
        e: 'abandoned X for #2',
        // The newer configuration waits for the interval since X started, then has its own canary.
        f: 'canary Y on e1, then e2,e3',
        g: 'start canary Y e1',
        h: 'ok e1',
        i: 'done',
        j: 'passed Y after 4 checks',
        k: 'start change Y e2,e3',
        l: 'ok e2',
        m: 'ok e3',
        n: 'done',
      });
      flush();
      assert.deepEqual(Object.fromEntries([...running].map(([id, c]) => [id, name(c)])), { e1: 'Y', e2: 'Y', e3: 'Y' });
    });
  });

  it('works out whether a change reloads in slices when that comes as steps, and goes on as it would have at once', () => {
    marbles().run(({ cold, expectObservable, flush }) => {
      const { rollout, slices } = world(cold, { verdictSteps: 5 });
      const { rollout: noReload, slices: noReloadSlices } = world(cold, { verdictSteps: 5, reloads: false });
      expectObservable(concat(rollout(request(X)), noReload(request(Y))).pipe(label)).toBe('(ab) 6ms (cd) 996ms (ef) 6ms (ghij) 4ms (klmn|)', {
        ...passedX,
        // No reload: Y goes to every instance at once.
        j: 'start change Y e1,e2,e3',
        k: 'ok e1',
        l: 'ok e2',
        m: 'ok e3',
        n: 'done',
      });
      flush();
      // Five steps of 6 ms in slices of 10 ms: three slices, the last two on tasks of their own.
      assert.equal(slices.scheduled, 2);
      assert.equal(noReloadSlices.scheduled, 2);
    });
  });

  // Y comes in X's frame (after the verdict's first slice, before its last), or 4 ms after X (while the canary deploys).
  for (const { when, arrivals, verdictSteps } of [
    { when: 'while whether it reloads was worked out', arrivals: '(xy)', verdictSteps: 5 },
    { when: 'while the canary deployed', arrivals: 'x 4ms y', verdictSteps: undefined },
  ]) {
    it(`abandons the check as soon as the canary deployed when the newer configuration arrived ${when}`, () => {
      marbles().run(({ cold, hot, expectObservable }) => {
        const { rollout, checked } = world(cold, { verdictSteps });
        const requests = hot<DeployRequest>(arrivals, { x: request(X), y: request(Y, fleet, 'change', 2) });
        expectObservable(schedule(requests, rollout, 2000).pipe(label), '^ 100ms !').toBe('(ab) 6ms (cde)', {
          a: 'canary X on e1, then e2,e3',
          b: 'start canary X e1',
          c: 'ok e1',
          d: 'done',
          e: 'abandoned X for #2',
        });
        assert.deepEqual(checked, []);
      });
    });
  }
});
