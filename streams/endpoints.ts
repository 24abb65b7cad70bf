import { type Observable, type SchedulerLike, asyncScheduler, combineLatest, defer, filter, map } from 'rxjs';
import type { DeployRequest, Endpoint, ValidatedEvent } from '../src/events.ts';

/**
 * Pairs the newest valid configuration with the current HAProxy instances. A new
 * configuration goes to every instance; an instance that joins gets the current
 * configuration at once, without waiting for a change in the cluster. An instance
 * that leaves needs nothing.
 *
 * A request always names every current endpoint, never just the joiners: requests
 * are latest-wins downstream, so a request for the joiners alone could replace a
 * waiting one that the others still need.
 */
export function deployRequests(
  validated$: Observable<ValidatedEvent>,
  endpoints$: Observable<readonly Endpoint[]>,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<DeployRequest> {
  return defer(() => {
    let lastHash: string | undefined;
    let known = new Set<string>();
    return combineLatest([validated$, endpoints$]).pipe(
      map(([validated, endpoints]): DeployRequest | undefined => {
        const ids = new Set(endpoints.map((e) => e.id));
        const changed = validated.config.hash !== lastHash;
        const joined = endpoints.some((e) => !known.has(e.id));
        known = ids;
        if (endpoints.length === 0 || (!changed && !joined)) return undefined;
        lastHash = validated.config.hash;
        const { reconcile, config } = validated;
        return { reconcile, config, endpoints, reason: changed ? 'change' : 'endpoints', queuedAt: scheduler.now() };
      }),
      filter((request) => request !== undefined),
    );
  });
}
