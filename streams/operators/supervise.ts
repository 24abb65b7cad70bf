import { type MonoTypeOperatorFunction, type Observable, type SchedulerLike, Subject, asyncScheduler, catchError, defer, merge, retry, tap, throwError, timer } from 'rxjs';
import { type BackoffOptions, RETRY_BACKOFF, backoffDelay } from '../../src/backoff.ts';
import { StageError, errorMessage } from '../../src/errors.ts';
import type { ControllerEvent } from '../../src/events.ts';

export type StageFailedEvent = Extract<ControllerEvent, { type: 'StageFailed' }>;

/**
 * Names the stage an error leaves, so that the boundary can say which stage failed.
 * An error that already carries a name (it left an earlier stage) keeps it.
 */
export function stageName<T>(stage: string): MonoTypeOperatorFunction<T> {
  return catchError((err: unknown) => throwError(() => (err instanceof StageError ? err : new StageError(stage, err))));
}

export interface SuperviseOptions {
  /** The name given to an error that left no named stage. */
  stage: string;
  backoff?: BackoffOptions;
  /** The jitter's random source, in [0, 1); tests pass a fixed one. */
  random?: () => number;
  scheduler?: SchedulerLike;
}

/**
 * An error boundary: an error reported by `source$` becomes a StageFailed event, and
 * `source$` is subscribed again after a backoff delay. A run that lasted longer than
 * the longest delay was healthy, so its failure starts the backoff afresh.
 *
 * Resubscribing rebuilds whatever `source$` builds (stores, timers, sources); nothing
 * that failed is patched up in place.
 */
export function supervise<T>(source$: Observable<T>, options: SuperviseOptions): Observable<T | StageFailedEvent> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const backoff = options.backoff ?? RETRY_BACKOFF;
  const random = options.random ?? Math.random;
  return defer(() => {
    const failed$ = new Subject<StageFailedEvent>();
    let failures = 0;
    let startedAt = scheduler.now();
    const runs$ = defer(() => {
      startedAt = scheduler.now();
      return source$;
    }).pipe(
      // retry resubscribes without nesting, so years of restarts do not deepen the stack.
      retry({
        delay: (err: unknown) => {
          if (scheduler.now() - startedAt >= backoff.maxMs) failures = 0;
          const restartInMs = backoffDelay(failures++, backoff, random);
          failed$.next({
            type: 'StageFailed',
            stage: err instanceof StageError ? err.stage : options.stage,
            message: errorMessage(err instanceof StageError ? err.cause : err),
            failures,
            restartInMs,
          });
          return timer(restartInMs, scheduler);
        },
      }),
      tap({ complete: () => failed$.complete() }),
    );
    return merge(failed$, runs$);
  });
}
