import { EMPTY, type Observable, type SchedulerLike, Subject, asyncScheduler, concatMap, defer, filter, ignoreElements, map, merge, of, race, switchMap, take, tap, timer } from 'rxjs';
import type { ControllerEvent, Reconcile } from '../src/events.ts';

export interface RenderHoldOptions {
  /** The longest a reconciliation waits for fast path deployments before its render starts. */
  maxHoldMs: number;
  /**
   * Whether to look at the end of the turn a reconciliation came in (default), by when the
   * fast path has sent off its own deployment; false looks at once (a reconciliation that
   * has been held before, its own deployment long sent), and schedules nothing unless it holds.
   */
  atTurnEnd?: boolean;
  /**
   * Whether the fast path is planning (true from a plan's start until its outcome is out):
   * a plan of hundreds of backends runs in slices, over several turns, and its deployment
   * starts after it, so that counts as a fast deployment under way.
   */
  planning$?: Observable<boolean>;
  scheduler?: SchedulerLike;
}

/** The key a plan under way takes among the fast deployments under way (their ids are positive). */
const PLANNING = -1;

/**
 * The reconciliations as the full render takes them: not while a fast path deployment
 * runs. The fast path's runtime operations are the change on its way to traffic; the
 * full render that follows the same change (a second or so of a core at 10k objects,
 * then `haproxy -c`) would compete with them for the CPU. So a reconciliation waits
 * until no fast deployment runs (its own starts in the turn it arrives in), and never
 * longer than `maxHoldMs` after it arrived. None is dropped and their order stays:
 * render still sees every one, and its latest-wins takes it from there. A fast
 * deployment that never reports its end (a lost lead aborted it) holds nothing after
 * `maxHoldMs`.
 */
export function holdWhileFast(reconciles$: Observable<Reconcile>, deployEvents$: Observable<ControllerEvent>, options: RenderHoldOptions): Observable<Reconcile> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const { maxHoldMs } = options;
  return defer(() => {
    /** Fast deployments under way: id → when each started. */
    const running = new Map<number, number>();
    const ended$ = new Subject<void>();
    const idle = () => {
      const now = scheduler.now();
      for (const [id, startedAt] of running) if (now - startedAt >= maxHoldMs) running.delete(id);
      return running.size === 0;
    };
    const tracked$ = deployEvents$.pipe(
      tap((event) => {
        if (event.type === 'DeploymentStarted' && event.deployment.reason === 'fast') running.set(event.deployment.id, scheduler.now());
        if (event.type === 'DeploymentCompleted' && running.delete(event.deployment.id)) ended$.next();
      }),
      ignoreElements(),
    );
    const planning$ = (options.planning$ ?? EMPTY).pipe(
      tap((busy) => {
        if (busy) running.set(PLANNING, scheduler.now());
        else if (running.delete(PLANNING)) ended$.next();
      }),
      ignoreElements(),
    );
    const held$ = reconciles$.pipe(
      map((reconcile) => ({ reconcile, arrived: scheduler.now() })),
      concatMap(({ reconcile, arrived }) => {
        const held = () => {
          if (idle()) return of(reconcile);
          const left = Math.max(0, arrived + maxHoldMs - scheduler.now());
          return race(ended$.pipe(filter(idle)), timer(left, scheduler)).pipe(
            take(1),
            map(() => reconcile),
          );
        };
        // At the end of this turn: by then the fast path has planned this reconciliation and sent it off.
        return options.atTurnEnd === false ? defer(held) : timer(0, scheduler).pipe(switchMap(held));
      }),
    );
    return merge(tracked$, planning$, held$);
  });
}
