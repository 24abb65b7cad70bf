import type { Steps } from './steps.ts';

/** Work waiting for its turn, oldest first. */
const waiting: (() => void)[] = [];

/** Lets the oldest waiting work go on, and the next one at the turn after. */
function release(): void {
  waiting.shift()?.();
  if (waiting.length > 0) setImmediate(release);
}

/**
 * Resolves on a later turn of the event loop, after the I/O that is waiting (a /healthz
 * request, a watch event): long work that goes on in steps awaits this between them,
 * so that no two steps make one long stretch without an answer. One waiting piece of
 * work goes on per turn, oldest first: with a setImmediate each, the first lists of
 * five watched sets ran a 10 ms slice each, one after another, in every turn, and
 * what waited for the turn waited for all five.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (waiting.length === 1) setImmediate(release);
  });
}

/**
 * Runs steps (steps.ts) to their end, giving the event loop a turn whenever they have
 * run `budgetMs` since the last one; resolves with what they return.
 */
export async function runInTurns<T>(steps: Steps<T>, budgetMs = 10): Promise<T> {
  let since = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - since >= budgetMs) {
      await nextTurn();
      since = performance.now();
    }
  }
}
