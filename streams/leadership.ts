import { type Observable, type SchedulerLike, asyncScheduler, combineLatest, distinctUntilChanged, filter, map, pairwise, startWith } from 'rxjs';
import type { DeployRequest } from '../src/events.ts';

/**
 * Lets deployment requests through only while this replica leads. Every replica
 * watches, renders and validates, so a replica that becomes leader deploys the
 * newest request at once (reason `leader`), without waiting for a change.
 */
export function whileLeader(
  requests$: Observable<DeployRequest>,
  leader$: Observable<boolean>,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<DeployRequest> {
  return combineLatest([requests$, leader$.pipe(distinctUntilChanged())]).pipe(
    startWith(undefined),
    pairwise(),
    filter((pair): pair is [[DeployRequest, boolean] | undefined, [DeployRequest, boolean]] => pair[1]?.[1] === true),
    map(([previous, [request]]) =>
      previous !== undefined && previous[1] === false ? { ...request, reason: 'leader' as const, queuedAt: scheduler.now() } : request,
    ),
  );
}
