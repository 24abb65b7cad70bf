/**
 * Records what goes into a graph (src/replay/format.ts) while it runs. The graph is never
 * held back: entries are written through a buffered stream, and recording stops (with
 * an `end` entry and a log line) when the file reaches its cap or the disk falls behind.
 */
import { createWriteStream } from 'node:fs';
import { Observable, type SchedulerAction, type SchedulerLike, type Subscription, asyncScheduler } from 'rxjs';
import type { ControllerEvent } from '../events.ts';
import { errorMessage } from '../errors.ts';
import type { GraphDeps, GraphSettings } from '../../streams/graph.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { type Entry, FORMAT, type Header, OPTIONAL_INPUTS, type OptionalInput, type StreamDep, VERSION, type ValueDep, isRecord } from './format.ts';
import { scrubChange, scrubConfig, scrubStrings, scrubText } from './scrub.ts';
import { timelineEvent } from './timeline.ts';
import { isSteps } from '../steps.ts';

export type RecordingLog = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface SessionOptions {
  file: string;
  /** The file's cap: the entry that would pass it is not written, the recording ends there. */
  maxBytes: number;
  /** Blanks out the values of watched Secrets (the observer's scrubber). */
  scrub: (text: string) => string;
  log: RecordingLog;
  /** Written but not yet on disk, at most; beyond it recording stops rather than hold memory. */
  maxPendingBytes?: number;
  clock?: () => number;
}

/** Room kept under the cap for the `end` entry. */
const END_ROOM = 256;
const HASH = /^[0-9a-f]{64}$/;

/** One recording: one file, one graph run, from its first subscription. */
export class RecordingSession {
  private stream: ReturnType<typeof createWriteStream> | undefined;
  private bytes = 0;
  private t0 = 0;
  private last = 0;
  private state: 'idle' | 'recording' | 'ended' = 'idle';
  private happening: number | undefined;
  private readonly configs = new Set<string>();
  private readonly clock: () => number;
  private readonly maxPending: number;
  /** Settles when the file is closed (at once if it was never opened). */
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  private readonly options: SessionOptions;

  constructor(options: SessionOptions) {
    this.options = options;
    this.clock = options.clock ?? Date.now;
    this.maxPending = options.maxPendingBytes ?? 4 * 1024 * 1024;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  get file(): string {
    return this.options.file;
  }

  /** Blanks out the values of watched Secrets. */
  get scrub(): (text: string) => string {
    return this.options.scrub;
  }

  get active(): boolean {
    return this.state === 'recording';
  }

  /** Whether this session may record a graph: only the first graph that asks does. */
  claim(): boolean {
    return this.state === 'idle';
  }

  begin(settings: GraphSettings, deps: GraphDeps): void {
    if (this.state !== 'idle') return;
    this.state = 'recording';
    this.t0 = this.clock();
    const stream = createWriteStream(this.options.file, { flags: 'w', mode: 0o600 });
    this.stream = stream;
    stream.on('error', (err) => {
      this.options.log('error', `recording to ${this.options.file} stopped: ${errorMessage(err)}`);
      this.state = 'ended';
      stream.destroy();
    });
    stream.on('close', () => this.resolveClosed());
    const header: Header = { k: 'header', format: FORMAT, version: VERSION, startedAt: new Date(this.t0).toISOString(), settings: scrubStrings(settings, this.options.scrub), inputs: inputsOf(deps) };
    this.line(JSON.stringify(header));
    this.options.log('info', `recording the graph's inputs to ${this.options.file} (at most ${this.options.maxBytes} bytes)`);
  }

  /** Ends the recording with its reason; later writes are dropped. */
  end(reason: string): void {
    if (this.state === 'idle') {
      this.state = 'ended';
      this.resolveClosed();
      return;
    }
    if (this.state !== 'recording') return;
    this.state = 'ended';
    // Within the room kept under the cap.
    this.stream!.end(`${JSON.stringify({ t: this.now(), k: 'end', reason: reason.slice(0, 160) })}\n`);
    this.options.log('info', `recording to ${this.options.file} stopped: ${reason}`);
  }

  /**
   * Milliseconds since the recording began: while the graph handles something that
   * happened (a notification, a timer's run), the time it happened, so that what the
   * graph reads of the clock, and the times of its events, are those a replay sees.
   */
  now(): number {
    if (this.happening !== undefined) return this.happening;
    // The wall clock may step back; a recording's times never do.
    this.last = Math.max(this.last, this.clock() - this.t0);
    return this.last;
  }

  /** The graph's clock: the recording's time, on the wall clock's scale. */
  clockNow(): number {
    return this.t0 + this.now();
  }

  /** Runs what the graph does about a happening written at `t` (undefined: none written) at that time. */
  during(t: number | undefined, handle: () => void): void {
    // A happening inside another (an answer given during a subscription) keeps the outer one's time.
    if (t === undefined || this.happening !== undefined || !this.active) return handle();
    this.happening = t;
    try {
      handle();
    } finally {
      this.happening = undefined;
    }
  }

  subscribe(dep: StreamDep, n: number, key?: string): void {
    this.entry(() => ({ t: this.now(), k: 'subscribe', dep, n, ...(key !== undefined && { key }) }));
  }

  /** Writes a notification; its time, unless nothing was written. */
  notify(dep: StreamDep, n: number, kind: 'next' | 'error' | 'complete', sync: boolean, payload?: unknown): number | undefined {
    let at: number | undefined;
    this.entry(() => {
      const t = this.now();
      at = t;
      const base = { t, dep, n, ...(sync && { sync: true as const }) };
      if (kind === 'next') return { ...base, k: 'next', v: payload ?? null };
      if (kind === 'error') return { ...base, k: 'error', message: errorMessage(payload) };
      return { ...base, k: 'complete' };
    });
    return this.active ? at : undefined;
  }

  value(dep: ValueDep, n: number, v: unknown): void {
    this.entry(() => ({ t: this.now(), k: 'value', dep, n, v: v ?? null }));
  }

  /** Writes a run of the scheduler's n-th action; its time, unless nothing was written. */
  tick(n: number): number | undefined {
    const t = this.now();
    this.entry(() => ({ t, k: 'tick', n }));
    return this.active ? t : undefined;
  }

  event(event: ControllerEvent): void {
    this.entry(() => ({ t: this.now(), k: 'event', ...timelineEvent(event) }));
  }

  private entry(make: () => Entry): void {
    if (!this.active) return;
    try {
      this.line(this.encode(make()));
    } catch (err) {
      // A value that cannot be written must not reach the graph as an error.
      this.end(`an entry could not be written: ${errorMessage(err)}`);
    }
  }

  /** JSON with configurations written once as `config` entries and referred to by hash, every string scrubbed. */
  private encode(entry: Entry): string {
    const scrub = this.options.scrub;
    return JSON.stringify(entry, (key, value: unknown) => {
      if (typeof value === 'string') return key === 'hash' || key === '$config' ? value : scrubText(value, scrub);
      if (isConfig(value)) {
        if (!this.configs.has(value.hash)) {
          this.configs.add(value.hash);
          this.line(JSON.stringify({ t: entry.t, k: 'config', hash: value.hash, config: scrubConfig(value, scrub) }));
        }
        return { $config: value.hash };
      }
      return value;
    });
  }

  private line(text: string): void {
    if (!this.active || !this.stream) return;
    const size = Buffer.byteLength(text) + 1;
    if (this.bytes + size > this.options.maxBytes - END_ROOM) {
      this.options.log('warn', `recording to ${this.options.file} reached its cap of ${this.options.maxBytes} bytes`);
      this.end(`size cap of ${this.options.maxBytes} bytes reached`);
      return;
    }
    if (this.stream.writableLength > this.maxPending) {
      this.options.log('warn', `recording to ${this.options.file} fell behind the disk (${this.stream.writableLength} bytes waiting)`);
      this.end('the disk fell behind');
      return;
    }
    this.bytes += size;
    this.stream.write(`${text}\n`);
  }
}

function inputsOf(deps: GraphDeps): OptionalInput[] {
  const present: Record<OptionalInput, unknown> = { fastPlan: deps.fastPlan, diff: deps.diff, canary: deps.canary, leader: deps.leader$, credentials: deps.credentials$ };
  return OPTIONAL_INPUTS.filter((name) => present[name] !== undefined);
}

function isConfig(value: unknown): value is RenderedConfig {
  return isRecord(value) && typeof value.hash === 'string' && HASH.test(value.hash) && typeof value.main === 'string' && isRecord(value.maps) && isRecord(value.certs);
}

/** The graph's dependencies, each input written to `session` as it goes in. */
export function recordedDeps(deps: GraphDeps, session: RecordingSession): GraphDeps {
  const counts = new Map<string, number>();
  const count = (dep: string) => {
    const n = (counts.get(dep) ?? 0) + 1;
    counts.set(dep, n);
    return n;
  };
  const scrub = session.scrub;
  const stream = <T>(dep: StreamDep, source: Observable<T>, key?: string, write: (v: T) => unknown = (v) => v): Observable<T> =>
    new Observable<T>((subscriber) => {
      const n = count(dep);
      session.subscribe(dep, n, key);
      let sync = true;
      const subscription = source.subscribe({
        // Scrubbing copies the value: only while recording.
        next: (v) => session.during(session.active ? session.notify(dep, n, 'next', sync, write(v)) : undefined, () => subscriber.next(v)),
        error: (err: unknown) => session.during(session.notify(dep, n, 'error', sync, err), () => subscriber.error(err)),
        complete: () => session.during(session.notify(dep, n, 'complete', sync), () => subscriber.complete()),
      });
      sync = false;
      return subscription;
    });
  /** A call's value, written when it is known: a result as it returns, steps (run in slices, later than the call) when they have returned theirs. */
  const value =
    <A extends unknown[], R>(dep: ValueDep, f: (...args: A) => R) =>
    (...args: A): R => {
      const n = count(dep);
      const v = f(...args);
      if (!isSteps(v)) {
        session.value(dep, n, v);
        return v;
      }
      return (function* () {
        const outcome: unknown = yield* v;
        session.value(dep, n, outcome);
        return outcome;
      })() as R;
    };
  const canary = deps.canary;
  const fastPlan = deps.fastPlan;
  return {
    ...deps,
    changes$: stream('changes', deps.changes$, undefined, (c) => scrubChange(c, scrub)),
    endpoints$: stream('endpoints', deps.endpoints$),
    render: (input) => stream('render', deps.render(input), String(input.reconcile.seq)),
    validate: (config) => stream('validate', deps.validate(config), config.hash),
    deployTo: (endpoint, deployment) => stream('deploy', deps.deployTo(endpoint, deployment), `${endpoint.id} ${deployment.config.hash}`),
    ...(fastPlan && { fastPlan: value('fastPlan', fastPlan) }),
    ...(deps.diff && { diff: value('diff', deps.diff) }),
    ...(canary && {
      canary: {
        check: (endpoint, config, since) => stream('check', canary.check(endpoint, config, since), endpoint.id),
        reloads: value('reloads', (from: RenderedConfig, to: RenderedConfig) => canary.reloads(from, to)),
        running: value('running', (endpoint: Parameters<typeof canary.running>[0]) => canary.running(endpoint)),
      },
    }),
    ...(deps.leader$ && { leader$: stream('leader', deps.leader$) }),
    // Only that credentials changed goes in, never what they are.
    ...(deps.credentials$ && { credentials$: stream('credentials', deps.credentials$, undefined, () => null) }),
    random: value('random', deps.random ?? Math.random),
    scheduler: recordingScheduler(deps.scheduler ?? asyncScheduler, session),
  };
}

/** The graph's scheduler, each run of each action written as a `tick`: when timers really ran. */
function recordingScheduler(scheduler: SchedulerLike, session: RecordingSession): SchedulerLike {
  let count = 0;
  return {
    now: () => (session.active ? session.clockNow() : scheduler.now()),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
      const n = ++count;
      // A repeating action reschedules itself, and so runs this again: each run is a tick.
      return scheduler.schedule(
        function (this: SchedulerAction<T>, s?: T) {
          session.during(session.tick(n), () => work.call(this, s));
        },
        delay,
        state,
      );
    },
  };
}
