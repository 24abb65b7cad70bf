import { EMPTY, type Observable, type SchedulerLike, Subject, asyncScheduler, concatMap, connect, defer, filter, ignoreElements, map, merge, of, share, tap } from 'rxjs';
import { type BackoffOptions, RETRY_BACKOFF } from '../src/backoff.ts';
import { type ControllerConfig, DEFAULT_SETTINGS } from '../src/config/controller-config.ts';
import type { ControllerEvent, Endpoint, InstanceOutcome, Deployment, Reconcile, ValidatedEvent } from '../src/events.ts';
import type { ResourceChange } from '../src/k8s/resource.ts';
import type { Steps } from '../src/steps.ts';
import { type ResourceView, type StoreOptions, Store } from '../src/k8s/store.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { type CanaryDeps, canaryRollout } from './canary.ts';
import { deployer } from './deploy.ts';
import { type Describe, deploymentDiffs } from './deployment-diff.ts';
import { drift } from './drift.ts';
import { type FastPathOutcome, fastPath, fastRequests } from './fast-path.ts';
import { deployRequests, desired, redeployOn } from './endpoints.ts';
import { whileLeader } from './leadership.ts';
import { stageName, supervise } from './operators/supervise.ts';
import { paceConfirmations } from './confirm-pace.ts';
import { holdWhileFast } from './render-hold.ts';
import { type RenderOutcome, type Verdict, render, renderedOnly } from './render.ts';
import { instanceRetries } from './retry.ts';
import { type ObjectWarningEvent, objectWarnings } from './object-warnings.ts';
import { schedule } from './schedule.ts';
import { type StatusDeps, type StatusInputs, type StatusOptions, statusWriter } from './status.ts';
import { applyToStores } from './stores.ts';
import { trigger } from './trigger.ts';
import { type ValidateOutcome, validate } from './validate.ts';

export interface WatchedSet extends StoreOptions {
  /** The name templates use: `resources.<name>`. */
  name: string;
}

/** The longest a full render waits for fast path deployments under way (see holdWhileFast). */
const FAST_HOLD_MS = 500;
/** Fast path reconciliations remembered for the render stage (see fastTaken). */
const FAST_TAKEN_KEPT = 64;

/** The timings of the controller configuration, and the sets it watches. */
export interface GraphSettings extends Readonly<ControllerConfig['settings']> {
  watched: readonly WatchedSet[];
}

export interface RenderInput {
  reconcile: Reconcile;
  resources: ReadonlyMap<string, ResourceView>;
}

export interface FastPlanInput {
  /** The configuration the instances run, or are being given. */
  base: RenderedConfig;
  reconcile: Reconcile;
  /** The graph's stores, as they are now. */
  resources: ReadonlyMap<string, Store>;
}

/** Everything the graph does to the world comes in here, so tests can drive it in virtual time. */
export interface GraphDeps {
  /** Changes of every watched set, including each set's `synced`. */
  changes$: Observable<ResourceChange>;
  /** The current HAProxy instances. */
  endpoints$: Observable<readonly Endpoint[]>;
  render(input: RenderInput): Observable<RenderOutcome>;
  /** The fast path's plan, at once or as steps run in slices (src/steps.ts); without it, every change takes the full path. */
  fastPlan?(input: FastPlanInput): FastPathOutcome | Steps<FastPathOutcome>;
  /** Makes ready what the fast path needs of a configuration that becomes its base: at once, or as steps run in slices. */
  fastPrepare?(input: Omit<FastPlanInput, 'reconcile'>): void | Steps<void>;
  validate(config: RenderedConfig): Observable<ValidateOutcome>;
  deployTo(endpoint: Endpoint, deployment: Deployment): Observable<InstanceOutcome>;
  /** The diff each completed deployment carries (redacted and bounded); without it, none. */
  diff?: Describe;
  /** The canary's checks and what instances run; with `settings.canary`, configurations that reload go to one instance first. */
  canary?: Omit<CanaryDeps, 'scheduler'>;
  /** Whether this replica may deploy; without it, it always may. */
  leader$?: Observable<boolean>;
  /** Emits when the Data Plane credentials are new or rotated: every instance gets the current configuration again. */
  credentials$?: Observable<unknown>;
  /** Delays of the feedback edges (instance retries, validation retries, restarts); default 1 s doubling to 60 s. */
  backoff?: BackoffOptions;
  /** The jitter's random source, in [0, 1); tests pass a fixed one. */
  random?: () => number;
  scheduler?: SchedulerLike;
  /**
   * How the fast path's planning is cut into slices: the scheduler that runs each next
   * slice, and the clock a slice's budget is measured by. By default the graph's scheduler
   * and performance.now; in a process, a scheduler of its own, so that a recording of the
   * graph's timers does not depend on how fast the machine planned.
   */
  slices?: { scheduler: SchedulerLike; clock?: () => number };
}

/**
 * The controller for one controller configuration, as one stream of events:
 *
 *   changes$ → stores → trigger (sync gate, adaptive debounce with max wait)
 *            → hold while a fast path deployment runs (at most 500 ms)  ◄─ deploy outcomes
 *            → pace (a render that only confirms the fast path: one per confirm wait),
 *              then held as above if a fast deployment runs when the pace lets one go
 *            → render (latest wins, starving none; unchanged output stops here) ◄─ verdicts
 *            → validate (latest wins, starving none; a check that could not run is retried)
 *            → fast path gate (a valid config older than the fast path's servers stops)
 *            → desired (newest valid config × instances)
 *            → requests: new config, (re)joined instance, drift, credentials,
 *                        failed instance retried with backoff        ◄─ deploy outcomes
 *            → whileLeader (switchMap on leader$: a lost lead aborts the deployment)
 *            → schedule (throttle, single flight, waiting requests merged)
 *            → canary (optional: a configuration that reloads goes to one instance,
 *                      checked, then to the rest; a failure rolls the canary back)
 *            → deploy (mergeMap over endpoints)
 *            → diffs (each completed deployment: what it changed on its instances)
 *
 *   fast path: trigger → new server lines planned at once (runtime operations only)
 *            → requests (reason fast) → deploy in order, past the schedule's interval
 *
 * `connect` subscribes every branch before the change source starts, so no event
 * is missed by a branch that subscribed late. The two feedback edges are subjects fed
 * by their stage's output. Errors are named by the stage they leave; the boundary
 * (supervise) reports one as StageFailed and rebuilds the graph after a backoff
 * delay: it syncs again before it renders, and the instances keep what they run.
 */
export function graph(settings: GraphSettings, deps: GraphDeps): Observable<ControllerEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  // How the stages that work in slices (the fast path's plan, the canary's verdict) cut them.
  const slicing = deps.slices ? { sliceScheduler: deps.slices.scheduler, ...(deps.slices.clock && { clock: deps.slices.clock }) } : {};
  const retrying = { backoff: deps.backoff ?? RETRY_BACKOFF, random: deps.random ?? Math.random, scheduler };
  const run$ = defer(() => {
    const stores = new Map(settings.watched.map((w) => [w.name, new Store(w.name, w)]));
    const verdicts = new Subject<Verdict>();
    const deployEvents = new Subject<ControllerEvent>();
    /** Whether the fast path is planning: a plan in slices holds the full render like its deployment does. */
    const fastPlanning = new Subject<boolean>();
    return deps.changes$.pipe(
      stageName('sources'),
      connect((changes$) => {
        const stored$ = applyToStores(changes$, stores).pipe(stageName('stores'), share());
        const reconciles$ = trigger(
          stored$.pipe(filter((c) => c.type !== 'problem')),
          settings.watched.map((w) => w.name),
          { debounceMs: settings.debounceMs, maxWaitMs: settings.debounceMaxWaitMs, scheduler },
        ).pipe(stageName('trigger'), share());
        /**
         * Reconciliations the fast path applied, until the render stage has seen them: the newest
         * few, as those the pace below drops never reach it.
         */
        const fastTaken = new Set<number>();
        // Changes the fast path applied wait for their full render up to the confirm wait, as that
        // render only confirms what runs: under endpoint churn at 10k objects each render costs the
        // render thread a core, and each finished one costs this thread (its result, its check, its
        // bookkeeping). So at most one such render starts per confirm wait, and newer changes may
        // cancel it until then. Any other change goes at once and keeps the debounce's max wait.
        const confirmWait = settings.confirmMaxWaitMs ?? DEFAULT_SETTINGS.confirmMaxWaitMs!;
        // The full render does not start while the fast path's runtime operations are on their way:
        // neither as a change comes (by the end of its turn the fast path has taken it or not, which
        // the pace asks), nor when the pace lets a held confirmation go.
        const hold = (reconcile$: Observable<Reconcile>, atTurnEnd: boolean) => holdWhileFast(reconcile$, deployEvents, { maxHoldMs: FAST_HOLD_MS, atTurnEnd, planning$: fastPlanning, scheduler });
        const toRender$ = hold(paceConfirmations(hold(reconciles$, true), (reconcile) => fastTaken.has(reconcile.seq), { intervalMs: confirmWait, scheduler }), false);
        const renderWait = (reconcile: Reconcile) => (fastTaken.delete(reconcile.seq) ? confirmWait : settings.debounceMaxWaitMs);
        const rendered$ = render(toRender$, verdicts, { render: (reconcile) => deps.render({ reconcile, resources: stores }), maxWaitMs: renderWait, scheduler }).pipe(
          stageName('render'),
          share(),
        );
        // Checks starve no more than renders do: one finishes once a configuration has waited the debounce's max wait.
        const validated$ = validate(renderedOnly(rendered$), { validate: deps.validate, maxWaitMs: settings.debounceMaxWaitMs, ...retrying }).pipe(
          stageName('validate'),
          tap((verdict) => verdicts.next(verdict)),
          share(),
        );
        const fastPlan = deps.fastPlan;
        const fast$ = fastPath(reconciles$, validated$.pipe(filter((e): e is ValidatedEvent => e.type === 'Validated')), {
          plan: (base, reconcile) => (fastPlan ? fastPlan({ base, reconcile, resources: stores }) : { kind: 'none' }),
          planning: (busy) => fastPlanning.next(busy),
          ...slicing,
          ...(deps.fastPrepare && { prepare: (base: RenderedConfig) => deps.fastPrepare!({ base, resources: stores }) }),
          scheduler,
        }).pipe(
          // The render stage takes a reconciliation at the end of the turn it came in (holdWhileFast): by then this has.
          tap((event) => {
            // A change the fast path applied only in part (a TLS host's routes) still needs its render at once.
            if (event.type !== 'FastPathPlanned' || event.partial) return;
            fastTaken.add(event.reconcile.seq);
            // Oldest first: the one the pace holds is among the newest.
            if (fastTaken.size > FAST_TAKEN_KEPT) fastTaken.delete(fastTaken.values().next().value!);
          }),
          stageName('fast path'),
          share(),
        );
        // What the fast path applied is desired from then on: no redeploy takes it back.
        const desired$ = desired(
          fast$.pipe(filter((e) => e.type === 'Validated' || e.type === 'FastPathPlanned')),
          deps.endpoints$.pipe(stageName('endpoints')),
        ).pipe(share());
        const fastRequests$ = fastRequests(fast$, desired$, scheduler).pipe(share());
        const requests$ = merge(
          deployRequests(desired$, scheduler),
          drift(desired$, settings.driftIntervalMs, scheduler),
          redeployOn(deps.credentials$ ?? EMPTY, desired$, 'credentials', scheduler),
          instanceRetries(deployEvents, desired$, retrying),
          fastRequests$,
        ).pipe(stageName('requests'));
        const deploy = deployer({ deployTo: deps.deployTo, scheduler }, { maxParallel: settings.maxParallel, timeoutMs: settings.deployTimeoutMs });
        const rollout = settings.canary && deps.canary ? canaryRollout(deploy, { ...deps.canary, scheduler, ...slicing }, settings.canary) : deploy;
        const deployed$ = whileLeader(
          requests$,
          desired$,
          (deps.leader$ ?? of(true)).pipe(stageName('leadership')),
          // Fast path requests carry runtime operations only: they go at once and in order,
          // not held to the interval between deployments that protects against reloads.
          (leading$) =>
            merge(
              // A deployment waiting for the interval takes the fast path's newer configuration, so as not to take it back.
              schedule(leading$.pipe(filter((r) => r.reason !== 'fast')), rollout, settings.minDeployIntervalMs, scheduler, leading$.pipe(filter((r) => r.reason === 'fast'))),
              leading$.pipe(
                filter((r) => r.reason === 'fast'),
                concatMap(deploy),
              ),
            ),
          scheduler,
        ).pipe(
          stageName('deploy'),
          tap((event) => deployEvents.next(event)),
        );
        return merge(
          stored$.pipe(
            filter((c) => c.type === 'problem'),
            map(({ type: _, ...problem }): ControllerEvent => ({ type: 'SourceProblem', ...problem })),
          ),
          reconciles$.pipe(map((reconcile): ControllerEvent => ({ type: 'ReconcileTriggered', reconcile }))),
          rendered$,
          validated$,
          fast$.pipe(filter((e) => e.type !== 'Validated')),
          deps.diff ? deploymentDiffs(deployed$, deps.diff).pipe(stageName('diff')) : deployed$,
        );
      }),
    );
  });
  return supervise(run$, { stage: 'graph', ...retrying });
}

export interface FeedbackDeps extends StatusDeps {
  /** Records a Warning Event on the object it is about (rate-limited by the recorder). */
  warn(event: ObjectWarningEvent): void;
}

/**
 * What the render decided about each object, back to the cluster, as consumers of
 * the controller's events: each object's status (statusWriter) and Warning Events
 * on the objects skipped or partly applied (objectWarnings), both leader only.
 */
export function feedback(inputs: StatusInputs, deps: FeedbackDeps, options: StatusOptions = {}): Observable<ControllerEvent> {
  return merge(statusWriter(inputs, deps, options), objectWarnings(inputs.events$, inputs.leader$).pipe(tap(deps.warn), ignoreElements()));
}
