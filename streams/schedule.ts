import { type Observable, type SchedulerLike, asyncScheduler, defaultIfEmpty, defer, forkJoin, ignoreElements, map, mergeMap, shareReplay, throttle, timer } from 'rxjs';
import type { DeployRequest } from '../src/events.ts';

/**
 * Decides when a deployment starts:
 * - the first request goes at once (leading);
 * - deployments start at least `minIntervalMs` apart, so a flapping cluster
 *   cannot reload HAProxy in a loop;
 * - never two at once: the window also lasts until the running deployment ends;
 * - meanwhile only the newest request waits (trailing), and it goes when the
 *   window closes. Older waiting requests are superseded, never queued.
 */
export function schedule<E>(
  requests$: Observable<DeployRequest>,
  run: (request: DeployRequest) => Observable<E>,
  minIntervalMs: number,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<E> {
  return requests$.pipe(
    // Lazy and shared: the deployment starts when the request is let through, and the
    // throttle window watches the same run for its end. refCount: tearing the graph
    // down (a stop, a new controller configuration) aborts a deployment in flight.
    map((request) => defer(() => run(request)).pipe(shareReplay({ bufferSize: Infinity, refCount: true }))),
    throttle((run$) => forkJoin([timer(minIntervalMs, scheduler), run$.pipe(ignoreElements(), defaultIfEmpty(null))]), {
      leading: true,
      trailing: true,
    }),
    mergeMap((run$) => run$),
  );
}
