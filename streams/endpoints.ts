import { type Observable, type SchedulerLike, asyncScheduler, combineLatest, filter, map, scan, withLatestFrom } from 'rxjs';
import type { ControllerEvent, DeployRequest, Desired, Endpoint, ValidatedEvent } from '../src/events.ts';

type FastPathPlannedEvent = Extract<ControllerEvent, { type: 'FastPathPlanned' }>;

/**
 * What the fleet should run: the newest configuration and every current HAProxy
 * instance, emitted whenever either changes (once both are known). The newest
 * configuration is the last validated one, or what the fast path applied after it:
 * from then on a redeploy (drift, a retry, an instance that joins, a new leader) sends
 * that, so none takes the fast path's changes back, even when the full render that
 * should confirm them fails. Its only part not checked by haproxy -c as a whole is
 * the server lines and map entries the templates wrote for objects, which each
 * instance's runtime API parsed when the fast path applied them.
 */
export function desired(applied$: Observable<ValidatedEvent | FastPathPlannedEvent>, endpoints$: Observable<readonly Endpoint[]>): Observable<Desired> {
  return combineLatest([applied$, endpoints$]).pipe(
    map(([{ type, reconcile, config }, endpoints]): Desired => ({ reconcile, config, endpoints, ...(type === 'FastPathPlanned' && { appliedByFastPath: true }) })),
  );
}

/** An instance as a deployment sees it: a new address or a new incarnation is an instance that (re)joined. */
const instanceKey = (e: Endpoint) => `${e.id}\n${e.address}\n${e.incarnation ?? ''}`;

/**
 * Turns changes of the desired state into deployment requests: a new configuration
 * goes to every instance; an instance that joins, or comes back (restarted, replaced,
 * re-addressed), gets the current configuration at once, without waiting for drift or
 * a change in the cluster. An instance that leaves needs nothing. What the fast path
 * applied it sent to every instance itself: it is not sent again, nor the full render
 * that agrees with it.
 */
export function deployRequests(desired$: Observable<Desired>, scheduler: SchedulerLike = asyncScheduler): Observable<DeployRequest> {
  interface Seen {
    /** The configuration last requested for every instance. */
    hash: string | undefined;
    /** The configuration of the last desired state, with or without instances. */
    current: string | undefined;
    known: ReadonlySet<string>;
    request: DeployRequest | undefined;
  }
  return desired$.pipe(
    scan(
      (seen: Seen, state): Seen => {
        const known = new Set(state.endpoints.map(instanceKey));
        const current = state.config.hash;
        if (state.endpoints.length === 0) return { hash: seen.hash, current, known, request: undefined };
        // Just applied by the fast path, to the instances known now.
        if (state.appliedByFastPath && current !== seen.current) return { hash: current, current, known, request: undefined };
        const base = { reconcile: state.reconcile, config: state.config, queuedAt: scheduler.now() };
        if (current !== seen.hash) return { hash: current, current, known, request: { ...base, endpoints: state.endpoints, reason: 'change' } };
        const returned = state.endpoints.filter((e) => !seen.known.has(instanceKey(e)));
        return { hash: seen.hash, current, known, request: returned.length > 0 ? { ...base, endpoints: returned, reason: 'endpoints' } : undefined };
      },
      { hash: undefined, current: undefined, known: new Set<string>(), request: undefined },
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
