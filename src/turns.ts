/**
 * Resolves on the event loop's next turn, after the I/O that is waiting (a /healthz
 * request, a watch event): long work that goes on in steps awaits this between them,
 * so that no two steps make one long stretch without an answer.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
