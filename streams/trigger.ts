import { type Observable, type SchedulerLike, asyncScheduler, defer, filter, map, merge, scan, timer } from 'rxjs';
import type { ChangeRef, Reconcile, ReconcileCause } from '../src/events.ts';
import type { ResourceChange } from '../src/k8s/resource.ts';
import { debounceBatch } from './operators/debounce-batch.ts';

export interface TriggerOptions {
  /** Quiet time that ends a burst; 0 reconciles on every change. */
  debounceMs: number;
  /** No change waits longer than this, however long the churn goes on. */
  maxWaitMs: number;
  scheduler?: SchedulerLike;
}

const INITIAL: ReconcileCause = { reason: 'config', changes: [] };

/**
 * Turns effective resource changes into reconciliations. Nothing happens until every
 * watched set has synced: a render of a half-listed cluster would deploy a config
 * missing backends. The moment the last set syncs, a configuration is complete and
 * reconciles at once. After that the debounce adapts: the first change after a quiet
 * period reconciles at once, with the changes that arrive in the same turn (the objects of
 * one file or one watch batch: a new Service, its EndpointSlice and its Ingress), the
 * changes that follow later are batched until the source is quiet again, and none waits longer than the maximum.
 */
export function trigger(changes$: Observable<ResourceChange>, watched: readonly string[], options: TriggerOptions): Observable<Reconcile> {
  const scheduler = options.scheduler ?? asyncScheduler;
  return defer(() => {
    const unsynced = new Set(watched);
    const gated$ = changes$.pipe(
      map((change) => {
        const wasOpen = unsynced.size === 0;
        if (change.type === 'synced') unsynced.delete(change.resource);
        return { change, wasOpen, opens: !wasOpen && unsynced.size === 0, at: scheduler.now() };
      }),
      // Changes before the gate opens are in the stores already: the opening render sees them.
      filter((g) => g.opens || (g.wasOpen && g.change.type !== 'synced')),
    );
    const batches$ = gated$.pipe(
      debounceBatch({ dueTime: options.debounceMs, maxWait: options.maxWaitMs, immediate: (g) => g.opens, leading: true, scheduler }),
      map((batch): { cause: ReconcileCause; firstChangeAt?: number } => {
        const changed = batch.filter((g) => !g.opens);
        const changes = changed.map((g) => changeRef(g.change));
        const cause: ReconcileCause = { reason: batch.some((g) => g.opens) ? 'config' : 'resources', changes };
        // When the oldest change was seen: where its propagation to the instances starts.
        return changed.length > 0 ? { cause, firstChangeAt: changed.reduce((first, g) => Math.min(first, g.at), Infinity) } : { cause };
      }),
    );
    // Nothing to wait for: reconcile on the next tick, once every branch has subscribed.
    const causes$ = unsynced.size === 0 ? merge(timer(0, scheduler).pipe(map(() => ({ cause: INITIAL }))), batches$) : batches$;
    return causes$.pipe(
      scan(
        (previous: Reconcile | undefined, { cause, firstChangeAt }: { cause: ReconcileCause; firstChangeAt?: number }): Reconcile => ({
          seq: (previous?.seq ?? 0) + 1,
          cause,
          at: scheduler.now(),
          ...(firstChangeAt !== undefined && { firstChangeAt }),
        }),
        undefined,
      ),
      filter((reconcile) => reconcile !== undefined),
    );
  });
}

/** What a trace or a log needs to know of a change, without the object itself. */
export function changeRef(change: ResourceChange): ChangeRef {
  if (change.type === 'problem') return { resource: change.resource ?? change.source, type: change.type };
  if (change.type === 'synced' || change.type === 'replace') return { resource: change.resource, type: change.type };
  const { kind, metadata } = change.object;
  return {
    resource: change.resource,
    type: change.type,
    ...(kind !== undefined && { kind }),
    ...(metadata.namespace !== undefined && { namespace: metadata.namespace }),
    name: metadata.name,
    ...(metadata.resourceVersion !== undefined && { resourceVersion: metadata.resourceVersion }),
  };
}
