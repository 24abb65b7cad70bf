import { type Observable, type SchedulerLike, asyncScheduler, catchError, map, of, switchMap } from 'rxjs';
import type { ControllerEvent, ValidationProblem } from '../src/events.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { errorMessage } from '../src/errors.ts';

export type ValidateOutcome = { ok: true } | { ok: false; problems: readonly ValidationProblem[] };
export type ValidateEvent = Extract<ControllerEvent, { type: 'Validated' | 'ValidationFailed' }>;
type RenderedEvent = Extract<ControllerEvent, { type: 'Rendered' }>;

export interface ValidateDeps {
  /** Checks a configuration with haproxy; unsubscribing must stop the check. */
  validate(config: RenderedConfig): Observable<ValidateOutcome>;
  scheduler?: SchedulerLike;
}

/**
 * Validates each new configuration, latest wins: a configuration superseded while
 * haproxy -c still runs on it would never be deployed, so its check is cancelled.
 * Only Validated events may reach an instance.
 */
export function validate(rendered$: Observable<RenderedEvent>, deps: ValidateDeps): Observable<ValidateEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  return rendered$.pipe(
    switchMap(({ reconcile, config }) => {
      const started = scheduler.now();
      return deps.validate(config).pipe(
        catchError((err: unknown) => of<ValidateOutcome>({ ok: false, problems: [{ file: 'haproxy.cfg', message: errorMessage(err) }] })),
        map((outcome): ValidateEvent => {
          const durationMs = scheduler.now() - started;
          return outcome.ok
            ? { type: 'Validated', reconcile, config, durationMs }
            : { type: 'ValidationFailed', reconcile, config, problems: outcome.problems, durationMs };
        }),
      );
    }),
  );
}
