export interface BackoffOptions {
  /** The first delay. */
  initialMs: number;
  /** No delay is longer than this (before jitter). */
  maxMs: number;
  /** Each delay is stretched by up to this fraction at random, so that replicas do not retry in step. */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 30_000, jitter: 0.5 };

/**
 * The delay before retry number `attempt` (0-based): doubling from `initialMs`,
 * capped at `maxMs`, then stretched by a random fraction in [0, jitter).
 */
export function backoffDelay(attempt: number, options: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const base = Math.min(options.maxMs, options.initialMs * 2 ** Math.max(0, Math.min(attempt, 30)));
  return Math.round(base * (1 + options.jitter * random()));
}

/**
 * The feedback edges of the graph (an instance retried, a validation that could not
 * run, a stage that failed): 1 s doubling to 60 s, each stretched by up to a fifth.
 */
export const RETRY_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 60_000, jitter: 0.2 };
