import { type MonoTypeOperatorFunction, type Observable, Subject, connect, map, merge, of, tap } from 'rxjs';
import type { ControllerEvent } from '../events.ts';
import type { KubeApi } from '../k8s/api.ts';
import { DEFAULT_EVENT_LIMITS, type EventLimits } from '../k8s/cluster-events.ts';
import { EventRecorder } from '../k8s/event-recorder.ts';
import type { ListWatchOptions } from '../k8s/list-watch.ts';
import type { KubeObject, ResourceChange } from '../k8s/resource.ts';
import { serviceAddressSource } from '../k8s/sources.ts';
import { feedback } from '../../streams/graph.ts';
import type { PatchAnswer } from '../../streams/status.ts';
import { fromAbortable } from './abortable.ts';
import type { LoadedConfig } from './load-config.ts';

/**
 * Warning Events on the objects the render skipped: many objects may each have
 * one, so they get a budget of their own, apart from the controller's Events.
 */
export const OBJECT_EVENT_LIMITS: EventLimits = { ...DEFAULT_EVENT_LIMITS, burst: 100, refillMs: 200 };

/** The recorder of Warning Events on cluster objects: each Event is created in its object's namespace. */
export function objectEventRecorder(api: KubeApi, options: { identity: string; limits?: Partial<EventLimits>; onNotice?: (message: string) => void }): EventRecorder {
  return new EventRecorder(api, {
    namespace: 'default',
    // Every object event names its own object; this is never used.
    regarding: () => ({ kind: 'Object', name: 'haprx' }),
    reportingInstance: options.identity,
    limits: { ...OBJECT_EVENT_LIMITS, ...options.limits },
    ...(options.onNotice && { onNotice: options.onNotice }),
  });
}

export interface ClusterFeedbackOptions {
  leader$: Observable<boolean>;
  /** The HAProxy Service whose address Ingresses and Gateways show; none: addresses are left alone. */
  service?: { namespace: string; name: string };
  recorder: Pick<EventRecorder, 'record'>;
  listWatch?: ListWatchOptions;
  /** Writes start at least this far apart. */
  minIntervalMs?: number;
}

/**
 * Plugs the Kubernetes API into the feedback stages for one controller
 * configuration: `observe` goes on the watched changes (the writer sees what the
 * cluster holds), `attach` on the graph's events (what the render decided).
 */
export function clusterFeedback(api: KubeApi, loaded: LoadedConfig, options: ClusterFeedbackOptions): { observe: MonoTypeOperatorFunction<ResourceChange>; attach: (graph$: Observable<ControllerEvent>) => Observable<ControllerEvent> } {
  const observed = new Subject<ResourceChange>();
  const sets = new Map(loaded.config.watch.map((w) => [w.name, { apiVersion: w.apiVersion, resource: w.resource }]));
  const addresses$ = options.service ? serviceAddressSource(api, options.service.namespace, options.service.name, options.listWatch) : of(undefined);
  const patch = (target: { apiVersion: string; resource: string; namespace?: string; name: string }, body: Record<string, unknown>): Observable<PatchAnswer> =>
    fromAbortable((signal) => api.request<KubeObject>('PATCH', { ...target, subresource: 'status' }, { body, contentType: 'application/merge-patch+json', signal })).pipe(
      map((result): PatchAnswer => (result.ok ? { ok: true, object: result.body } : { ok: false, status: result.status, message: result.message })),
    );
  return {
    observe: tap((change) => observed.next(change)),
    // connect: the feedback subscribes before the graph starts its watches, so it sees their first lists.
    attach: (graph$) =>
      graph$.pipe(
        connect((events$) =>
          merge(
            events$,
            feedback(
              { events$, observed$: observed, leader$: options.leader$, addresses$ },
              { patch, sets, warn: (event) => options.recorder.record(event) },
              { ...(options.minIntervalMs !== undefined && { minIntervalMs: options.minIntervalMs }) },
            ),
          ),
        ),
      ),
  };
}
