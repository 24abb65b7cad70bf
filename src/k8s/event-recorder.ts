import type { KubeApi } from './api.ts';
import { type ClusterEvent, type EventLimits, EventLimiter, type ObjectReference } from './cluster-events.ts';
import { microTime } from './leader-election.ts';

export type { ObjectReference } from './cluster-events.ts';

export interface EventRecorderOptions {
  /** Where the Events about `regarding` are created: its namespace. */
  namespace: string;
  /**
   * The object the Events are about (the controller ConfigMap) unless an event names
   * its own; read at each event, as its uid becomes known. An event that names its
   * own object is created in that object's namespace (`default` for one without).
   */
  regarding: () => ObjectReference;
  /** This replica, e.g. its pod name. */
  reportingInstance: string;
  reportingController?: string;
  limits?: Partial<EventLimits>;
  now?: () => number;
  /** A failure to write an Event, for the log. */
  onNotice?: (message: string) => void;
  /** Per API request; Events must never hold anything up for long. Default 5 s. */
  requestTimeoutMs?: number;
}

interface Written {
  name: string;
  namespace: string;
  body: Record<string, unknown>;
}

/**
 * Writes events.k8s.io/v1 Events, rate-limited by EventLimiter: repeats become a
 * series on the first Event, and creates beyond the budget are dropped. Writes go
 * one at a time, off the caller's path: `record` never blocks and never throws.
 */
export class EventRecorder {
  private readonly api: KubeApi;
  private readonly options: EventRecorderOptions;
  private readonly limiter: EventLimiter;
  private readonly written = new Map<string, Written>();
  private readonly now: () => number;
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private sequence = 0;
  private stopped = false;

  constructor(api: KubeApi, options: EventRecorderOptions) {
    this.api = api;
    this.options = options;
    this.limiter = new EventLimiter(options.limits);
    this.now = options.now ?? Date.now;
    const flushMs = options.limits?.seriesFlushMs ?? 30_000;
    this.timer = setInterval(() => this.flushSeries(), Math.max(50, Math.floor(flushMs / 2)));
    this.timer.unref();
  }

  private get timeoutMs(): number {
    return this.options.requestTimeoutMs ?? 5_000;
  }

  /** Events dropped by the rate limit so far. */
  get dropped(): number {
    return this.limiter.dropped;
  }

  record(event: ClusterEvent): void {
    if (this.stopped) return;
    const now = this.now();
    const decision = this.limiter.offer(event, now);
    if (decision.action !== 'create') return;
    this.enqueue(() => this.create(decision.key, event, now));
  }

  /** Resolves once every write queued so far is done. */
  idle(): Promise<void> {
    return this.queue;
  }

  /** Writes what is still counted into series, then stops. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    clearInterval(this.timer);
    this.flushSeries(Number.POSITIVE_INFINITY);
    this.stopped = true;
    await this.queue;
  }

  private enqueue(work: () => Promise<void>): void {
    this.queue = this.queue.then(work).catch((err: unknown) => this.options.onNotice?.(`cannot write an Event: ${String(err)}`));
  }

  /** Events written whose series may still be updated. */
  get tracked(): number {
    return this.written.size;
  }

  private flushSeries(at = this.now()): void {
    for (const update of this.limiter.due(at)) {
      this.enqueue(() => this.updateSeries(update.key, update.count, update.lastObservedAt));
    }
    // An Event whose series is over is never written again: forget it, after its last write (queued before).
    const forgotten = this.limiter.takeForgotten();
    if (forgotten.length > 0) {
      this.enqueue(async () => {
        for (const key of forgotten) this.written.delete(key);
      });
    }
  }

  private async create(key: string, event: ClusterEvent, at: number): Promise<void> {
    const regarding = event.regarding ?? this.options.regarding();
    const namespace = event.regarding ? (event.regarding.namespace ?? 'default') : this.options.namespace;
    // An Event's name is the object's and a unique suffix, within the 253 characters a name may have.
    const name = `${regarding.name.slice(0, 200)}.${(BigInt(at) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16)}`;
    const body: Record<string, unknown> = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name, namespace },
      eventTime: microTime(at),
      reportingController: this.options.reportingController ?? 'haprx',
      reportingInstance: this.options.reportingInstance.slice(0, 128),
      action: event.action,
      reason: event.reason,
      type: event.type,
      note: event.note,
      regarding,
    };
    const result = await this.api.request<Record<string, unknown>>('POST', { apiVersion: 'events.k8s.io/v1', resource: 'events', namespace }, { body, timeoutMs: this.timeoutMs });
    if (result.ok) this.written.set(key, { name, namespace, body: result.body });
    else this.options.onNotice?.(`cannot create the ${event.reason} Event: ${result.message}`);
  }

  private async updateSeries(key: string, count: number, lastObservedAt: number): Promise<void> {
    const written = this.written.get(key);
    if (!written) return;
    const ref = { apiVersion: 'events.k8s.io/v1', resource: 'events', namespace: written.namespace, name: written.name };
    const series = { count, lastObservedTime: microTime(lastObservedAt) };
    const timeoutMs = this.timeoutMs;
    let result = await this.api.request<Record<string, unknown>>('PUT', ref, { body: { ...written.body, series }, timeoutMs });
    if (!result.ok && result.status === 409) {
      const fresh = await this.api.request<Record<string, unknown>>('GET', ref, { timeoutMs });
      if (fresh.ok) result = await this.api.request<Record<string, unknown>>('PUT', ref, { body: { ...fresh.body, series }, timeoutMs });
    }
    if (result.ok) this.written.set(key, { name: written.name, namespace: written.namespace, body: result.body });
    else {
      // Gone (the API server expires Events) or failing: repeats are only counted until the aggregation window ends, then a new Event is created.
      this.written.delete(key);
      this.options.onNotice?.(`cannot update the series of Event ${written.name}: ${result.message}`);
    }
  }
}
