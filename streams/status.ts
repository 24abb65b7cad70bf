import { EMPTY, type Observable, type SchedulerLike, Subject, asyncScheduler, catchError, concatMap, concatWith, defer, exhaustMap, ignoreElements, map, merge, mergeMap, of, tap, timer } from 'rxjs';
import type { Steps } from '../src/steps.ts';
import { sliced } from './operators/sliced.ts';
import { errorMessage } from '../src/errors.ts';
import type { ControllerEvent, ObjectRef } from '../src/events.ts';
import type { LoadBalancerIngress } from '../src/k8s/addresses.ts';
import type { KubeObject, ResourceChange } from '../src/k8s/resource.ts';
import { StatusBook } from '../src/status/book.ts';
import { cleanupPatch, hasAddressField, hasEntriesOf, statusPatch } from '../src/status/patch.ts';
import { ENTRY_LISTS, statusKey } from '../src/status/types.ts';

/** Where an object's status is written: its resource, as the watched set names it. */
export interface StatusTarget {
  apiVersion: string;
  /** The plural, e.g. `httproutes`. */
  resource: string;
  namespace?: string;
  name: string;
}

/** The API's answer to a status patch: the object as stored, or why not. */
export type PatchAnswer = { ok: true; object: KubeObject } | { ok: false; status: number; message: string };

export interface StatusInputs {
  /** The controller's events: renders (the statuses), validations and deployments (what is live). */
  events$: Observable<ControllerEvent>;
  /** The watched objects as the cluster holds them, status included: what is there to change. */
  observed$: Observable<ResourceChange>;
  /** Only the leader writes. */
  leader$: Observable<boolean>;
  /** The load balancer's addresses (the HAProxy Service); undefined while unknown. */
  addresses$: Observable<readonly LoadBalancerIngress[] | undefined>;
}

export interface StatusDeps {
  /** Merge-patches the object's `/status` subresource with `body`. */
  patch(target: StatusTarget, body: Record<string, unknown>): Observable<PatchAnswer>;
  /** The apiVersion and plural of each watched set, by its name. */
  sets: ReadonlyMap<string, { apiVersion: string; resource: string }>;
  scheduler?: SchedulerLike;
  /** The clock the slices (of the search for the next write, of a render's declarations) are measured by (performance.now). */
  clock?: () => number;
}

export interface StatusOptions {
  /** Writes start at least this far apart: 20 a second by default. */
  minIntervalMs?: number;
  /** The longest one slice holds the event loop (10 ms), by `clock`. */
  sliceMs?: number;
  /** The wait after a failed write, doubled after each further failure of the same object, up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
}

interface Observed {
  target: StatusTarget;
  resourceVersion?: string;
  generation?: number;
  status?: Record<string, unknown>;
}

export type StatusEvent = Extract<ControllerEvent, { type: 'StatusWritten' | 'StatusWriteFailed' }>;

/**
 * Writes what the templates declared about each object to its `/status`, as a
 * consumer of the controller's events:
 *
 * - what to write is the StatusBook's composed status (Programmed waits for the
 *   deployment), merged into the status the watch last showed (statusPatch: other
 *   controllers' conditions and parents entries stay), with that resourceVersion
 *   as a precondition, so a concurrent write is a conflict, not lost;
 * - only what differs is written, so the echo of a write through the watch writes
 *   nothing; someone else's change to a field haprx owns is put back;
 * - only while leading; writes start `minIntervalMs` apart; a failed write is tried
 *   again after a backoff that doubles per object (a conflict waits for the watch
 *   to bring the newer object); an object that is gone is forgotten;
 * - the search for the next object with something to write runs in slices of
 *   `sliceMs`: at 10k objects, after a deployment or a restart, most have nothing
 *   to write, and planning each in one stretch would hold the event loop; so does
 *   taking a render's declarations into the status book, each event in turn;
 * - memory is bounded by the watched objects: what is kept per object goes with it.
 */
export function statusWriter(inputs: StatusInputs, deps: StatusDeps, options: StatusOptions = {}): Observable<StatusEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  const minIntervalMs = options.minIntervalMs ?? 50;
  const retryMs = options.retryMs ?? 1_000;
  const maxRetryMs = options.maxRetryMs ?? 60_000;
  return defer(() => {
    const book = new StatusBook();
    const observed = new Map<string, Observed>();
    /** Keys per watched set, to apply a relist. */
    const bySet = new Map<string, Set<string>>();
    /** Controller names haprx writes entries as, learnt from the declarations. */
    const controllers = new Set<string>();
    /** Objects whose load balancer address haprx set. */
    const addressed = new Set<string>();
    /** Objects to look at, oldest first; those waiting for a retry are not among them. */
    const pending = new Set<string>();
    const failures = new Map<string, number>();
    const waiting = new Set<string>();
    const wake$ = new Subject<void>();
    const retry$ = new Subject<{ key: string; delayMs: number }>();
    let leader = false;
    let addresses: readonly LoadBalancerIngress[] | undefined;

    const mark = (keys: Iterable<string>) => {
      let any = false;
      for (const key of keys) {
        if (waiting.has(key)) continue;
        pending.add(key);
        any = true;
      }
      if (any) wake$.next();
    };
    // An object is haprx's business when it is declared, shows haprx's entries, or shows an address haprx set.
    const relevant = (key: string) => book.composed(key) !== undefined || addressed.has(key) || hasEntriesOf(observed.get(key)?.status, controllers);

    const observe = (change: ResourceChange): string[] => {
      if (change.type === 'synced' || change.type === 'problem') return [];
      const set = deps.sets.get(change.resource);
      const keys = bySet.get(change.resource) ?? new Set<string>();
      bySet.set(change.resource, keys);
      const forget = (key: string) => {
        keys.delete(key);
        observed.delete(key);
        addressed.delete(key);
        failures.delete(key);
        pending.delete(key);
      };
      const take = (object: KubeObject): string | undefined => {
        if (!set || typeof object.kind !== 'string') return undefined;
        const { namespace, name, resourceVersion, generation } = object.metadata;
        const key = statusKey({ kind: object.kind, namespace, name });
        keys.add(key);
        const status = object.status !== null && typeof object.status === 'object' && !Array.isArray(object.status) ? (object.status as Record<string, unknown>) : undefined;
        observed.set(key, {
          target: { apiVersion: set.apiVersion, resource: set.resource, ...(namespace && { namespace }), name },
          ...(resourceVersion !== undefined && { resourceVersion }),
          ...(typeof generation === 'number' && { generation }),
          ...(status && { status }),
        });
        return key;
      };
      if (change.type === 'delete') {
        const { kind } = change.object;
        if (typeof kind === 'string') forget(statusKey({ kind, namespace: change.object.metadata.namespace, name: change.object.metadata.name }));
        return [];
      }
      const objects = change.type === 'upsert' ? [change.object] : change.objects;
      if (change.type === 'replace') {
        const kept = new Set(objects.map((o) => (typeof o.kind === 'string' ? statusKey({ kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name }) : '')));
        for (const key of [...keys]) if (!kept.has(key)) forget(key);
      }
      return objects.map(take).filter((k): k is string => k !== undefined && relevant(k));
    };

    const learn = (event: ControllerEvent) => {
      if ((event.type !== 'Rendered' && event.type !== 'RenderUnchanged') || !event.statuses) return;
      const before = controllers.size;
      for (const s of event.statuses) for (const e of s.entries) if (ENTRY_LISTS[e.list].shared) controllers.add(String(e.key.controllerName));
      // A controller name seen for the first time: entries it wrote before a restart may need removing.
      // Every object is looked at: the search for writes (in slices) passes over those with nothing to write.
      if (controllers.size > before) mark(observed.keys());
    };

    // The time conditions are written with, made once per second: the search for writes plans
    // thousands of objects in a row, most of them with nothing to write.
    let second = Number.NaN;
    let secondText = '';
    const now = () => {
      const at = Math.floor(scheduler.now() / 1000);
      if (at !== second) secondText = rfc3339((second = at) * 1000);
      return secondText;
    };

    /** What to write for a key now, if anything. */
    const plan = (key: string): { target: StatusTarget; body: Record<string, unknown>; ref: ObjectRef; composed: boolean } | undefined => {
      const seen = observed.get(key);
      if (!seen) return undefined;
      const composed = book.composed(key);
      // The object changed since the render that declared this: the next render says more.
      if (composed?.generation !== undefined && seen.generation !== undefined && seen.generation > composed.generation) return undefined;
      const common = { current: seen.status, controllers, addresses, addressedByUs: addressed.has(key), now: now() };
      const kind = key.slice(0, key.indexOf(' '));
      let patch: Record<string, unknown> | undefined;
      if (composed) {
        const result = statusPatch({ ...common, composed });
        if (result && hasAddressField(kind)) {
          if (result.addressed) addressed.add(key);
          else addressed.delete(key);
        }
        patch = result?.patch;
      } else {
        patch = cleanupPatch(kind, common);
        if (!patch) addressed.delete(key);
      }
      if (!patch) return undefined;
      const ref: ObjectRef = { apiVersion: seen.target.apiVersion, kind, ...(seen.target.namespace && { namespace: seen.target.namespace }), name: seen.target.name };
      return { target: seen.target, body: { metadata: { ...(seen.resourceVersion !== undefined && { resourceVersion: seen.resourceVersion }) }, status: patch }, ref, composed: composed !== undefined };
    };

    const write = (key: string, planned: NonNullable<ReturnType<typeof plan>>): Observable<StatusEvent> =>
      deps.patch(planned.target, planned.body).pipe(
        catchError((err: unknown) => of<PatchAnswer>({ ok: false, status: 0, message: errorMessage(err) })),
        map((answer): StatusEvent => {
          const fields = Object.keys(planned.body.status as Record<string, unknown>);
          if (answer.ok) {
            failures.delete(key);
            const seen = observed.get(key);
            // The answer is the object as stored: newer than the watch until its echo arrives.
            if (seen) {
              const { resourceVersion, generation } = answer.object.metadata;
              const status = answer.object.status as Record<string, unknown> | undefined;
              observed.set(key, { target: seen.target, ...(resourceVersion !== undefined && { resourceVersion }), ...(typeof generation === 'number' && { generation }), ...(status && { status }) });
            }
            return { type: 'StatusWritten', object: planned.ref, fields };
          }
          if (answer.status === 404) {
            failures.delete(key);
            pending.delete(key);
            return { type: 'StatusWriteFailed', object: planned.ref, status: answer.status, message: answer.message, retryInMs: 0 };
          }
          const n = (failures.get(key) ?? 0) + 1;
          failures.set(key, n);
          const delayMs = Math.min(maxRetryMs, retryMs * 2 ** (n - 1));
          // The retry looks at it again, with whatever arrived meanwhile.
          pending.delete(key);
          waiting.add(key);
          retry$.next({ key, delayMs });
          return { type: 'StatusWriteFailed', object: planned.ref, status: answer.status, message: answer.message, retryInMs: delayMs };
        }),
      );

    /** The next pending object with something to write, taken from the pending ones; undefined when none is left. */
    function* nextWrite(): Steps<{ key: string; planned: NonNullable<ReturnType<typeof plan>> } | undefined> {
      while (leader && pending.size > 0) {
        const key = pending.values().next().value!;
        pending.delete(key);
        const planned = plan(key);
        if (planned) return { key, planned };
        yield;
      }
      return undefined;
    }
    const slicing = { scheduler, budgetMs: options.sliceMs ?? 10, ...(deps.clock && { now: deps.clock }) };
    // One write at a time, minIntervalMs apart, until nothing is pending.
    const drain = (): Observable<StatusEvent> =>
      sliced(nextWrite, slicing).pipe(
        mergeMap((found) => (found ? write(found.key, found.planned).pipe(concatWith(timer(minIntervalMs, scheduler).pipe(ignoreElements()), defer(drain))) : EMPTY)),
      );

    const feed$ = merge(
      inputs.observed$.pipe(tap((change) => mark(observe(change)))),
      // Each event in turn, a render's 10k declarations in slices like the search for writes.
      inputs.events$.pipe(
        concatMap((event) =>
          sliced(() => book.applySteps(event), slicing).pipe(
            tap((changed) => {
              learn(event);
              mark(changed);
            }),
          ),
        ),
      ),
      inputs.addresses$.pipe(
        tap((next) => {
          addresses = next;
          mark([...observed.keys()].filter((k) => hasAddressField(k.slice(0, k.indexOf(' ')))));
        }),
      ),
      inputs.leader$.pipe(
        tap((next) => {
          leader = next;
          if (leader) {
            mark(observed.keys());
            wake$.next();
          }
        }),
      ),
    ).pipe(ignoreElements());
    const retries$ = retry$.pipe(
      mergeMap(({ key, delayMs }) =>
        timer(delayMs, scheduler).pipe(
          tap(() => {
            waiting.delete(key);
            if (observed.has(key)) mark([key]);
          }),
          ignoreElements(),
        ),
      ),
    );
    return merge(retries$, wake$.pipe(exhaustMap(drain)), feed$);
  });
}

/** RFC 3339 in whole seconds, as metav1.Time is written. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
