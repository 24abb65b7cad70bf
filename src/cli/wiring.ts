import { type Observable, defer, map, of } from 'rxjs';
import type { WatchedResource } from '../config/controller-config.ts';
import type { ControllerEvent, Deployment, Endpoint, InstanceOutcome } from '../events.ts';
import { type Validator, couldNotRun } from '../haproxy/validate.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import type { ResourceView } from '../k8s/store.ts';
import { DEFAULT_RENDER_TIMEOUT_MS, renderTemplates } from '../templating/engine.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { graph } from '../../streams/graph.ts';
import type { ValidateOutcome } from '../../streams/validate.ts';
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
}

/** What a graph renders with; `resources` are its own stores, kept current by the graph. */
export interface RenderBasis {
  loaded: LoadedConfig;
  values: Readonly<Record<string, unknown>>;
  resources: ReadonlyMap<string, ResourceView>;
}

/** The graph for one loaded configuration, with the real renderer and validator plugged in. */
export function controllerGraph(loaded: LoadedConfig, io: ControllerIO): Observable<ControllerEvent> {
  const { config, templates } = loaded;
  const values = { ...config.values, ...io.values };
  return graph(
    { ...config.settings, watched: config.watch },
    {
      changes$: io.changes(config.watch),
      endpoints$: io.endpoints$,
      // Rendering is synchronous CPU work; defer runs it when the trigger is taken.
      render: ({ resources }) =>
        defer(() => {
          io.onRender?.({ loaded, values, resources });
          return of(renderTemplates(templates, { resources: Object.fromEntries(resources), values }, { timeoutMs: config.settings.renderTimeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS }));
        }),
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
      ...(io.leader$ && { leader$: io.leader$ }),
      ...(io.credentials$ && { credentials$: io.credentials$ }),
    },
  );
}
