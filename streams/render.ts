import { type Observable, type SchedulerLike, asyncScheduler, catchError, defer, filter, ignoreElements, map, merge, of, tap } from 'rxjs';
import type { ControllerEvent, Reconcile, RenderError, RenderWarning, ThreadHeap } from '../src/events.ts';
import { errorMessage } from '../src/errors.ts';
import type { ObjectStatus } from '../src/status/types.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { latestWins } from './operators/latest-wins.ts';

/**
 * `statusesDigest`, when the renderer gives one, is equal for equal statuses: renders
 * are compared by it instead of by the statuses' text (10k of them at 10k objects).
 * `threadHeap`: the heap of the thread that rendered, when it is not this one.
 */
export type RenderOutcome = ({ ok: true; config: RenderedConfig; warnings?: readonly RenderWarning[]; statuses?: readonly ObjectStatus[]; statusesDigest?: string } | { ok: false; error: RenderError }) & { threadHeap?: ThreadHeap };

export type RenderEvent = Extract<ControllerEvent, { type: 'Rendered' | 'RenderFailed' | 'RenderUnchanged' }>;
/** What validation made of a configuration render passed on. */
export type Verdict = Extract<ControllerEvent, { type: 'Validated' | 'ValidationFailed' | 'ValidationUnavailable' }>;

export interface RenderDeps {
  /** Renders the current stores; an Observable so that a newer trigger can cancel it. */
  render(reconcile: Reconcile): Observable<RenderOutcome>;
  /**
   * Once a change has waited this long (each reconciliation its own, or one for all)
   * without a render completing, a newer trigger no longer cancels the running render
   * (see latestWins); default: it always does.
   */
  maxWaitMs?: number | ((reconcile: Reconcile) => number);
  scheduler?: SchedulerLike;
}

/**
 * Renders on every reconciliation, latest wins: a newer trigger cancels an
 * unfinished render, whose result would be stale anyway; but once changes have waited
 * `maxWaitMs`, the running render finishes and the newest trigger goes next, so that
 * triggers coming faster than a render takes cannot keep every render from finishing.
 *
 * Output identical to the last configuration passed on is reported as
 * RenderUnchanged and goes no further, while that configuration is being checked or
 * has validated. Once haproxy refused it (`verdicts$`, fed back from validation),
 * identical output is passed on again: it is checked again, never silently dropped.
 * RenderUnchanged carries the warnings and the statuses when they changed (an object
 * skipped, or no longer; a generation observed), since neither needs the output to
 * change.
 */
export function render(reconciles$: Observable<Reconcile>, verdicts$: Observable<Verdict>, deps: RenderDeps): Observable<RenderEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  return defer(() => {
    let last: { hash: string; refused: boolean } | undefined;
    let lastWarnings = '[]';
    let lastStatuses = '[]';
    const judged$ = verdicts$.pipe(
      tap((verdict) => {
        if (verdict.config.hash === last?.hash) last.refused = verdict.type === 'ValidationFailed';
      }),
      ignoreElements(),
    );
    const rendered$ = reconciles$.pipe(
      latestWins((reconcile: Reconcile) => {
        const started = scheduler.now();
        return deps.render(reconcile).pipe(
          catchError((err: unknown) => of<RenderOutcome>({ ok: false, error: { template: '(render)', message: errorMessage(err) } })),
          map((outcome): RenderEvent => {
            const durationMs = scheduler.now() - started;
            const heap = outcome.threadHeap && { threadHeap: outcome.threadHeap };
            if (!outcome.ok) return { type: 'RenderFailed', reconcile, error: outcome.error, durationMs, ...heap };
            const warnings = outcome.warnings ?? [];
            const warningsKey = JSON.stringify(warnings);
            const warningsChanged = warningsKey !== lastWarnings;
            lastWarnings = warningsKey;
            const statuses = outcome.statuses ?? [];
            const statusesKey = outcome.statusesDigest !== undefined ? `digest:${outcome.statusesDigest}` : JSON.stringify(statuses);
            const statusesChanged = statusesKey !== lastStatuses;
            lastStatuses = statusesKey;
            const { hash } = outcome.config;
            if (last?.hash === hash && !last.refused) return { type: 'RenderUnchanged', reconcile, hash, durationMs, ...(warningsChanged && { warnings }), ...(statusesChanged && { statuses }), ...heap };
            last = { hash, refused: false };
            return { type: 'Rendered', reconcile, config: outcome.config, durationMs, ...(warnings.length > 0 && { warnings }), ...(statuses.length > 0 && { statuses }), ...heap };
          }),
        );
      }, { maxWaitMs: deps.maxWaitMs ?? Infinity, scheduler }),
    );
    return merge(judged$, rendered$);
  });
}

/** Only new configurations go on to validation. */
export function renderedOnly(events$: Observable<RenderEvent>): Observable<Extract<RenderEvent, { type: 'Rendered' }>> {
  return events$.pipe(filter((e) => e.type === 'Rendered'));
}
