import { EMPTY, type Observable, type SchedulerLike, Subject, asyncScheduler, defaultIfEmpty, defer, forkJoin, ignoreElements, map, merge, mergeMap, shareReplay, tap, throttle, timer } from 'rxjs';
import type { DeployRequest, Endpoint } from '../src/events.ts';

/**
 * Decides when a deployment starts:
 * - the first request goes at once (leading);
 * - deployments start at least `minIntervalMs` apart, so a flapping cluster
 *   cannot reload HAProxy in a loop;
 * - never two at once: the window also lasts until the running deployment ends;
 * - meanwhile the requests that arrive wait as one (trailing), and it goes when the
 *   window closes: the newest configuration, to every instance any of them named.
 *   A request for one instance (a retry, a joiner) never displaces one for all.
 */
export function schedule<E>(
  requests$: Observable<DeployRequest>,
  run: (request: DeployRequest, newer$: Observable<DeployRequest>) => Observable<E>,
  minIntervalMs: number,
  scheduler: SchedulerLike = asyncScheduler,
  displace$: Observable<DeployRequest> = EMPTY,
): Observable<E> {
  return defer(() => {
    let waiting: DeployRequest | undefined;
    // A run sees the requests that arrive while it runs (a canary ends its check for a newer configuration).
    const arrivals = new Subject<DeployRequest>();
    // Deployed elsewhere (the fast path's): a waiting request from an earlier reconciliation
    // takes its configuration, so that it does not take back what that deployment applied.
    const displaced$ = displace$.pipe(
      tap((newer) => {
        if (waiting && waiting.reconcile.seq < newer.reconcile.seq) waiting = { ...waiting, reconcile: newer.reconcile, config: newer.config };
      }),
      ignoreElements(),
    );
    return merge(displaced$, requests$).pipe(
      tap((request) => arrivals.next(request)),
      // Every request joins the one waiting; the throttle only decides when the
      // waiting one starts, and it is taken when it does.
      // Lazy and shared: the deployment starts when the request is let through, and the
      // throttle window watches the same run for its end. refCount: tearing the graph
      // down (a stop, a new controller configuration, lost leadership) aborts a deployment in flight.
      map((request) => {
        waiting = waiting ? coalesce(waiting, request) : request;
        return defer(() => {
          const taken = waiting!;
          waiting = undefined;
          return run(taken, arrivals);
        }).pipe(shareReplay({ bufferSize: Infinity, refCount: true }));
      }),
      throttle((run$) => forkJoin([timer(minIntervalMs, scheduler), run$.pipe(ignoreElements(), defaultIfEmpty(null))]), {
        leading: true,
        trailing: true,
      }),
      mergeMap((run$) => run$),
    );
  });
}

/** When requests merge, the reason that says most about the deployment names it. */
const RANK: Readonly<Record<DeployRequest['reason'], number>> = { canary: 8, rollback: 7, fast: 6, change: 5, leader: 4, credentials: 3, endpoints: 2, retry: 1, drift: 0 };

/**
 * Two waiting requests as one. Every request carries the newest configuration when it
 * is made, so the later one's configuration (and its reconciliation) is the one to
 * deploy, to every instance either named. The wait counts from the earlier request.
 */
export function coalesce(earlier: DeployRequest, later: DeployRequest): DeployRequest {
  const endpoints = new Map<string, Endpoint>(earlier.endpoints.map((e) => [e.id, e]));
  for (const e of later.endpoints) endpoints.set(e.id, e);
  return {
    ...later,
    reason: RANK[earlier.reason] > RANK[later.reason] ? earlier.reason : later.reason,
    endpoints: [...endpoints.values()],
    queuedAt: Math.min(earlier.queuedAt, later.queuedAt),
  };
}
