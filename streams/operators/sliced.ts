import { Observable, type SchedulerLike, Subscription } from 'rxjs';
import type { Steps } from '../../src/steps.ts';

export interface SlicedOptions {
  scheduler: SchedulerLike;
  /** How long one slice may run, by `now`, before the rest waits for a later task. */
  budgetMs: number;
  /** The clock the budget is measured by (the work's own time, not the scheduler's virtual time). */
  now?: () => number;
  /** The delay before the next slice: 0, a task of its own as soon as the loop is free. */
  gapMs?: number;
}

/** What a stage's dependencies may say of its slices: what runs each next one, and the clock their budget is measured by. */
export interface SliceDeps {
  sliceScheduler?: SchedulerLike;
  clock?: () => number;
}

/** A stage's slicing: by default its own scheduler runs the next slice, and performance.now measures the budget. */
export function slicingOf(deps: SliceDeps, scheduler: SchedulerLike, budgetMs: number): SlicedOptions {
  return { scheduler: deps.sliceScheduler ?? scheduler, budgetMs, ...(deps.clock && { now: deps.clock }) };
}

/**
 * Runs `steps` in slices of at most `budgetMs`, each slice in a task of its own, and
 * emits what they return, then completes. The first slice runs at once: work that fits
 * the budget (a plan for one EndpointSlice) finishes in the call, as if run whole.
 * Between slices the event loop answers whatever waits (a liveness probe). Unsubscribing
 * abandons the work between two steps.
 */
export function sliced<T>(steps: () => Steps<T>, options: SlicedOptions): Observable<T> {
  const { scheduler, budgetMs, now = () => performance.now(), gapMs = 0 } = options;
  return new Observable<T>((subscriber) => {
    const work = steps();
    const pending = new Subscription();
    const slice = () => {
      const started = now();
      try {
        for (;;) {
          const step = work.next();
          if (step.done) {
            subscriber.next(step.value);
            subscriber.complete();
            return;
          }
          if (now() - started >= budgetMs) break;
        }
      } catch (err) {
        subscriber.error(err);
        return;
      }
      pending.add(scheduler.schedule(slice, gapMs));
    };
    slice();
    return () => {
      pending.unsubscribe();
      work.return(undefined as T);
    };
  });
}
