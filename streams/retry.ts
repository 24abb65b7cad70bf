import { type Observable, type SchedulerLike, EMPTY, asyncScheduler, defer, filter, groupBy, ignoreElements, map, merge, mergeMap, pairwise, scan, share, startWith, switchMap, tap, timer } from 'rxjs';
import { type BackoffOptions, RETRY_BACKOFF, backoffDelay } from '../src/backoff.ts';
import type { ControllerEvent, DeployRequest, Desired } from '../src/events.ts';

export interface RetryOptions {
  /** Default: 1 s doubling to 60 s, stretched by up to a fifth. */
  backoff?: BackoffOptions;
  /** The jitter's random source, in [0, 1); tests pass a fixed one. */
  random?: () => number;
  scheduler?: SchedulerLike;
}

/** What happened to one instance, as far as retrying it goes. */
interface InstanceNews {
  id: string;
  news: 'started' | 'ok' | 'failed' | 'left';
}

/**
 * Retries each instance whose deployment failed, on its own: after 1 s, then 2 s,
 * 4 s ... up to 60 s (jittered), whatever the drift interval. The retry carries the
 * newest desired configuration, not the one that failed. Any deployment to the
 * instance replaces its pending retry (switchMap); a success resets its backoff; an
 * instance that leaves stops its retries and forgets its failures.
 *
 * `deployEvents$` is the deploy stage's own output, fed back.
 */
export function instanceRetries(deployEvents$: Observable<ControllerEvent>, desired$: Observable<Desired>, options: RetryOptions = {}): Observable<DeployRequest> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const backoff = options.backoff ?? RETRY_BACKOFF;
  const random = options.random ?? Math.random;
  return defer(() => {
    let latest: Desired | undefined;
    const state$ = desired$.pipe(
      tap((state) => (latest = state)),
      share(),
    );
    const left$ = state$.pipe(
      map((state) => new Set(state.endpoints.map((e) => e.id))),
      startWith(new Set<string>()),
      pairwise(),
      mergeMap(([before, now]) => [...before].filter((id) => !now.has(id)).map((id): InstanceNews => ({ id, news: 'left' }))),
    );
    const outcomes$ = deployEvents$.pipe(
      mergeMap((event): InstanceNews[] => {
        if (event.type === 'DeploymentStarted') return event.deployment.endpoints.map((e) => ({ id: e.id, news: 'started' }));
        if (event.type === 'InstanceDeployed' || event.type === 'InstanceDeployFailed') return [{ id: event.result.endpoint.id, news: event.result.ok ? 'ok' : 'failed' }];
        return [];
      }),
    );
    const retries$ = merge(outcomes$, left$).pipe(
      // One group per instance while it is there: it ends when the instance leaves. (The end
      // must not be read from the group itself: groupBy would count that as a subscriber
      // and never let go of its source.)
      groupBy((n) => n.id, { duration: (group$) => state$.pipe(filter((state) => !state.endpoints.some((e) => e.id === group$.key))) }),
      mergeMap((instance$) =>
        instance$.pipe(
          // Failures in a row: a failure schedules a retry, a deployment that starts replaces it
          // and keeps the count, a success resets it.
          scan(
            (s: { failures: number; retry: boolean }, n) =>
              n.news === 'failed' ? { failures: s.failures + 1, retry: true } : { failures: n.news === 'started' ? s.failures : 0, retry: false },
            { failures: 0, retry: false },
          ),
          switchMap((s) => (s.retry ? timer(backoffDelay(s.failures - 1, backoff, random), scheduler) : EMPTY)),
          map(() => latest?.endpoints.find((e) => e.id === instance$.key)),
          filter((endpoint) => endpoint !== undefined && latest !== undefined),
          map((endpoint): DeployRequest => ({ ...latest!, endpoints: [endpoint!], reason: 'retry', queuedAt: scheduler.now() })),
        ),
      ),
    );
    return merge(state$.pipe(ignoreElements()), retries$);
  });
}
