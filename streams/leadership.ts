import { type Observable, type SchedulerLike, EMPTY, asyncScheduler, defer, distinctUntilChanged, ignoreElements, merge, of, share, startWith, switchMap, tap } from 'rxjs';
import type { ControllerEvent, DeployRequest, Desired } from '../src/events.ts';

export type LeadershipLostEvent = Extract<ControllerEvent, { type: 'LeadershipLost' }>;

/**
 * Deploys only while this replica leads, fenced: each term of leadership runs its own
 * `deploying(requests$)`, and a term ends the moment leadership is lost (switchMap on
 * `leader$`), which aborts the deployment in flight instead of letting it finish
 * beside the new leader's.
 *
 * Every replica watches, renders and validates, and its request stages keep running
 * while another replica leads (their requests are not deployed). A replica that takes
 * the lead sends the desired state to every instance at once (reason `leader`); the
 * targets adopt what an instance already runs, so nothing reloads when the previous
 * leader had deployed the same configuration.
 */
export function whileLeader<E>(
  requests$: Observable<DeployRequest>,
  desired$: Observable<Desired>,
  leader$: Observable<boolean>,
  deploying: (requests$: Observable<DeployRequest>) => Observable<E>,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<E | LeadershipLostEvent> {
  return defer(() => {
    let latest: Desired | undefined;
    const shared$ = requests$.pipe(share());
    const terms$ = leader$.pipe(
      distinctUntilChanged(),
      switchMap((leads, term): Observable<E | LeadershipLostEvent> => {
        if (!leads) return term === 0 ? EMPTY : of<LeadershipLostEvent>({ type: 'LeadershipLost' });
        const takeover: DeployRequest[] = latest && latest.endpoints.length > 0 ? [{ ...latest, reason: 'leader', queuedAt: scheduler.now() }] : [];
        return deploying(shared$.pipe(startWith(...takeover)));
      }),
    );
    return merge(
      desired$.pipe(
        tap((state) => (latest = state)),
        ignoreElements(),
      ),
      shared$.pipe(ignoreElements()),
      terms$,
    );
  });
}
