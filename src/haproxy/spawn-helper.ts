/**
 * A small process, started while the controller is still small, that starts `haproxy -c`
 * on the controller's behalf. Starting a child from the controller itself forks it: at
 * 10k Ingresses that is a process of several hundred MiB whose page tables are copied
 * while its event loop waits (up to 140 ms on a busy machine). Here the controller only
 * sends a message.
 *
 * It is supervised: if it dies, what it was running ends as `spawn` (could not run, so
 * the validation is retried) and the next request starts another. A helper that does
 * not answer within the request's own timeout and a grace period is killed.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { errorMessage } from '../errors.ts';
import { killGroup, type ChildOutcome, type ChildRequest, type ChildRunner } from './child-run.ts';

export type HelperRequest = { type: 'run'; id: number; request: ChildRequest } | { type: 'abort'; id: number };
/** A child started (its process id), or how it ended. */
export type HelperReply = { id: number; pid: number } | { id: number; outcome: ChildOutcome };

const PROGRAM = new URL(import.meta.url.endsWith('.ts') ? './spawn-helper-process.ts' : './spawn-helper-process.js', import.meta.url);

/**
 * Its heap holds a few requests and their output: a small young generation is enough.
 * No old-space size here: the percentage the image's NODE_OPTIONS gives would win over it.
 */
const HELPER_NODE_FLAGS = ['--max-semi-space-size=1'];

export interface SpawnHelperOptions {
  /** How long past a request's own timeout the helper may take to answer before it is killed. */
  graceMs?: number;
  /** Told when a helper ended on its own (not by stop()), with why. */
  onExit?: (cause: string) => void;
}

interface Pending {
  settle: (outcome: ChildOutcome) => void;
  /** The child the helper started for it, killed if the helper dies first. */
  pid?: number;
}

interface Live {
  child: ChildProcess;
  pending: Map<number, Pending>;
}

export class SpawnHelper {
  private readonly graceMs: number;
  private readonly onExit: ((cause: string) => void) | undefined;
  private live: Live | undefined;
  private nextId = 0;
  private stopped = false;
  private started = 0;

  constructor(options: SpawnHelperOptions = {}) {
    this.graceMs = options.graceMs ?? 5_000;
    this.onExit = options.onExit;
  }

  /** Starts the helper now (call it early, while this process is small); run() would otherwise start it. */
  start(): void {
    this.stopped = false;
    this.ensure();
  }

  /** The helper's process id, while one runs. */
  get pid(): number | undefined {
    return this.live?.child.pid;
  }

  /** How many helpers were started so far (more than one means one died and was replaced). */
  get starts(): number {
    return this.started;
  }

  readonly run: ChildRunner = (request, signal) => {
    if (signal?.aborted) return Promise.resolve({ kind: 'aborted', message: 'aborted' });
    let live: Live;
    try {
      live = this.ensure();
    } catch (err) {
      return Promise.resolve({ kind: 'spawn', message: `could not start the spawn helper: ${errorMessage(err)}` });
    }
    const id = ++this.nextId;
    return new Promise<ChildOutcome>((resolve) => {
      const onAbort = () => this.send(live, { type: 'abort', id });
      const guard = setTimeout(() => {
        // It is stuck: everything it runs ends, and the next request gets another.
        settle({ kind: 'timeout', message: `the spawn helper did not answer within ${request.timeoutMs + this.graceMs} ms` });
        live.child.kill('SIGKILL');
      }, request.timeoutMs + this.graceMs);
      const settle = (outcome: ChildOutcome) => {
        if (!live.pending.delete(id)) return;
        clearTimeout(guard);
        signal?.removeEventListener('abort', onAbort);
        this.reference(live);
        resolve(outcome);
      };
      live.pending.set(id, { settle });
      this.reference(live);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.send(live, { type: 'run', id, request }, (err) => settle({ kind: 'spawn', message: `could not reach the spawn helper: ${err.message}` }));
    });
  };

  /** Stops the helper; what it runs is killed (it does so when its channel closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    const live = this.live;
    if (!live) return;
    this.live = undefined;
    for (const p of [...live.pending.values()]) p.settle({ kind: 'aborted', message: 'the controller is stopping' });
    if (live.child.exitCode !== null || live.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => live.child.once('exit', () => resolve()));
    live.child.disconnect();
    const timer = setTimeout(() => live.child.kill('SIGKILL'), 2_000);
    await exited;
    clearTimeout(timer);
  }

  private ensure(): Live {
    if (this.live) return this.live;
    const child = fork(PROGRAM, [], { execArgv: HELPER_NODE_FLAGS, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
    this.started++;
    const live: Live = { child, pending: new Map() };
    this.live = live;
    let over = false;
    const ended = (cause: string) => {
      if (over) return;
      over = true;
      if (this.live === live) this.live = undefined;
      const pending = [...live.pending.values()];
      for (const p of pending) {
        // Its children lead their own groups and would outlive it.
        killGroup(p.pid);
        p.settle({ kind: 'spawn', message: `the spawn helper ${cause} before haproxy -c finished` });
      }
      if (!this.stopped) this.onExit?.(`the spawn helper ${cause}`);
    };
    child.once('error', (err) => {
      if (child.pid === undefined) ended(`could not be started (${err.message})`);
    });
    child.once('exit', (code, signal) => ended(signal ? `was killed by ${signal}` : `exited with status ${code}`));
    child.on('message', (message: HelperReply) => {
      const pending = live.pending.get(message.id);
      if (!pending) return;
      if ('pid' in message) pending.pid = message.pid;
      else pending.settle(message.outcome);
    });
    this.reference(live);
    return live;
  }

  private send(live: Live, message: HelperRequest, failed?: (err: Error) => void): void {
    if (!live.child.connected) {
      failed?.(new Error('its channel is closed'));
      return;
    }
    live.child.send(message, (err) => {
      if (err) failed?.(err);
    });
  }

  /** An idle helper must not keep this process alive; one with work must. */
  private reference(live: Live): void {
    const busy = live.pending.size > 0;
    if (busy) {
      live.child.ref();
      live.child.channel?.ref();
    } else {
      live.child.unref();
      live.child.channel?.unref();
    }
  }
}
