import { EMPTY, type Observable, asyncScheduler, defer, finalize, map, mergeMap, of, tap } from 'rxjs';
import type { CanaryProbeSettings, CanarySettings, WatchedResource } from '../config/controller-config.ts';
import type { CanaryCheck, ControllerEvent, Deployment, Endpoint, InstanceOutcome } from '../events.ts';
import { configDiff } from '../haproxy/config-diff.ts';
import { type Plan, planDeploymentSteps } from '../haproxy/plan.ts';
import type { Steps } from '../steps.ts';
import { type Validator, couldNotRun } from '../haproxy/validate.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import type { ResourceView } from '../k8s/store.ts';
import { rememberStructure } from '../haproxy/structure.ts';
import { DEFAULT_RENDER_TIMEOUT_MS } from '../templating/engine.ts';
import { planFastPathSteps, warmFastPath } from '../templating/fast-maps.ts';
import { prepareFastSteps } from '../templating/fast-path.ts';
import { RenderWorker, type WorkerRender } from '../templating/render-worker.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { type GraphDeps, graph } from '../../streams/graph.ts';
import type { ValidateOutcome } from '../../streams/validate.ts';
import type { RenderOutcome } from '../../streams/render.ts';
import type { RecordingControl } from '../replay/control.ts';
import { fromAbortable } from './abortable.ts';
import type { LoadedConfig } from './load-config.ts';

/** The outside world, as a running mode (local, in-cluster) provides it. */
export interface ControllerIO {
  /** Changes of the watched sets, each ending its initial list with `synced`. */
  changes(watch: readonly WatchedResource[]): Observable<ResourceChange>;
  endpoints$: Observable<readonly Endpoint[]>;
  validator: Pick<Validator, 'validate'>;
  deployTo(endpoint: Endpoint, deployment: Deployment): Observable<InstanceOutcome>;
  /** Values merged over the configuration's own, e.g. from `--set`. */
  values?: Readonly<Record<string, unknown>>;
  /** Whether this replica may deploy (leader election); without it, it always may. */
  leader$?: Observable<boolean>;
  /** Emits when the Data Plane credentials are new or rotated: every instance is deployed to again. */
  credentials$?: Observable<unknown>;
  /**
   * Told, at each render, what the graph renders with: the configuration, the values
   * and its live stores (the admission webhook renders with the same).
   */
  onRender?(basis: RenderBasis): void;
  /** Blanks the values of watched Secrets out of a text (the deployment diffs); redaction of credentials and keys is always on. */
  scrub?(text: string): string;
  /** What canary rollout needs of the targets (with `settings.canary`; a fleet of one never needs it). */
  canary?: CanaryIO;
  /** Records the graph's inputs while a recording is on (`--record`, docs/replay.md). */
  recording?: RecordingControl;
}

export interface CanaryIO {
  /** One round of checks of an instance (Data Plane health, failed reloads since `since`, the probe). */
  check(endpoint: Endpoint, since: number, probe: CanaryProbeSettings | undefined): Observable<CanaryCheck>;
  /** What an instance runs, as its target knows it. */
  running(endpoint: Endpoint): RenderedConfig | undefined;
  /** The plan of a pair, in steps, as the targets make and keep it; without it the verdict plans on its own. */
  plan?(from: RenderedConfig, to: RenderedConfig): Steps<Plan>;
}

/** What a graph renders with; `resources` are its own stores, kept current by the graph. */
export interface RenderBasis {
  loaded: LoadedConfig;
  values: Readonly<Record<string, unknown>>;
  resources: ReadonlyMap<string, ResourceView>;
}

/** The graph for one loaded configuration, with the real renderer and validator plugged in. */
export function controllerGraph(loaded: LoadedConfig, io: ControllerIO): Observable<ControllerEvent> {
  const { config } = loaded;
  const values = { ...config.values, ...io.values };
  const timeoutMs = config.settings.renderTimeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
  return defer(() => {
    // Renders run in a worker thread with its own copy of the sets (render-worker.ts).
    const { 'haproxy.cfg': main, ...aux } = config.templates;
    const worker = new RenderWorker({ templates: { main, ...aux }, sets: config.watch, values, timeoutMs });
    // Without an admission webhook rendering here, this thread's stores need no sealed copies.
    const watched = io.onRender ? config.watch : config.watch.map((w) => ({ ...w, seal: false }));
    let warmed = false;
    const deps: GraphDeps = {
      // Each subscription (the graph rebuilds itself after a failure) starts from empty stores: so does the worker.
      changes$: defer(() => {
        worker.reset();
        return io.changes(config.watch).pipe(tap((change) => worker.apply(change)));
      }),
      endpoints$: io.endpoints$,
      render: ({ resources }) =>
        defer(() => {
          io.onRender?.({ loaded, values, resources });
          return fromAbortable((signal) => worker.render(resources, signal)).pipe(mergeMap(renderOutcome));
        }),
      // The fast path renders a few server or map entry snippets here, with the templates compiled in this thread.
      // A plan's next slice runs on a timer of its own, not one of the graph's (which a recording replays).
      slices: { scheduler: asyncScheduler },
      fastPlan: ({ base, reconcile, resources }) => planFastPathSteps(base, reconcile.cause.changes, { templates: loaded.templates, values, timeoutMs, resources }),
      fastPrepare: ({ base, resources }) =>
        (function* () {
          yield* prepareFastSteps(base);
          if (warmed) return;
          // Once, on the first base: the first change after a start then plans as fast as the others.
          yield;
          warmFastPath(base, { templates: loaded.templates, values, timeoutMs, resources });
          warmed = true;
        })(),
      validate: (rendered: RenderedConfig) =>
        fromAbortable((signal) => io.validator.validate(rendered, signal)).pipe(
          map((result): ValidateOutcome => {
            if (result.ok) return { ok: true };
            // A check that could not run is no refusal: the graph checks again later.
            if (couldNotRun(result.phase)) return { ok: false, unavailable: result.problems.map((p) => p.message).join('; ') };
            return { ok: false, problems: result.problems };
          }),
        ),
      deployTo: io.deployTo,
      diff: (from, to) => configDiff(from, to, { ...(io.scrub && { scrub: io.scrub }) }),
      ...(io.canary && config.settings.canary && { canary: canaryDeps(io.canary, config.settings.canary) }),
      ...(io.leader$ && { leader$: io.leader$ }),
      ...(io.credentials$ && { credentials$: io.credentials$ }),
    };
    const settings = { ...config.settings, watched };
    return (io.recording ? io.recording.record(graph, settings, deps) : graph(settings, deps)).pipe(finalize(() => void worker.close()));
  });
}

/** The canary stage's IO: the targets' checks and knowledge, and the deployment plan's verdict on reloads. */
function canaryDeps(io: CanaryIO, settings: CanarySettings): NonNullable<GraphDeps['canary']> {
  return {
    check: (endpoint, _config, since) => io.check(endpoint, since, settings.probe),
    // The targets deploy the pair the verdict planned: from their cache, it is planned once.
    reloads: function* (from, to) {
      return (yield* (io.plan ? io.plan(from, to) : planDeploymentSteps(from, to))).kind === 'reload';
    },
    running: (endpoint) => io.running(endpoint),
  };
}

/** What the worker answered, as the render stage takes it; a cancelled render gives nothing. */
function renderOutcome(answer: WorkerRender): Observable<RenderOutcome> {
  if (!answer.ok) return answer.cancelled ? EMPTY : of({ ok: false, error: { template: '(render)', message: answer.message } });
  const { result, structure, heap: threadHeap } = answer;
  if (!result.ok) return of({ ok: false, error: result.error, threadHeap });
  // The worker checked the structure already: validation takes its verdict instead of checking again here.
  rememberStructure(result.config, structure);
  return of({ ok: true, config: result.config, warnings: result.warnings, statuses: result.statuses, ...(answer.statusesDigest !== undefined && { statusesDigest: answer.statusesDigest }), threadHeap });
}
