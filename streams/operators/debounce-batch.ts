import {
  type OperatorFunction,
  type SchedulerLike,
  asyncScheduler,
  connect,
  debounceTime,
  defer,
  endWith,
  exhaustMap,
  filter,
  map,
  of,
  race,
  share,
  startWith,
  take,
  tap,
  timer,
} from 'rxjs';

export interface DebounceBatchOptions<T> {
  /** Quiet time that ends a batch; `<= 0` makes every value its own batch, at once. */
  dueTime: number;
  /** The longest a value waits, however long the source keeps emitting. */
  maxWait: number;
  /** A value for which the batch closes at once, with it as the last member. */
  immediate?: (value: T) => boolean;
  /**
   * The first value after the source has been quiet for `dueTime` goes at once: a lone
   * change is not kept waiting for a burst that is not coming. "At once" is at the end of
   * the current turn (a timer of 0 on the scheduler), so the values that arrive with it
   * (the objects of one file, one watch batch) go in its batch rather than waiting for
   * the next. Values that follow later within `dueTime` are batched as usual, and
   * `maxWait` still bounds their wait.
   */
  leading?: boolean;
  scheduler?: SchedulerLike;
}

/**
 * Collects values into batches: a batch is emitted once the source has been quiet
 * for `dueTime`, or when `maxWait` is reached, whichever comes first. A plain
 * trailing debounce starves under continuous churn (an EndpointSlice updated every
 * 100 ms during a rolling deploy would never reconcile); the deadline prevents it.
 *
 * With `leading`, the first value after a quiet period opens a batch that closes at
 * the end of the current turn, with whatever arrived in that turn; only what follows
 * it is debounced.
 *
 * The deadline is `maxWait` after the previous batch when that is still ahead,
 * otherwise `maxWait` after the batch's first value. So no value waits longer than
 * `maxWait`, and under continuous churn batches come every `maxWait`, not every
 * `maxWait` plus the gap to the next value.
 */
export function debounceBatch<T>(options: DebounceBatchOptions<T>): OperatorFunction<T, T[]> {
  const { dueTime, maxWait, immediate = () => false, leading = false, scheduler = asyncScheduler } = options;
  if (dueTime <= 0) return map((value) => [value]);
  return (source) =>
    defer(() => {
      let lastEmit = -Infinity;
      let lastValue = -Infinity;
      const close = (batch: T[]) => {
        lastEmit = scheduler.now();
        return batch;
      };
      return source.pipe(
        // Whether each value came after a quiet period, decided as it arrives.
        map((value) => {
          const now = scheduler.now();
          const quiet = now - lastValue >= dueTime;
          lastValue = now;
          return { value, quiet };
        }),
        connect((shared$) =>
          shared$.pipe(
            exhaustMap(({ value: first, quiet }) => {
              const batch = [first];
              if (immediate(first)) return of(close(batch));
              const now = scheduler.now();
              const deadline = lastEmit + maxWait > now ? lastEmit + maxWait : now + Math.max(maxWait, dueTime);
              const more$ = shared$.pipe(
                map(({ value }) => value),
                tap((value) => batch.push(value)),
                share(),
              );
              // After quiet: the end of this turn (or an immediate value, or the source's end) closes it.
              const closes$ = leading && quiet
                ? race(more$.pipe(filter(immediate), endWith(undefined)), timer(0, scheduler))
                : race(
                    more$.pipe(startWith(undefined), debounceTime(dueTime, scheduler)),
                    more$.pipe(filter(immediate)),
                    timer(deadline - now, scheduler),
                  );
              return closes$.pipe(
                take(1),
                map(() => close(batch)),
              );
            }),
          ),
        ),
      );
    });
}
