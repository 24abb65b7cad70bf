import { type Observable, type SchedulerLike, EMPTY, asyncScheduler, map, switchMap, timer } from 'rxjs';
import type { DeployRequest, Desired } from '../src/events.ts';

/**
 * Redeploys the desired state to every instance when it has not changed for
 * `intervalMs`, and then every `intervalMs` while things stay quiet. This repairs
 * instances changed behind the controller's back; the targets make a redeploy of an
 * unchanged config cheap. 0 disables it.
 */
export function drift(desired$: Observable<Desired>, intervalMs: number, scheduler: SchedulerLike = asyncScheduler): Observable<DeployRequest> {
  if (intervalMs <= 0) return EMPTY;
  return desired$.pipe(
    switchMap((state) =>
      state.endpoints.length === 0
        ? EMPTY
        : timer(intervalMs, intervalMs, scheduler).pipe(map((): DeployRequest => ({ ...state, reason: 'drift', queuedAt: scheduler.now() }))),
    ),
  );
}
