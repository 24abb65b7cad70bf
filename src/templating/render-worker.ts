/**
 * Rendering off the event loop. A full render of a large cluster takes hundreds of
 * milliseconds of synchronous template code (and the structure check after it more),
 * during which a process that rendered on its main thread would answer nothing: not
 * /healthz, not a watch, not the runtime API. So renders run in a worker thread that
 * keeps its own copy of the watched sets: every change the main thread's stores take
 * is passed on (in order, in batches), and a render asks the worker to render what it
 * holds, which is exactly what the main thread held when it asked.
 *
 * Latest wins for real: asking for a render, or abandoning one (unsubscribing),
 * moves a shared slot that the worker reads at every lookup and snippet, so an
 * unfinished render stops within one lookup instead of running on for nothing.
 *
 * A worker that dies (out of memory, a bug) fails the render it was running, and the
 * next render starts a new worker, filled from the main thread's sets.
 */
import { Worker } from 'node:worker_threads';
import type { ThreadHeap, ValidationProblem } from '../events.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import type { ResourceView, StoreOptions } from '../k8s/store.ts';
import type { RenderResult, TemplateSet } from './engine.ts';
import type { FromThread, RenderThreadData, ToThread } from './render-thread.ts';
import { RenderDeltaReceiver } from './render-delta.ts';
import { nextTurn } from '../turns.ts';

export interface RenderWorkerOptions {
  templates: TemplateSet;
  sets: readonly (StoreOptions & { name: string })[];
  values: Readonly<Record<string, unknown>>;
  timeoutMs: number;
  /** The worker's own V8 old-generation cap, where no process-wide cap is set (which wins). */
  maxOldGenerationSizeMb?: number;
  /** Changes waiting are sent once this many are queued (otherwise on the next turn of the event loop). */
  batch?: number;
}

/** `statusesDigest`: equal for renders that declared equal statuses (render-delta.ts). */
export type WorkerRender = { ok: true; result: RenderResult; statusesDigest: string | undefined; structure: ValidationProblem[]; durationMs: number; heap: ThreadHeap } | { ok: false; cancelled: true } | { ok: false; cancelled: false; message: string };

/**
 * Young generation of the worker, in MiB. A worker gets 192 by default, which a render
 * fills with garbage before any is collected: that is resident memory for nothing.
 * The old generation follows the process's cap (`--max-old-space-size`, or the
 * percentage of the container's limit), which V8 applies to each thread on its own.
 * A `--max-semi-space-size` in NODE_OPTIONS bounds this too, as V8 flags hold for
 * every thread: the image's 4 leaves the worker 8 MiB. Semi-spaces of 8 or 16 MiB for
 * both threads made renders at 10k no faster (1.0–1.4 s either way).
 */
const YOUNG_GENERATION_MB = 32;

const THREAD = new URL(import.meta.url.endsWith('.ts') ? './render-thread.ts' : './render-thread.js', import.meta.url);

interface Live {
  worker: Worker;
  ready: Promise<void>;
  /** Set when it stopped; renders then fail and the next one starts another. */
  dead: string | undefined;
}

export class RenderWorker {
  private readonly options: RenderWorkerOptions;
  private readonly current = new Int32Array(new SharedArrayBuffer(4));
  private live: Live | undefined;
  /** The worker lost what it held (it died): the next render fills a new one from the main thread's sets first. */
  private needsFill = false;
  /** While a fill is under way, changes wait behind it. */
  private filling: Promise<void> | undefined;
  private queued: ResourceChange[] = [];
  /** Counts fills and resets: a fill under way stops when another starts or the stores are reset. */
  private fills = 0;
  private flushScheduled = false;
  private nextId = 0;
  private readonly waiting = new Map<number, (outcome: WorkerRender) => void>();
  private closed = false;

  /** Starts the worker at once: it takes the changes as they come, before the first render. */
  constructor(options: RenderWorkerOptions) {
    this.options = options;
    this.start();
  }

  /**
   * Empties the worker's copy: the main thread's stores start again from nothing (a
   * graph rebuilt after a failure lists everything again).
   */
  reset(): void {
    this.queued = [];
    this.filling = undefined;
    this.fills++;
    if (this.live && this.live.dead === undefined) {
      this.needsFill = false;
      this.live.worker.postMessage({ type: 'reset' } satisfies ToThread);
    }
  }

  /** Takes one change the main thread's stores took; the worker's copy follows in order. */
  apply(change: ResourceChange): void {
    // A worker that will be filled from the stores needs none of what led there.
    if (this.needsFill || change.type === 'problem' || this.closed) return;
    this.queued.push(change);
    if (this.queued.length >= (this.options.batch ?? 500)) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * Renders what the worker holds, which is what `resources` (the main thread's sets)
   * hold now. Aborting the signal stops the render at its next lookup.
   */
  async render(resources: ReadonlyMap<string, ResourceView>, signal?: AbortSignal): Promise<WorkerRender> {
    if (this.closed) return { ok: false, cancelled: false, message: 'the render worker was closed' };
    const id = ++this.nextId;
    // Any render still running is superseded from this moment.
    Atomics.store(this.current, 0, id);
    const abandon = () => {
      if (Atomics.load(this.current, 0) === id) Atomics.store(this.current, 0, 0);
    };
    signal?.addEventListener('abort', abandon, { once: true });
    const live = this.start();
    const outcome = new Promise<WorkerRender>((resolve) => this.waiting.set(id, resolve));
    try {
      if (this.needsFill) this.filling = this.fill(live, resources);
      await this.filling;
      this.flush();
      await live.ready;
      if (live.dead !== undefined) return { ok: false, cancelled: false, message: live.dead };
      live.worker.postMessage({ type: 'render', id } satisfies ToThread);
      return await outcome;
    } catch (err) {
      return { ok: false, cancelled: false, message: `the render worker could not start: ${(err as Error).message}` };
    } finally {
      this.waiting.delete(id);
      signal?.removeEventListener('abort', abandon);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    Atomics.store(this.current, 0, 0);
    const live = this.live;
    this.live = undefined;
    if (live) await live.worker.terminate();
  }

  private start(): Live {
    if (this.live && this.live.dead === undefined) return this.live;
    const data: RenderThreadData = {
      templates: this.options.templates,
      sets: this.options.sets,
      values: this.options.values,
      timeoutMs: this.options.timeoutMs,
      current: this.current.buffer as SharedArrayBuffer,
    };
    const worker = new Worker(THREAD, {
      workerData: data,
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB, ...(this.options.maxOldGenerationSizeMb !== undefined && { maxOldGenerationSizeMb: this.options.maxOldGenerationSizeMb }) },
    });
    // A worker on its own must not keep the process alive.
    worker.unref();
    let ready!: () => void;
    let failed!: (err: Error) => void;
    const live: Live = { worker, ready: new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject))), dead: undefined };
    const die = (why: string) => {
      if (live.dead !== undefined) return;
      live.dead = why;
      failed(new Error(why));
      if (this.live === live) this.needsFill = true;
      // Whatever it was rendering will not come back.
      for (const [id, resolve] of this.waiting) {
        this.waiting.delete(id);
        resolve({ ok: false, cancelled: false, message: why });
      }
    };
    // What this thread sent of its statuses, server sets and map entries, put together again.
    const received = new RenderDeltaReceiver();
    // Renders are taken in the order they came, the one before read whole (a large one takes a few turns).
    let taking = Promise.resolve();
    // Nobody may be waiting on `ready` when the worker dies at once.
    live.ready.catch(() => undefined);
    worker.on('message', (message: FromThread) => {
      switch (message.type) {
        case 'ready':
          return ready();
        case 'failed':
          return die(`the render worker could not compile the templates: ${message.message}`);
        case 'rendered': {
          // Every render the thread sent counts, awaited or not: the next one says what changed since it.
          const { delta } = message;
          const shipped = message.result;
          taking = taking.then(async () => {
            const result = shipped.ok && delta ? await received.receive(shipped, delta) : shipped;
            this.waiting.get(message.id)?.({ ok: true, result, statusesDigest: delta?.statuses.digest, structure: message.structure, durationMs: message.durationMs, heap: message.heap });
          });
          taking = taking.catch((err: unknown) => {
            // What this thread sends next would build on what could not be read: a new thread starts empty.
            die(`the render worker sent a render that cannot be read: ${(err as Error).message}`);
            void worker.terminate();
          });
          return;
        }
        case 'cancelled':
          taking = taking.then(() => this.waiting.get(message.id)?.({ ok: false, cancelled: true }));
          return;
      }
    });
    worker.on('error', (err) => die(`the render worker failed: ${err.message}`));
    worker.on('exit', (code) => die(`the render worker stopped (exit code ${code})`));
    // A replacement starts empty: it is filled before it renders.
    if (this.live) this.needsFill = true;
    this.live = live;
    this.queued = [];
    return live;
  }

  /**
   * Fills a new worker with everything the main thread's sets hold now, a slice at a
   * time with a turn of the event loop between slices: copying ten thousand objects
   * to another thread at once would block as long as a render. Changes that come
   * meanwhile wait in the queue and follow the fill.
   */
  private async fill(live: Live, resources: ReadonlyMap<string, ResourceView>): Promise<void> {
    this.needsFill = false;
    this.queued = [];
    const fill = ++this.fills;
    const snapshot = [...resources].map(([name, view]) => ({ name, objects: view.list() }));
    const slice = this.options.batch ?? 500;
    for (const { name, objects } of snapshot) {
      for (let i = 0; i < objects.length; i += slice) {
        if (fill !== this.fills || live.dead !== undefined) return;
        const changes = objects.slice(i, i + slice).map((object): ResourceChange => ({ type: 'upsert', resource: name, object }));
        live.worker.postMessage({ type: 'changes', changes } satisfies ToThread);
        await nextTurn();
      }
    }
    if (fill === this.fills) this.filling = undefined;
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.filling || this.queued.length === 0 || !this.live || this.live.dead !== undefined) return;
    const changes = this.queued;
    this.queued = [];
    this.live.worker.postMessage({ type: 'changes', changes } satisfies ToThread);
  }
}
