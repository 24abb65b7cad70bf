import { Observable } from 'rxjs';
import { type KubeApi, type ResourceRef, describeError, resourcePath } from './api.ts';
import { type BackoffOptions, DEFAULT_BACKOFF, backoffDelay } from '../backoff.ts';
import { type KubeObject, type ResourceChange, objectKey, refOf } from './resource.ts';
import { fieldSelector as parseFieldFilter } from './selector.ts';
import { DEFAULT_STRIP, stripFields } from './store.ts';
import { nextTurn } from '../turns.ts';

/** One resource set to list and watch. */
export interface WatchSpec {
  /** The set's name, carried by every change as `resource`. */
  name: string;
  apiVersion: string;
  /** The plural, e.g. `ingresses`, `httproutes`, or a CRD's. */
  resource: string;
  /** Only this namespace; every namespace when undefined. */
  namespace?: string;
  /** Applied by the API server. */
  labelSelector?: string;
  /** Applied by the API server; it supports `metadata.name` and `metadata.namespace` for every resource. */
  serverFieldSelector?: string;
  /**
   * One object only: read with a GET of this name instead of a list, and watched
   * through a `metadata.name` field selector. Needs the `get` and `watch` verbs, not
   * `list`. While the object does not exist the watch starts from no
   * resourceVersion, so that the server sends it as ADDED once it is created.
   */
  named?: string;
  /** Applied here, after each list and watch event (src/k8s/selector.ts syntax: any field, JSONPath allowed). */
  fieldSelector?: string;
  /** Dotted paths removed before an object is passed on; DEFAULT_STRIP when undefined. */
  strip?: readonly string[];
}

export interface ListWatchOptions {
  /** Lists are read in pages of this many objects. */
  pageSize?: number;
  /** Each watch asks the API server to end it after a random time in this range (seconds), as client-go does. */
  watchTimeoutSeconds?: readonly [number, number];
  /**
   * How often the API server sends a bookmark on an idle watch that asked for them:
   * about once a minute (the watch cache's cadence). Default 60 s.
   */
  bookmarkIntervalMs?: number;
  /** Slack on top of every deadline the watchdog derives from the server's timing; default 30 s. */
  watchMarginMs?: number;
  /**
   * How fast the server's clock runs against ours: the bookmark cadence, the margin
   * and the watch's own timeout are multiplied by it. 1 (the default) for a real API
   * server; a test's server double may run its clock faster, e.g. 0.01.
   */
  timeScale?: number;
  /** Delays between retries after failures. */
  backoff?: BackoffOptions;
  /** A watch that ends sooner than this having delivered nothing counts as a failure and backs off. */
  minWatchMs?: number;
  random?: () => number;
  /** What the loop does, for debug logs and tests. */
  onDiagnostic?: (diagnostic: ListWatchDiagnostic) => void;
}

export type ListWatchDiagnostic =
  | { type: 'listed'; set: string; items: number; pages: number; resourceVersion: string }
  | { type: 'watching'; set: string; resourceVersion: string }
  | { type: 'watch-ended'; set: string; reason: WatchEnd['reason']; events: number; durationMs: number; message?: string }
  | { type: 'retry'; set: string; attempt: number; delayMs: number; message: string };

interface WatchEnd {
  /** closed: the server ended it; gone: 410, relist; silent: the watchdog found it dead; error: anything else. */
  reason: 'closed' | 'gone' | 'silent' | 'error';
  events: number;
  durationMs: number;
  message?: string;
}

/**
 * How the first list is passed on: one replace of this many objects, then an upsert
 * for each of the rest, holding the event loop at most SLICE_MS at a time.
 */
const FIRST_REPLACE = 200;
const SLICE_MS = 10;

export const LIST_WATCH_DEFAULTS = {
  pageSize: 500,
  watchTimeoutSeconds: [300, 600] as const,
  bookmarkIntervalMs: 60_000,
  watchMarginMs: 30_000,
  minWatchMs: 1_000,
};

interface KubeList {
  kind?: string;
  apiVersion?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
}

/**
 * One resource set as an observable of changes, the way an informer keeps it:
 *
 * - list (in pages) and emit the set as one `replace`, then `synced` after the first
 *   list; of a large first list, the objects past the first 200 follow the replace as
 *   `upsert`s, in slices of the event loop;
 * - watch from the list's resourceVersion, with bookmarks; each event is an
 *   `upsert` or a `delete`, and every event and bookmark advances the resourceVersion;
 * - when a watch ends, resume from the last resourceVersion, so nothing is missed and
 *   nothing is replayed;
 * - on 410 Gone (the history was compacted) list again: the `replace` lets the store
 *   drop what disappeared meanwhile, and objects it already holds at the same
 *   resourceVersion change nothing;
 * - on any other failure report a `problem` and retry after a jittered, growing delay;
 * - a watch that is dead (see `watchdogLimits`) is abandoned and resumed.
 *
 * The client-side field filter turns an object that stops matching into a `delete`.
 * Nothing errors: the observable runs until unsubscribed, which aborts the requests.
 */
export function listWatch(api: KubeApi, spec: WatchSpec, options: ListWatchOptions = {}): Observable<ResourceChange> {
  const pageSize = options.pageSize ?? LIST_WATCH_DEFAULTS.pageSize;
  const [minTimeout, maxTimeout] = options.watchTimeoutSeconds ?? LIST_WATCH_DEFAULTS.watchTimeoutSeconds;
  const scale = options.timeScale ?? 1;
  const bookmarkMs = (options.bookmarkIntervalMs ?? LIST_WATCH_DEFAULTS.bookmarkIntervalMs) * scale;
  const marginMs = (options.watchMarginMs ?? LIST_WATCH_DEFAULTS.watchMarginMs) * scale;
  const minWatchMs = options.minWatchMs ?? LIST_WATCH_DEFAULTS.minWatchMs;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const random = options.random ?? Math.random;
  const diagnose = options.onDiagnostic ?? (() => undefined);
  const strip = spec.strip ?? DEFAULT_STRIP;
  const ref: ResourceRef = { apiVersion: spec.apiVersion, resource: spec.resource, ...(spec.namespace !== undefined && { namespace: spec.namespace }) };
  const path = resourcePath(ref);
  const serverFields = [spec.serverFieldSelector, spec.named !== undefined ? `metadata.name=${spec.named}` : undefined].filter((f) => f).join(',');
  const selectors = {
    ...(spec.labelSelector && { labelSelector: spec.labelSelector }),
    ...(serverFields && { fieldSelector: serverFields }),
  };

  return new Observable<ResourceChange>((subscriber) => {
    const filter = parseFieldFilter(spec.fieldSelector);
    let stopped = false;
    let wake: (() => void) | undefined;
    let requestAbort = new AbortController();
    let watchAbort: AbortController | undefined;
    /** Keys of the objects passed on, so that one leaving the filter becomes a delete. */
    let known = new Set<string>();
    let resourceVersion = '';
    /** The server has sent this set a bookmark: from then on, silence longer than its cadence means trouble. */
    let bookmarks = false;

    const emit = (change: ResourceChange) => {
      if (!stopped) subscriber.next(change);
    };
    const problem = (message: string, object?: KubeObject) =>
      emit({ type: 'problem', resource: spec.name, source: `${spec.resource}${spec.namespace ? ` in ${spec.namespace}` : ''}`, message, ...(object && { object: refOf(object) }) });
    /** Whether the field filter passes an object; one it cannot be evaluated on does not, and is reported by name. */
    const passes = (object: KubeObject): boolean => {
      if (!filter.ok) return true;
      const verdict = filter.test(object);
      if (verdict.problem !== undefined) problem(`${object.kind ?? spec.resource} ${objectKey(object)}: ${verdict.problem}`, object);
      return verdict.match;
    };
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    const prepare = (object: KubeObject): KubeObject => stripFields(object, strip);

    const get = async (name: string): Promise<{ ok: true; items: KubeObject[]; resourceVersion: string; pages: number } | { ok: false; message: string; status?: number }> => {
      const result = await api.request<KubeObject>('GET', { ...ref, name }, { signal: requestAbort.signal });
      if (stopped) return { ok: false, message: 'stopped' };
      // Absent: nothing to hold, and no resourceVersion to watch from.
      if (!result.ok && result.status === 404) return { ok: true, items: [], resourceVersion: '', pages: 1 };
      if (!result.ok) return { ok: false, message: `get ${name} failed: ${result.status ? `HTTP ${result.status} ` : ''}${result.message}`, ...(result.status !== undefined && { status: result.status }) };
      const object = result.body;
      return { ok: true, items: [{ ...object, apiVersion: object.apiVersion ?? spec.apiVersion }], resourceVersion: object.metadata?.resourceVersion ?? '', pages: 1 };
    };

    const list = async (): Promise<{ ok: true; items: KubeObject[]; resourceVersion: string; pages: number } | { ok: false; message: string; status?: number }> => {
      if (spec.named !== undefined) return get(spec.named);
      const items: KubeObject[] = [];
      let next: string | undefined;
      let listRv = '';
      let pages = 0;
      do {
        const result = await api.request<KubeList>('GET', path, { query: { ...selectors, limit: pageSize, ...(next !== undefined && { continue: next }) }, signal: requestAbort.signal });
        if (stopped) return { ok: false, message: 'stopped' };
        if (!result.ok) {
          // An expired continue token: the snapshot is gone, start the list again.
          if (result.status === 410 && next !== undefined) {
            items.length = 0;
            next = undefined;
            pages = 0;
            continue;
          }
          return { ok: false, message: `list failed: ${result.status ? `HTTP ${result.status} ` : ''}${result.message}`, ...(result.status !== undefined && { status: result.status }) };
        }
        const body = result.body;
        if (pages === 0) listRv = body.metadata?.resourceVersion ?? '';
        // List items carry no kind and apiVersion; the list does.
        const kind = body.kind?.replace(/List$/, '');
        for (const item of body.items ?? []) items.push({ ...item, apiVersion: item.apiVersion ?? body.apiVersion ?? spec.apiVersion, ...((item.kind ?? kind) !== undefined && { kind: item.kind ?? kind }) });
        next = body.metadata?.continue || undefined;
        pages++;
      } while (next !== undefined);
      return { ok: true, items, resourceVersion: listRv, pages };
    };

    const onWatchEvent = (counter: { events: number; gone: boolean; error?: string }) => (type: string, raw: unknown) => {
      if (stopped) return;
      counter.events++;
      const object = raw as KubeObject | { code?: number; message?: string } | undefined;
      if (type === 'ERROR') {
        const status = object as { code?: number; message?: string } | undefined;
        if (status?.code === 410) counter.gone = true;
        else counter.error = `watch error: ${status?.code ?? ''} ${status?.message ?? JSON.stringify(raw)}`.trim();
        return;
      }
      const kube = object as KubeObject | undefined;
      if (!kube?.metadata) return;
      if (kube.metadata.resourceVersion) resourceVersion = kube.metadata.resourceVersion;
      if (type === 'BOOKMARK') {
        bookmarks = true;
        return;
      }
      const key = objectKey(kube);
      if (type === 'DELETED') {
        if (known.delete(key)) emit({ type: 'delete', resource: spec.name, object: prepare(kube) });
        return;
      }
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      if (!passes(kube)) {
        if (known.delete(key)) emit({ type: 'delete', resource: spec.name, object: prepare(kube) });
        return;
      }
      known.add(key);
      emit({ type: 'upsert', resource: spec.name, object: prepare(kube) });
    };

    const watchOnce = (): Promise<WatchEnd> =>
      new Promise<WatchEnd>((resolve) => {
        const started = Date.now();
        const counter = { events: 0, gone: false } as { events: number; gone: boolean; error?: string };
        const timeoutSeconds = Math.round(minTimeout + (maxTimeout - minTimeout) * random());
        let ended = false;
        let silence: NodeJS.Timeout | undefined;
        const limits = watchdogLimits({ timeoutSeconds, bookmarkMs, marginMs, scale });
        const finish = (reason: WatchEnd['reason'], message?: string) => {
          if (ended) return;
          ended = true;
          clearTimeout(silence);
          clearTimeout(overdue);
          watchAbort?.abort();
          watchAbort = undefined;
          resolve({ reason, events: counter.events, durationMs: Date.now() - started, ...(message !== undefined && { message }) });
        };
        // The watchdog: a dead connection stays silent; nothing arrives, not even its end.
        // A healthy idle watch is silent between bookmarks, and the server ends it at its timeout.
        const arm = () => {
          clearTimeout(silence);
          if (!bookmarks) return;
          silence = setTimeout(() => finish('silent', `no event or bookmark for ${limits.silenceMs} ms (the server bookmarks an idle watch every ${bookmarkMs} ms)`), limits.silenceMs);
          silence.unref();
        };
        const overdue = setTimeout(() => finish('silent', `the server did not end the watch at its timeout (${timeoutSeconds} s)`), limits.deadlineMs);
        overdue.unref();
        const handle = onWatchEvent(counter);
        const done = (err: unknown) => {
          const e = err as { statusCode?: number; name?: string } | null | undefined;
          if (counter.gone || e?.statusCode === 410) finish('gone');
          else if (e?.name === 'TimeoutError') finish('silent');
          else if (e?.statusCode !== undefined) finish('error', `watch failed: HTTP ${e.statusCode} ${describeError(err)}`);
          else if (err) finish('error', `watch failed: ${describeError(err)}`);
          else if (counter.error !== undefined) finish('error', counter.error);
          else finish('closed');
        };
        diagnose({ type: 'watching', set: spec.name, resourceVersion });
        arm();
        api
          .watch(
            path,
            { ...selectors, ...(resourceVersion !== '' && { resourceVersion }), allowWatchBookmarks: true, timeoutSeconds },
            (type, object) => {
              if (ended) return;
              handle(type, object);
              arm();
            },
            done,
            // The client's own inactivity timeout must not cut a healthy idle watch: the watchdog decides.
            limits.clientInactivityMs,
          )
          .then(
            (controller) => {
              if (stopped || ended) controller.abort();
              else watchAbort = controller;
            },
            (err: unknown) => finish('error', `watch failed: ${describeError(err)}`),
          );
      });

    /**
     * Lists the set and passes it on whole; says whether the set is now synced, and
     * what failed, if anything. In a function of its own, so that the list lives only
     * in its frame: the loop below waits in one watch for minutes, and a suspended async
     * function keeps what its locals last held, so a list read there would hold a
     * second copy of every object, beside the stores', until the next list.
     */
    const relist = async (synced: boolean): Promise<{ synced: boolean; failed?: string }> => {
      const listed = await list();
      if (stopped) return { synced };
      if (!listed.ok) {
        if (listed.status === 404 && !synced) {
          // The API does not serve this resource (a CRD not installed, say). Holding
          // every render back for it would stop the whole controller: count the set
          // as empty, say so, and keep trying; once it is served, its list arrives.
          problem(`${listed.message}: the API server does not serve ${spec.resource}; counted as empty until it does`);
          emit({ type: 'replace', resource: spec.name, objects: [] });
          emit({ type: 'synced', resource: spec.name });
          return { synced: true, failed: listed.message };
        }
        problem(listed.message);
        return { synced, failed: listed.message };
      }
      const passed = listed.items.filter(passes).map(prepare);
      known = new Set(passed.map(objectKey));
      resourceVersion = listed.resourceVersion;
      diagnose({ type: 'listed', set: spec.name, items: listed.items.length, pages: listed.pages, resourceVersion });
      if (synced) {
        emit({ type: 'replace', resource: spec.name, objects: passed });
        return { synced: true };
      }
      // The first list fills an empty set, so a replace of its first objects and an
      // upsert for each of the rest say the same. Those go on in slices, with a turn of
      // the event loop between them: as one replace, 10k EndpointSlices held the loop for
      // about a second while the receivers took them (sealing, indexing, posting them to
      // the render thread), longer than a liveness probe waits for /healthz.
      emit({ type: 'replace', resource: spec.name, objects: passed.slice(0, FIRST_REPLACE) });
      let since = performance.now();
      for (let i = FIRST_REPLACE; i < passed.length; i++) {
        if (performance.now() - since >= SLICE_MS) {
          await nextTurn();
          if (stopped) return { synced };
          since = performance.now();
        }
        emit({ type: 'upsert', resource: spec.name, object: passed[i]! });
      }
      emit({ type: 'synced', resource: spec.name });
      return { synced: true };
    };

    const run = async () => {
      let attempt = 0;
      let synced = false;
      const retry = async (message: string) => {
        const delayMs = backoffDelay(attempt, backoff, random);
        diagnose({ type: 'retry', set: spec.name, attempt, delayMs, message });
        attempt++;
        await sleep(delayMs);
      };
      while (!stopped) {
        let listedNow = false;
        if (resourceVersion === '') {
          const listed = await relist(synced);
          if (stopped) return;
          synced = listed.synced;
          if (listed.failed !== undefined) {
            await retry(listed.failed);
            continue;
          }
          attempt = 0;
          listedNow = true;
        }
        const end = await watchOnce();
        if (stopped) return;
        diagnose({ type: 'watch-ended', set: spec.name, reason: end.reason, events: end.events, durationMs: end.durationMs, ...(end.message !== undefined && { message: end.message }) });
        const productive = end.events > 0 || end.durationMs >= minWatchMs;
        if (productive) attempt = 0;
        switch (end.reason) {
          case 'gone':
            resourceVersion = '';
            // A 410 straight after a list would loop: back off then.
            if (listedNow && end.events <= 1) await retry('the watch was refused with 410 Gone right after a list');
            break;
          case 'silent':
            break;
          case 'closed':
            if (!productive) await retry('the API server ended the watch at once');
            break;
          case 'error':
            problem(end.message ?? 'watch failed');
            await retry(end.message ?? 'watch failed');
            break;
        }
      }
    };

    run().catch((err: unknown) => problem(`list/watch loop failed: ${describeError(err)}`));

    return () => {
      stopped = true;
      wake?.();
      requestAbort.abort();
      requestAbort = new AbortController();
      watchAbort?.abort();
    };
  });
}

/**
 * When the watchdog gives up on a watch. A real API server bookmarks an idle watch
 * about once a minute and ends it at the timeoutSeconds it asked for, so:
 * - once the set has had a bookmark, silence longer than the cadence plus the margin
 *   means the connection is dead;
 * - in any case, a watch still open past its timeout plus the margin is dead (the
 *   only bound for a server that sends no bookmarks).
 * The client library's inactivity timeout is pushed past both.
 */
export function watchdogLimits(t: { timeoutSeconds: number; bookmarkMs: number; marginMs: number; scale: number }): { silenceMs: number; deadlineMs: number; clientInactivityMs: number } {
  const deadlineMs = t.timeoutSeconds * 1000 * t.scale + t.marginMs;
  return { silenceMs: t.bookmarkMs + t.marginMs, deadlineMs, clientInactivityMs: deadlineMs + t.marginMs };
}
