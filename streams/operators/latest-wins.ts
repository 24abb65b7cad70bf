import { Observable, type ObservableInput, type OperatorFunction, type SchedulerLike, type Subscription, asyncScheduler, from } from 'rxjs';

export interface LatestWinsOptions {
  /**
   * Once the oldest value not yet served by a completed projection arrived this long
   * ago, a newer value no longer cancels the running projection: it waits for it, and
   * only the newest waiting value is projected next. Infinity makes it switchMap.
   */
  maxWaitMs: number;
  scheduler?: SchedulerLike;
}

/**
 * switchMap that cannot starve: a newer value cancels the running projection (its
 * result would be stale), until values have waited `maxWaitMs` without a projection
 * completing. Then the running one finishes, and the newest value that came meanwhile
 * goes next. Without the bound, values arriving more often than a projection takes
 * (EndpointSlices moving every half second against a render of a second or two) would
 * cancel every projection, and none would ever complete.
 */
export function latestWins<T, R>(project: (value: T) => ObservableInput<R>, options: LatestWinsOptions): OperatorFunction<T, R> {
  const scheduler = options.scheduler ?? asyncScheduler;
  return (source) =>
    new Observable<R>((subscriber) => {
      let inner: Subscription | undefined;
      /** The id of the running projection; 0 when none runs. */
      let running = 0;
      let started = 0;
      /** When the oldest value no completed projection has served arrived. */
      let unservedSince: number | undefined;
      let waiting: { value: T; since: number } | undefined;
      let sourceDone = false;

      const start = (value: T) => {
        inner?.unsubscribe();
        const id = ++started;
        running = id;
        const subscription = from(project(value)).subscribe({
          next: (result) => subscriber.next(result),
          error: (err: unknown) => subscriber.error(err),
          complete: () => {
            if (running !== id) return;
            running = 0;
            const next = waiting;
            waiting = undefined;
            unservedSince = next?.since;
            if (next) start(next.value);
            else if (sourceDone) subscriber.complete();
          },
        });
        // A projection that completed at once may have started the next one already.
        if (running === id) inner = subscription;
      };

      const outer = source.subscribe({
        next: (value) => {
          const now = scheduler.now();
          unservedSince ??= now;
          if (running !== 0 && now - unservedSince >= options.maxWaitMs) {
            waiting = { value, since: waiting?.since ?? now };
            return;
          }
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
