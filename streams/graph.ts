import { type Observable, type SchedulerLike, asyncScheduler, connect, defer, filter, map, merge, of, share } from 'rxjs';
import type { ControllerConfig } from '../src/config/controller-config.ts';
import type { ControllerEvent, Endpoint, InstanceOutcome, Deployment, Reconcile, ValidatedEvent } from '../src/events.ts';
import type { ResourceChange } from '../src/k8s/resource.ts';
import { type ResourceView, type StoreOptions, Store } from '../src/k8s/store.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { deployer } from './deploy.ts';
import { drift } from './drift.ts';
import { deployRequests } from './endpoints.ts';
import { whileLeader } from './leadership.ts';
import { type RenderOutcome, render, renderedOnly } from './render.ts';
import { schedule } from './schedule.ts';
import { applyToStores } from './stores.ts';
import { trigger } from './trigger.ts';
import { type ValidateOutcome, validate } from './validate.ts';

export interface WatchedSet extends StoreOptions {
  /** The name templates use: `resources.<name>`. */
  name: string;
}

/** The timings of the controller configuration, and the sets it watches. */
export interface GraphSettings extends Readonly<ControllerConfig['settings']> {
  watched: readonly WatchedSet[];
}

export interface RenderInput {
  reconcile: Reconcile;
  resources: ReadonlyMap<string, ResourceView>;
}

/** Everything the graph does to the world comes in here, so tests can drive it in virtual time. */
export interface GraphDeps {
  /** Changes of every watched set, including each set's `synced`. */
  changes$: Observable<ResourceChange>;
  /** The current HAProxy instances. */
  endpoints$: Observable<readonly Endpoint[]>;
  render(input: RenderInput): Observable<RenderOutcome>;
  validate(config: RenderedConfig): Observable<ValidateOutcome>;
  deployTo(endpoint: Endpoint, deployment: Deployment): Observable<InstanceOutcome>;
  /** Whether this replica may deploy; without it, it always may. */
  leader$?: Observable<boolean>;
  scheduler?: SchedulerLike;
}

/**
 * The controller for one controller configuration, as one stream of events:
 *
 *   changes$ → stores → trigger (sync gate, debounce with max wait)
 *            → render (switchMap, unchanged output stops here)
 *            → validate (switchMap)
 *            → requests (× endpoints$) ⊕ drift, while leader
 *            → schedule (throttle, single flight, latest waits)
 *            → deploy (mergeMap over endpoints)
 *
 * `connect` subscribes every branch before the change source starts, so no event
 * is missed by a branch that subscribed late.
 */
export function graph(settings: GraphSettings, deps: GraphDeps): Observable<ControllerEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  return defer(() => {
    const stores = new Map(settings.watched.map((w) => [w.name, new Store(w.name, w)]));
    return deps.changes$.pipe(
      connect((changes$) => {
        const stored$ = applyToStores(changes$, stores).pipe(share());
        const reconciles$ = trigger(
          stored$.pipe(filter((c) => c.type !== 'problem')),
          settings.watched.map((w) => w.name),
          { debounceMs: settings.debounceMs, maxWaitMs: settings.debounceMaxWaitMs, scheduler },
        ).pipe(share());
        const rendered$ = render(reconciles$, { render: (reconcile) => deps.render({ reconcile, resources: stores }), scheduler }).pipe(share());
        const validated$ = validate(renderedOnly(rendered$), { validate: deps.validate, scheduler }).pipe(share());
        const requests$ = deployRequests(
          validated$.pipe(filter((e): e is ValidatedEvent => e.type === 'Validated')),
          deps.endpoints$,
          scheduler,
        ).pipe(share());
        const deployed$ = schedule(
          whileLeader(merge(requests$, drift(requests$, settings.driftIntervalMs, scheduler)), deps.leader$ ?? of(true), scheduler),
          deployer({ deployTo: deps.deployTo, scheduler }, { maxParallel: settings.maxParallel, timeoutMs: settings.deployTimeoutMs }),
          settings.minDeployIntervalMs,
          scheduler,
        );
        return merge(
          stored$.pipe(
            filter((c) => c.type === 'problem'),
            map(({ type: _, ...problem }): ControllerEvent => ({ type: 'SourceProblem', ...problem })),
          ),
          reconciles$.pipe(map((reconcile): ControllerEvent => ({ type: 'ReconcileTriggered', reconcile }))),
          rendered$,
          validated$,
          deployed$,
        );
      }),
    );
  });
}
