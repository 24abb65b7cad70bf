import type { Steps } from './steps.ts';

/**
 * Resolves on the event loop's next turn, after the I/O that is waiting (a /healthz
 * request, a watch event): long work that goes on in steps awaits this between them,
 * so that no two steps make one long stretch without an answer.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
