/**
 * The render worker thread (see render-worker.ts): its own copy of the watched sets,
 * its own template realm, the templates compiled once, and renders on request. A
 * render is checked for cancellation at every lookup into the sets and at every
 * snippet: the main thread moves the shared `current` slot on when a newer render is
 * asked for or the running one is abandoned, and this render then stops at its next
 * lookup instead of running to its end.
 */
import { platform, setPriority } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import type { ThreadHeap, ValidationProblem } from '../events.ts';
import { StructureMemo, checkStructure } from '../haproxy/structure.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import { type ResourceView, type StoreOptions, Store } from '../k8s/store.ts';
import { abortRender } from './abort.ts';
import { type RenderResult, type TemplateSet, compileTemplates, renderTemplates } from './engine.ts';
import { CallCache, type EntriesCall, type OnceCall, type ServerCall } from './call-cache.ts';
import { type RenderDelta, RenderDeltaSender } from './render-delta.ts';

export interface RenderThreadData {
  templates: TemplateSet;
  sets: readonly (StoreOptions & { name: string })[];
  values: Readonly<Record<string, unknown>>;
  timeoutMs: number;
  /** Int32Array over a SharedArrayBuffer: [0] is the id of the render that may run. */
  current: SharedArrayBuffer;
}

export type ToThread = { type: 'changes'; changes: ResourceChange[] } | { type: 'render'; id: number } | { type: 'reset' };

export type FromThread =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  /** A render's statuses, server sets and map entries go as `delta`: what changed since the last render sent (render-delta.ts). */
  | { type: 'rendered'; id: number; result: RenderResult; delta: RenderDelta | undefined; structure: ValidationProblem[]; durationMs: number; heap: ThreadHeap }
  | { type: 'cancelled'; id: number };

const SUPERSEDED = 'superseded by a newer render';

/**
 * The nice value the render thread runs at: a full render is hundreds of milliseconds
 * of work that nothing waits on to the millisecond, while the event loop answers
 * /healthz, takes watch events and applies fast-path changes. When the cores are busy
 * (a render, `haproxy -c`, a reload at once), the kernel then gives the event loop the
 * CPU first; an idle core still runs the render at full speed.
 */
const RENDER_NICE = 5;

/**
 * Lowers this thread's priority. On Linux a nice value belongs to a thread, so this one
 * moves alone; elsewhere it belongs to the process, whose other threads must keep theirs.
 */
function lowerPriority(): void {
  if (platform() !== 'linux') return;
  try {
    setPriority(RENDER_NICE);
  } catch {
    // Refused (a sandbox without setpriority): the render runs at the event loop's priority.
  }
}

function main(): void {
  lowerPriority();
  const port = parentPort!;
  const data = workerData as RenderThreadData;
  const current = new Int32Array(data.current);
  const compiled = compileTemplates(data.templates);
  if (!compiled.ok) {
    port.postMessage({ type: 'failed', message: compiled.errors.map((e) => `${e.template}: ${e.message}`).join('; ') } satisfies FromThread);
    return;
  }
  const stores = new Map<string, Store>();
  // Server lines, readings of objects and kept h.once values (the Ingress model) of the last render,
  // reused where nothing they read changed.
  let serverCache = new CallCache<ServerCall>();
  let entriesCache = new CallCache<EntriesCall>();
  let onceCache = new CallCache<OnceCall>();
  const empty = () => {
    for (const s of data.sets) stores.set(s.name, new Store(s.name, s));
    serverCache = new CallCache();
    entriesCache = new CallCache();
    onceCache = new CallCache();
  };
  empty();
  let running = 0;
  const sent = new RenderDeltaSender();
  // What the structure check found in the sections of the last render: the next one reads only those that changed.
  const structureMemo = new StructureMemo();
  const check = () => {
    if (Atomics.load(current, 0) !== running) abortRender(SUPERSEDED);
  };
  // What templates see: the sets, each lookup first checking that this render still counts.
  const views: Record<string, ResourceView> = {};
  for (const { name } of data.sets) {
    const store = () => stores.get(name)!;
    views[name] = {
      list: () => (check(), store().list()),
      get: (...keys) => (check(), store().get(...keys)),
      first: (...keys) => (check(), store().first(...keys)),
      get size() {
        return store().size;
      },
    };
  }
  port.on('message', (message: ToThread) => {
    if (message.type === 'reset') return empty();
    if (message.type === 'changes') {
      // The main thread's stores report problems; this copy only follows them.
      for (const change of message.changes) {
        if (change.type === 'problem') continue;
        stores.get(change.resource)?.update(change);
      }
      return;
    }
    running = message.id;
    if (Atomics.load(current, 0) !== running) {
      port.postMessage({ type: 'cancelled', id: running } satisfies FromThread);
      return;
    }
    const started = performance.now();
    const result = renderTemplates(compiled.templates, { resources: views, values: data.values }, { timeoutMs: data.timeoutMs, serverCache, entriesCache, onceCache });
    if (Atomics.load(current, 0) !== running) {
      port.postMessage({ type: 'cancelled', id: running } satisfies FromThread);
      return;
    }
    const structure = result.ok ? checkStructure(result.config, structureMemo) : [];
    const shipped = result.ok ? sent.ship(result) : { result, delta: undefined };
    const durationMs = performance.now() - started;
    const stats = getHeapStatistics();
    const heap = { usedBytes: stats.used_heap_size, totalBytes: stats.total_heap_size, limitBytes: stats.heap_size_limit };
    port.postMessage({ type: 'rendered', id: running, result: shipped.result, delta: shipped.delta, structure, durationMs, heap } satisfies FromThread);
  });
  port.postMessage({ type: 'ready' } satisfies FromThread);
}

main();
