import { type Observable, type SchedulerLike, asyncScheduler, concat, concatMap, defer, finalize, ignoreElements, map, merge, mergeMap, of, withLatestFrom } from 'rxjs';
import type { ControllerEvent, DeployRequest, Desired, Reconcile, ValidatedEvent } from '../src/events.ts';
import type { RuntimeOp } from '../src/haproxy/plan-types.ts';
import { type AppliedEntry, mapValue } from '../src/templating/fast-maps.ts';
import { type RenderedConfig, serverLines } from '../src/templating/rendered.ts';
import { type Steps, isSteps } from '../src/steps.ts';
import { sliced, slicingOf } from './operators/sliced.ts';

export type FastPathOutcome =
  | { kind: 'none' }
  /**
   * `lines`, where the plan has them at hand: each changed backend's server lines in `config` (else read from it).
   * `partial`: the full render brings more than the fast path applied (a certificate): it is no mere confirmation.
   */
  | { kind: 'runtime'; config: RenderedConfig; ops: readonly RuntimeOp[]; backends: readonly string[]; lines?: Readonly<Record<string, string>>; entries?: readonly AppliedEntry[]; partial?: true }
  | { kind: 'unsupported'; reason: string };

export type FastEvent = Extract<ControllerEvent, { type: 'FastPathPlanned' | 'FastPathSkipped' | 'ValidatedSuperseded' }>;

export interface FastPathDeps {
  /**
   * What the changes of `reconcile` do to `base` (the configuration the instances run or
   * are being given), as new server lines and map entries applied at runtime: at once,
   * or as steps (src/steps.ts) run in slices of `sliceMs`, for a batch of hundreds of backends.
   */
  plan(base: RenderedConfig, reconcile: Reconcile): FastPathOutcome | Steps<FastPathOutcome>;
  /** The longest one slice of a plan holds the event loop (10 ms), by `clock` (performance.now). */
  sliceMs?: number;
  clock?: () => number;
  /** What runs each next slice (the stage's scheduler). */
  sliceScheduler?: SchedulerLike;
  /** Told when a plan begins (true) and when it has ended and its outcome is out (false). */
  planning?(busy: boolean): void;
  /**
   * Makes ready what planning on a new base needs (its parse, its index), when it becomes
   * the base rather than when the next change is on its way: at once, or as steps run in
   * slices after the validated configuration has gone on.
   */
  prepare?(base: RenderedConfig): void | Steps<void>;
  scheduler?: SchedulerLike;
}

/**
 * The fast path, a branch beside render and validate. Each batch of changes goes here
 * as it goes to the full render: when the changes are new server lines only (an
 * EndpointSlice) or new map entries (a new Ingress host or path on a backend that
 * exists), they become a configuration with those lines or entries and the runtime
 * operations to it, planned at once (a large batch in slices of `sliceMs`, the event loop
 * free between them) and sent to the instances ahead of the full render (FastPathPlanned);
 * anything else is left to the full path (FastPathSkipped). Reconciliations and validated
 * configurations are taken one at a time, in the order they come.
 *
 * It plans on the newest configuration it knows the instances get: the last one it
 * planned, or a validated one from a later reconciliation. After a batch it cannot take,
 * it waits for the validated configuration that has it, so it never builds on a base
 * that lacks a change.
 *
 * It is also the gate between validation and deployment: a validated configuration
 * whose render began before the fast path applied newer server lines or map entries, and
 * that writes those backends differently or lacks those entries, would take them back; it goes no further
 * (ValidatedSuperseded), since the render begun after them follows. Validated
 * configurations that agree pass on, as Validated events.
 */
export function fastPath(reconciles$: Observable<Reconcile>, validated$: Observable<ValidatedEvent>, deps: FastPathDeps): Observable<FastEvent | ValidatedEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  return defer(() => {
    let base: { config: RenderedConfig; seq: number } | undefined;
    /**
     * Server lines the fast path applied, by backend, with the reconciliation that applied
     * them. Kept as text, not as the configuration that has them: a configuration is
     * megabytes, and under churn many wait here for a validated one.
     */
    const applied = new Map<string, { seq: number; lines: string | undefined }>();
    /** Map entries the fast path added, by map and key, with the reconciliation that added them. */
    const entries = new Map<string, AppliedEntry & { seq: number }>();
    /** The earliest reconciliation the fast path left to the full path, until a validated one has it. */
    let waitFor = 0;
    const slicing = slicingOf(deps, scheduler, deps.sliceMs ?? 10);

    const onValidated = (event: ValidatedEvent): Observable<(FastEvent | ValidatedEvent)[]> | (FastEvent | ValidatedEvent)[][] => {
      const seq = event.reconcile.seq;
      const behind = [...applied].filter(([backend, a]) => a.seq > seq && serverLines(event.config, backend) !== a.lines).map(([backend]) => backend);
      const missing = [...entries.values()].filter((e) => e.seq > seq && mapValue(event.config, e.map, e.key) !== e.value).map((e) => `${e.map} ${e.key}`);
      if (behind.length > 0 || missing.length > 0) return [[{ type: 'ValidatedSuperseded', reconcile: event.reconcile, backends: behind, ...(missing.length > 0 && { entries: missing }) }]];
      for (const [backend, a] of applied) if (a.seq <= seq) applied.delete(backend);
      for (const [key, e] of entries) if (e.seq <= seq) entries.delete(key);
      let prepared: void | Steps<void> = undefined;
      if (!base || seq >= base.seq) {
        if (base?.config !== event.config) prepared = deps.prepare?.(event.config);
        base = { config: event.config, seq };
      }
      if (waitFor !== 0 && seq >= waitFor) waitFor = 0;
      if (!isSteps(prepared)) return [[event]];
      // The configuration goes on at once; the next change waits for what its plan needs.
      const steps = prepared;
      return concat(of([event]), sliced(() => steps, slicing).pipe(ignoreElements()));
    };

    const onReconcile = (reconcile: Reconcile): Observable<FastEvent[]> | FastEvent[][] => {
      // Only cluster changes take it; the initial sync and the like render in full.
      if (reconcile.cause.reason !== 'resources' || !base) return [];
      const started = scheduler.now();
      if (waitFor !== 0) return [[{ type: 'FastPathSkipped', reconcile, reason: `waiting for the full render of reconciliation #${waitFor}`, durationMs: 0 }]];
      const from = base.config;
      const planned = deps.plan(from, reconcile);
      if (!isSteps(planned)) return [afterPlan(reconcile, from, planned, started)];
      deps.planning?.(true);
      return sliced(() => planned, slicing).pipe(
        map((outcome) => afterPlan(reconcile, from, outcome, started)),
        finalize(() => deps.planning?.(false)),
      );
    };

    /** What a plan's outcome makes of the state, and the event that says so. */
    const afterPlan = (reconcile: Reconcile, from: RenderedConfig, outcome: FastPathOutcome, started: number): FastEvent[] => {
      const durationMs = scheduler.now() - started;
      switch (outcome.kind) {
        case 'none':
          return [];
        case 'unsupported':
          waitFor = reconcile.seq;
          return [{ type: 'FastPathSkipped', reconcile, reason: outcome.reason, durationMs }];
        case 'runtime': {
          base = { config: outcome.config, seq: reconcile.seq };
          for (const backend of outcome.backends) applied.set(backend, { seq: reconcile.seq, lines: (outcome.lines && Object.hasOwn(outcome.lines, backend) ? outcome.lines[backend] : undefined) ?? serverLines(outcome.config, backend) });
          for (const e of outcome.entries ?? []) entries.set(`${e.map}\u0001${e.key}`, { ...e, seq: reconcile.seq });
          const added = (outcome.entries ?? []).map((e) => `${e.map} ${e.key}`);
          return [{ type: 'FastPathPlanned', reconcile, config: outcome.config, from: from.hash, ops: outcome.ops, backends: outcome.backends, ...(added.length > 0 && { entries: added }), ...(outcome.partial && { partial: true as const }), durationMs }];
        }
      }
    };

    // One at a time, in the order they come: a validated configuration that arrives while a
    // plan runs in slices waits for it, so no plan builds on a base that changed under it.
    const inputs$ = merge(validated$.pipe(map((validated) => ({ validated }))), reconciles$.pipe(map((reconcile) => ({ reconcile }))));
    return inputs$.pipe(
      concatMap((input) => ('validated' in input ? onValidated(input.validated) : onReconcile(input.reconcile))),
      mergeMap((events) => events),
    );
  });
}

/** A planned fast path as a deployment request to every instance the newest desired state names. */
export function fastRequests(fast$: Observable<FastEvent | ValidatedEvent>, desired$: Observable<Desired>, scheduler: SchedulerLike = asyncScheduler): Observable<DeployRequest> {
  return fast$.pipe(
    withLatestFrom(desired$),
    mergeMap(([event, state]): DeployRequest[] =>
      event.type === 'FastPathPlanned' && state.endpoints.length > 0
        ? [{ reconcile: event.reconcile, config: event.config, endpoints: state.endpoints, reason: 'fast', queuedAt: scheduler.now(), fast: { from: event.from, ops: event.ops } }]
        : [],
    ),
  );
}
