/**
 * Work that can stop between its steps: a generator that yields where it may be
 * interrupted and returns its result at the end. Pure logic keeps its loops as they
 * are and yields in them; streams/operators/sliced.ts runs it in slices, so that a
 * plan of hundreds of backends does not hold the event loop for the whole of it.
 */
export type Steps<T> = Generator<void, T, undefined>;

/** Runs steps to their end at once. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Whether a value is steps still to run rather than a result. */
export function isSteps<T>(value: T | Steps<T>): value is Steps<T> {
  return typeof value === 'object' && value !== null && typeof (value as { next?: unknown }).next === 'function' && typeof (value as { throw?: unknown }).throw === 'function';
}
