import { type Observable, type SchedulerLike, asyncScheduler, catchError, defaultIfEmpty, defer, map, of, repeat, take, takeWhile, timer } from 'rxjs';
import { type BackoffOptions, RETRY_BACKOFF, backoffDelay } from '../src/backoff.ts';
import type { ControllerEvent, ValidationProblem } from '../src/events.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { errorMessage } from '../src/errors.ts';
import { latestWins } from './operators/latest-wins.ts';

/**
 * What a check said: valid; refused by haproxy, with its problems; or nothing at all,
 * because the check could not run (a timeout, a start-up failure, a killed process).
 */
export type ValidateOutcome = { ok: true } | { ok: false; problems: readonly ValidationProblem[] } | { ok: false; unavailable: string };
export type ValidateEvent = Extract<ControllerEvent, { type: 'Validated' | 'ValidationFailed' | 'ValidationUnavailable' }>;
type RenderedEvent = Extract<ControllerEvent, { type: 'Rendered' }>;

const UNANSWERED: ValidateOutcome = { ok: false, unavailable: 'the check ended without an answer' };

export interface ValidateDeps {
  /** Checks a configuration with haproxy; unsubscribing must stop the check. */
  validate(config: RenderedConfig): Observable<ValidateOutcome>;
  /**
   * Once a configuration has waited this long without a check completing, a newer one
   * no longer cancels the running check (see latestWins); default: it always does.
   */
  maxWaitMs?: number;
  /** Delays between checks that could not run; default 1 s doubling to 60 s. */
  backoff?: BackoffOptions;
  random?: () => number;
  scheduler?: SchedulerLike;
}

/**
 * Validates each new configuration, latest wins: a configuration superseded while
 * haproxy -c still runs on it would never be deployed, so its check is cancelled. But
 * once configurations have waited `maxWaitMs`, the running check finishes and the
 * newest goes next: renders that come faster than a check takes (haproxy -c at 10k
 * certificates takes seconds) would otherwise cancel every check, and nothing would
 * ever be deployed again. Only Validated events may reach an instance.
 *
 * A check that could not run says nothing about the configuration: it is reported as
 * ValidationUnavailable (never as a refusal) and run again with backoff, until it
 * gives a verdict or a newer configuration supersedes it; while it waits to run again,
 * a newer configuration always does.
 */
export function validate(rendered$: Observable<RenderedEvent>, deps: ValidateDeps): Observable<ValidateEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  const backoff = deps.backoff ?? RETRY_BACKOFF;
  const random = deps.random ?? Math.random;
  return rendered$.pipe(
    latestWins(({ reconcile, config }: RenderedEvent) => {
      let attempt = 0;
      let retryInMs = 0;
      return defer(() => {
        attempt++;
        const started = scheduler.now();
        return deps.validate(config).pipe(
          take(1),
          defaultIfEmpty(UNANSWERED),
          catchError((err: unknown) => of<ValidateOutcome>({ ok: false, unavailable: errorMessage(err) })),
          map((outcome): ValidateEvent => {
            const durationMs = scheduler.now() - started;
            if (outcome.ok) return { type: 'Validated', reconcile, config, durationMs };
            if ('problems' in outcome) return { type: 'ValidationFailed', reconcile, config, problems: outcome.problems, durationMs };
            retryInMs = backoffDelay(attempt - 1, backoff, random);
            return { type: 'ValidationUnavailable', reconcile, config, message: outcome.unavailable, attempt, retryInMs, durationMs };
          }),
        );
      }).pipe(
        // Checked again after the delay, until haproxy gives a verdict.
        repeat({ delay: () => timer(retryInMs, scheduler) }),
        takeWhile((event) => event.type === 'ValidationUnavailable', true),
      );
    }, { maxWaitMs: deps.maxWaitMs ?? Infinity, givesWay: (event: ValidateEvent) => event.type === 'ValidationUnavailable', scheduler }),
  );
}
