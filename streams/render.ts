import { type Observable, type SchedulerLike, asyncScheduler, catchError, defer, filter, map, of, switchMap } from 'rxjs';
import type { ControllerEvent, Reconcile, RenderError, RenderWarning } from '../src/events.ts';
import { errorMessage } from '../src/errors.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';

export type RenderOutcome = { ok: true; config: RenderedConfig; warnings?: readonly RenderWarning[] } | { ok: false; error: RenderError };

export type RenderEvent = Extract<ControllerEvent, { type: 'Rendered' | 'RenderFailed' | 'RenderUnchanged' }>;

export interface RenderDeps {
  /** Renders the current stores; an Observable so that a newer trigger can cancel it. */
  render(reconcile: Reconcile): Observable<RenderOutcome>;
  scheduler?: SchedulerLike;
}

/**
 * Renders on every reconciliation, latest wins: a newer trigger cancels an
 * unfinished render, whose result would be stale anyway. Output identical to the
 * last rendered configuration is reported as RenderUnchanged and goes no further;
 * it carries the warnings when they changed (an object skipped, or no longer),
 * since a skipped object often leaves the output as it was.
 */
export function render(reconciles$: Observable<Reconcile>, deps: RenderDeps): Observable<RenderEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  return defer(() => {
    let lastHash: string | undefined;
    let lastWarnings = '[]';
    return reconciles$.pipe(
      switchMap((reconcile) => {
        const started = scheduler.now();
        return deps.render(reconcile).pipe(
          catchError((err: unknown) => of<RenderOutcome>({ ok: false, error: { template: '(render)', message: errorMessage(err) } })),
          map((outcome): RenderEvent => {
            const durationMs = scheduler.now() - started;
            if (!outcome.ok) return { type: 'RenderFailed', reconcile, error: outcome.error, durationMs };
            const warnings = outcome.warnings ?? [];
            const warningsKey = JSON.stringify(warnings);
            const warningsChanged = warningsKey !== lastWarnings;
            lastWarnings = warningsKey;
            if (outcome.config.hash === lastHash) return { type: 'RenderUnchanged', reconcile, hash: lastHash, durationMs, ...(warningsChanged && { warnings }) };
            lastHash = outcome.config.hash;
            return { type: 'Rendered', reconcile, config: outcome.config, durationMs, ...(warnings.length > 0 && { warnings }) };
          }),
        );
      }),
    );
  });
}

/** Only new configurations go on to validation. */
export function renderedOnly(events$: Observable<RenderEvent>): Observable<Extract<RenderEvent, { type: 'Rendered' }>> {
  return events$.pipe(filter((e) => e.type === 'Rendered'));
}
