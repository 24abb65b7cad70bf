import { Worker } from 'node:worker_threads';
import type { ParsedManifests } from './manifests.ts';
import type { ParseReply, ParseRequest } from './parse-thread.ts';
import { fromWireSteps } from './parse-wire.ts';
import { runInTurns } from '../turns.ts';

/** What parses a whole manifest file away from the main thread (folder-source.ts falls back to parsing in slices when it fails). */
export interface ManifestParser {
  parse(file: string, text: string, maxObjectBytes: number): Promise<ParsedManifests>;
  close(): Promise<void>;
}

const THREAD = new URL(import.meta.url.endsWith('.ts') ? './parse-thread.ts' : './parse-thread.js', import.meta.url);

/** After this long without a file to parse, the thread stops: it is for loads, and holds memory while it lives. */
const IDLE_MS = 5_000;

/** A young generation this small keeps the thread's memory low; what it parses is garbage as soon as it is sent. */
const YOUNG_GENERATION_MB = 8;

/**
 * Manifest files parsed in a worker thread, started when a file comes and stopped when
 * none has come for `idleMs`. A thread that fails or stops takes the files it held with
 * it (their promises reject) and the next file starts another.
 */
export class ParseWorker implements ManifestParser {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve(parsed: ParsedManifests): void; reject(err: Error): void }>();
  private nextId = 0;
  private idle: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly idleMs: number;
  private readonly thread: URL;

  /** `thread`: the module the thread runs, parse-thread.ts unless a test gives another. */
  constructor(options: { idleMs?: number; thread?: URL } = {}) {
    this.idleMs = options.idleMs ?? IDLE_MS;
    this.thread = options.thread ?? THREAD;
  }

  /** Whether a thread is running now. */
  get running(): boolean {
    return this.worker !== undefined;
  }

  parse(file: string, text: string, maxObjectBytes: number): Promise<ParsedManifests> {
    if (this.closed) return Promise.reject(new Error('the parse thread was closed'));
    if (this.idle) clearTimeout(this.idle);
    this.idle = undefined;
    const worker = this.worker ?? this.start();
    const id = ++this.nextId;
    return new Promise<ParsedManifests>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, file, text, maxObjectBytes } satisfies ParseRequest);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idle) clearTimeout(this.idle);
    const worker = this.worker;
    this.stopped(worker, 'the parse thread was closed');
    if (worker) await worker.terminate();
  }

  private start(): Worker {
    const worker = new Worker(this.thread, { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
    // Parsing files is no reason to keep the process alive.
    worker.unref();
    worker.on('message', (reply: ParseReply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      // Read document by document with turns of the event loop between: one file of thirty
      // thousand objects is some 150 ms of JSON.parse. A reply that cannot be read fails its
      // file, which is then parsed on this thread (folder-source.ts).
      runInTurns(fromWireSteps(reply.parsed)).then(
        (parsed) => waiting?.resolve(parsed),
        (err: unknown) => waiting?.reject(new Error(`the parse thread's reply could not be read: ${(err as Error).message}`)),
      );
      if (this.pending.size === 0 && this.worker === worker) this.idleLater(worker);
    });
    worker.on('error', (err) => this.stopped(worker, `the parse thread failed: ${err.message}`));
    worker.on('exit', (code) => this.stopped(worker, `the parse thread stopped (exit code ${code})`));
    this.worker = worker;
    return worker;
  }

  private idleLater(worker: Worker): void {
    this.idle = setTimeout(() => {
      this.idle = undefined;
      if (this.worker !== worker || this.pending.size > 0) return;
      this.worker = undefined;
      void worker.terminate();
    }, this.idleMs);
    this.idle.unref();
  }

  /** The thread is gone: what it held fails, and the next file starts another. */
  private stopped(worker: Worker | undefined, why: string): void {
    if (worker === undefined || this.worker !== worker) return;
    this.worker = undefined;
    for (const [id, waiting] of this.pending) {
      this.pending.delete(id);
      waiting.reject(new Error(why));
    }
  }
}
