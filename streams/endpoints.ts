import { EMPTY, type Observable, type SchedulerLike, asyncScheduler, combineLatest, filter, map, merge, scan, withLatestFrom } from 'rxjs';
import type { DeployRequest, Desired, Endpoint, ValidatedEvent } from '../src/events.ts';

/**
 * What the fleet should run: the newest valid configuration and every current
 * HAProxy instance, emitted whenever either changes (once both are known).
 */
export function desired(validated$: Observable<ValidatedEvent>, endpoints$: Observable<readonly Endpoint[]>): Observable<Desired> {
  return combineLatest([validated$, endpoints$]).pipe(map(([{ reconcile, config }, endpoints]): Desired => ({ reconcile, config, endpoints })));
}

/** An instance as a deployment sees it: a new address or a new incarnation is an instance that (re)joined. */
const instanceKey = (e: Endpoint) => `${e.id}\n${e.address}\n${e.incarnation ?? ''}`;

/**
 * Turns changes of the desired state into deployment requests: a new configuration
 * goes to every instance; an instance that joins, or comes back (restarted, replaced,
 * re-addressed), gets the current configuration at once, without waiting for drift or
 * a change in the cluster. An instance that leaves needs nothing. A configuration
 * already sent to every instance (`sent$`, the fast path's hashes) is not sent again.
 */
export function deployRequests(desired$: Observable<Desired>, scheduler: SchedulerLike = asyncScheduler, sent$: Observable<string> = EMPTY): Observable<DeployRequest> {
  interface Seen {
    /** The configuration last requested for every instance. */
    hash: string | undefined;
    known: ReadonlySet<string>;
    request: DeployRequest | undefined;
  }
  return merge(desired$, sent$).pipe(
    scan(
      (seen: Seen, state): Seen => {
        if (typeof state === 'string') return { ...seen, hash: state, request: undefined };
        const known = new Set(state.endpoints.map(instanceKey));
        if (state.endpoints.length === 0) return { hash: seen.hash, known, request: undefined };
        const base = { reconcile: state.reconcile, config: state.config, queuedAt: scheduler.now() };
        if (state.config.hash !== seen.hash) return { hash: state.config.hash, known, request: { ...base, endpoints: state.endpoints, reason: 'change' } };
        const returned = state.endpoints.filter((e) => !seen.known.has(instanceKey(e)));
        return { hash: seen.hash, known, request: returned.length > 0 ? { ...base, endpoints: returned, reason: 'endpoints' } : undefined };
      },
      { hash: undefined, known: new Set<string>(), request: undefined },
    ),
    map((seen) => seen.request),
    filter((request) => request !== undefined),
  );
}

/**
 * Every emission of `signal$` (e.g. new Data Plane credentials) sends the current
 * configuration to every current instance, with `reason`.
 */
export function redeployOn(
  signal$: Observable<unknown>,
  desired$: Observable<Desired>,
  reason: DeployRequest['reason'],
  scheduler: SchedulerLike = asyncScheduler,
): Observable<DeployRequest> {
  return signal$.pipe(
    withLatestFrom(desired$),
    filter(([, state]) => state.endpoints.length > 0),
    map(([, state]): DeployRequest => ({ ...state, reason, queuedAt: scheduler.now() })),
  );
}
