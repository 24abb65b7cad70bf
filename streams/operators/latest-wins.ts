import { Observable, type ObservableInput, type OperatorFunction, type SchedulerLike, type Subscription, asyncScheduler, from } from 'rxjs';

export interface LatestWinsOptions<T, R = unknown> {
  /**
   * How long a value may wait for a completed projection (each value its own, or one
   * for all): once one not yet served by a completed projection has waited its time, a
   * newer value no longer cancels the running projection: it waits for it, and only the
   * newest waiting value is projected next. Infinity makes it switchMap.
   */
  maxWaitMs: number | ((value: T) => number);
  /**
   * Results after which the running projection is only waiting to try again (a check
   * that could not run, retried after a delay): until its next result, a newer value
   * replaces it at once, whatever the waits; a value held back goes then too.
   */
  givesWay?: (result: R) => boolean;
  scheduler?: SchedulerLike;
}

/**
 * switchMap that cannot starve: a newer value cancels the running projection (its
 * result would be stale), until a value has waited its `maxWaitMs` without a projection
 * completing. Then the running one finishes, and the newest value that came meanwhile
 * goes next. Without the bound, values arriving more often than a projection takes
 * (EndpointSlices moving every half second against a render of a second or two) would
 * cancel every projection, and none would ever complete.
 */
export function latestWins<T, R>(project: (value: T) => ObservableInput<R>, options: LatestWinsOptions<T, R>): OperatorFunction<T, R> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const { maxWaitMs } = options;
  const waitOf = typeof maxWaitMs === 'number' ? () => maxWaitMs : maxWaitMs;
  return (source) =>
    new Observable<R>((subscriber) => {
      let inner: Subscription | undefined;
      /** The id of the running projection; 0 when none runs. */
      let running = 0;
      let started = 0;
      /** The earliest time a value no completed projection has served may wait until. */
      let deadline = Infinity;
      /** The newest value held back, and the earliest deadline of those held back. */
      let waiting: { value: T; deadline: number } | undefined;
      let sourceDone = false;
      /** The running projection's last result said it only waits to try again. */
      let idle = false;

      const start = (value: T) => {
        inner?.unsubscribe();
        const id = ++started;
        running = id;
        idle = false;
        const subscription = from(project(value)).subscribe({
          next: (result) => {
            subscriber.next(result);
            if (running !== id) return;
            idle = options.givesWay?.(result) ?? false;
            if (idle && waiting) startWaiting();
          },
          error: (err: unknown) => subscriber.error(err),
          complete: () => {
            if (running !== id) return;
            running = 0;
            if (!startWaiting() && sourceDone) subscriber.complete();
          },
        });
        // A projection that completed at once may have started the next one already.
        if (running === id) inner = subscription;
      };

      /** Projects the value held back, if one is, with the deadline it carries; says whether one was. */
      const startWaiting = (): boolean => {
        const next = waiting;
        waiting = undefined;
        deadline = next?.deadline ?? Infinity;
        if (next) start(next.value);
        return next !== undefined;
      };

      const outer = source.subscribe({
        next: (value) => {
          const now = scheduler.now();
          const own = now + waitOf(value);
          if (running !== 0 && now >= deadline && !idle) {
            waiting = { value, deadline: Math.min(waiting?.deadline ?? Infinity, own) };
            return;
          }
          deadline = Math.min(deadline, own);
          start(value);
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => {
          sourceDone = true;
          if (running === 0) subscriber.complete();
        },
      });
      return () => {
        outer.unsubscribe();
        inner?.unsubscribe();
      };
    });
}
