import { type Observable, type SchedulerLike, EMPTY, asyncScheduler, map, switchMap, timer } from 'rxjs';
import type { DeployRequest } from '../src/events.ts';

/**
 * Redeploys the last request when nothing has been deployed for `intervalMs`, and
 * then every `intervalMs` while things stay quiet. This repairs instances changed
 * behind the controller's back and instances that restarted with a stale config;
 * the targets make a redeploy of an unchanged config cheap. 0 disables it.
 */
export function drift(requests$: Observable<DeployRequest>, intervalMs: number, scheduler: SchedulerLike = asyncScheduler): Observable<DeployRequest> {
  if (intervalMs <= 0) return EMPTY;
  return requests$.pipe(
    switchMap((request) =>
      timer(intervalMs, intervalMs, scheduler).pipe(map((): DeployRequest => ({ ...request, reason: 'drift', queuedAt: scheduler.now() }))),
    ),
  );
}
