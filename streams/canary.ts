import { EMPTY, NEVER, type Observable, type SchedulerLike, TimeoutError, asyncScheduler, catchError, concat, connect, defer, exhaustMap, filter, finalize, last, map, merge, mergeMap, of, race, take, timeout, timer } from 'rxjs';
import { errorMessage } from '../src/errors.ts';
import type { CanaryCheck, ControllerEvent, DeployRequest, Endpoint } from '../src/events.ts';
import { type Steps, isSteps } from '../src/steps.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import type { DeployEvent } from './deploy.ts';
import { type SliceDeps, sliced, slicingOf } from './operators/sliced.ts';

export type CanaryEvent = Extract<ControllerEvent, { type: 'CanaryStarted' | 'CanaryPassed' | 'CanaryFailed' | 'CanaryAbandoned' }>;

export type { CanaryCheck };

/** `sliceScheduler` runs each next slice of `reloads`' steps (by default `scheduler`); `clock` measures their 10 ms budget. */
export interface CanaryDeps extends SliceDeps {
  /**
   * Checks the canary once (its Data Plane health, reloads that failed since `since`, the
   * HTTP probe of the settings); a round that errors or does not answer in time fails.
   */
  check(endpoint: Endpoint, config: RenderedConfig, since: number): Observable<CanaryCheck>;
  /**
   * Whether going from one configuration to the other reloads haproxy (src/haproxy/plan.ts):
   * at once, or as steps run in slices (at 10k backends the plan behind it takes some 100 ms).
   */
  reloads(from: RenderedConfig, to: RenderedConfig): boolean | Steps<boolean>;
  /** What an instance runs, as its target knows it (unknown after a restart of haprx, until it deploys). */
  running(endpoint: Endpoint): RenderedConfig | undefined;
  scheduler?: SchedulerLike;
}

export interface CanaryOptions {
  /** How long the canary is watched before the rest get the configuration. */
  checkForMs: number;
  /** A round of checks starts this often, the first at once; it fails if it has not answered by the next. */
  intervalMs: number;
}

type Run = (request: DeployRequest) => Observable<DeployEvent>;

/** How long working out the verdict may hold the event loop at once. */
const SLICE_MS = 10;

/**
 * Canary rollout, around the function that runs one deployment (the scheduler calls it,
 * one at a time, with the requests that arrive meanwhile as `newer$`):
 * - a configuration that reloads (from what the other instances run) goes first to one
 *   instance, the canary (the first by id);
 * - once it deployed there, the canary is checked every `intervalMs`; a check that fails
 *   ends it at once (race), and `checkForMs` without a failure passes it;
 * - passed: the rest get the configuration; failed: the canary goes back to what the rest
 *   run, a Warning says why, and the rest are left untouched: every later request that
 *   carries the refused configuration (a retry, a joining instance, drift) gets what the
 *   rest run instead, until a newer configuration comes;
 * - a newer configuration that arrives while the canary is checked ends the check: the
 *   rest are left as they are, and the newer one follows (with its own canary).
 * A change that needs no reload, a deployment to one instance, and a fleet of one go as
 * they are. When what the rest run is unknown (haprx just started, or took the lead),
 * the configuration is canaried too, and a failed canary cannot be rolled back.
 */
export function canaryRollout(run: Run, deps: CanaryDeps, options: CanaryOptions): (request: DeployRequest, newer$?: Observable<DeployRequest>) => Observable<DeployEvent | CanaryEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  const slicing = slicingOf(deps, scheduler, SLICE_MS);
  /** The configuration the last canary refused, and what the rest ran then. */
  let refused: { hash: string; fallback: RenderedConfig | undefined } | undefined;

  return (request, newer$ = EMPTY) =>
    defer((): Observable<DeployEvent | CanaryEvent> => {
      if (refused?.hash === request.config.hash) {
        // Never further than the canary: the instances get what the rest ran, or nothing.
        return refused.fallback ? run({ ...request, config: refused.fallback }) : EMPTY;
      }
      // A newer configuration: should the refused one come back later, it is canaried again.
      refused = undefined;
      if (request.endpoints.length < 2) return run(request);
      const [canary, ...rest] = [...request.endpoints].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) as [Endpoint, ...Endpoint[]];
      const base = mostRun(rest.map(deps.running));
      if (base?.hash === request.config.hash) return run(request);
      // A newer configuration can arrive while the verdict is worked out or the canary
      // deploys: it is remembered, and ends the check as soon as the check would start.
      let newer: DeployRequest | undefined;
      const remember = newer$.pipe(filter((r) => r.config.hash !== request.config.hash)).subscribe((r) => (newer ??= r));
      const byVerdict = (reloads: boolean) => (reloads ? canaryFirst() : run(request));
      const verdict = base ? deps.reloads(base, request.config) : true;
      const rollout$ = isSteps(verdict) ? sliced(() => verdict, slicing).pipe(mergeMap(byVerdict)) : byVerdict(verdict);
      return rollout$.pipe(finalize(() => remember.unsubscribe()));

      function canaryFirst(): Observable<DeployEvent | CanaryEvent> {
        const { reconcile, config } = request;
        const since = scheduler.now();
        const arrived$ = newer$.pipe(filter((r) => r.config.hash !== config.hash));
        // (race counts an end as a win: this one only ever emits.)
        const abandon$ = defer(() => (newer ? of(newer) : merge(arrived$.pipe(take(1)), NEVER))).pipe(
          take(1),
          map((by): CanaryEvent => ({ type: 'CanaryAbandoned', reconcile, config, endpoint: canary, by: by.reconcile })),
        );
        const failed = (problems: readonly string[]): Observable<DeployEvent | CanaryEvent> =>
          defer(() => {
            refused = { hash: config.hash, fallback: base };
            return concat(
              of<CanaryEvent>({ type: 'CanaryFailed', reconcile, config, endpoint: canary, problems, ...(base && { rollbackTo: base.hash }) }),
              base ? run({ ...request, config: base, endpoints: [canary], reason: 'rollback', queuedAt: scheduler.now() }) : EMPTY,
            );
          });
        const watch = (): Observable<DeployEvent | CanaryEvent> => {
          let checks = 0;
          // A round every interval, the first at once; one still running when the next is due has failed.
          const failure$ = timer(0, options.intervalMs, scheduler).pipe(
            exhaustMap(() => {
              checks++;
              return deps.check(canary, config, since).pipe(
                take(1),
                timeout({ first: options.intervalMs, scheduler }),
                catchError((err: unknown) => of<CanaryCheck>({ ok: false, problems: [err instanceof TimeoutError ? `a check did not answer within ${options.intervalMs} ms` : `a check failed: ${errorMessage(err)}`] })),
              );
            }),
            filter((c): c is Extract<CanaryCheck, { ok: false }> => !c.ok),
            take(1),
            mergeMap((c) => failed(c.problems)),
          );
          const passed$ = timer(options.checkForMs, scheduler).pipe(
            mergeMap(() =>
              concat(
                of<CanaryEvent>({ type: 'CanaryPassed', reconcile, config, endpoint: canary, checks, checkedMs: options.checkForMs }),
                run({ ...request, endpoints: rest, queuedAt: scheduler.now() }),
              ),
            ),
          );
          // Whichever comes first: a newer configuration, a failed check, the end of the window.
          return race(abandon$, failure$, passed$);
        };

        return concat(
          of<CanaryEvent>({ type: 'CanaryStarted', reconcile, config, endpoint: canary, rest, checkForMs: options.checkForMs }),
          run({ ...request, endpoints: [canary], reason: 'canary' }).pipe(
            connect((events$) =>
              merge(
                events$,
                events$.pipe(
                  filter((e): e is Extract<DeployEvent, { type: 'DeploymentCompleted' }> => e.type === 'DeploymentCompleted'),
                  last(null, undefined),
                  mergeMap((done) => {
                    const result = done?.results[0];
                    if (!result) return failed(['the canary deployment ended without a result']);
                    return result.ok ? watch() : failed([`the deployment failed: ${result.error ?? 'unknown error'}`]);
                  }),
                ),
              ),
            ),
          ),
        );
      }
    });
}

/** The configuration most of these instances run, when any is known. */
function mostRun(configs: readonly (RenderedConfig | undefined)[]): RenderedConfig | undefined {
  const counts = new Map<string, { config: RenderedConfig; n: number }>();
  let best: { config: RenderedConfig; n: number } | undefined;
  for (const config of configs) {
    if (!config) continue;
    const seen = counts.get(config.hash) ?? { config, n: 0 };
    seen.n++;
    counts.set(config.hash, seen);
    if (!best || seen.n > best.n) best = seen;
  }
  return best?.config;
}
