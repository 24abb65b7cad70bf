import type { ControllerEvent } from '../events.ts';
import { type ConfigDiff, diffSummary } from '../haproxy/config-diff.ts';

/** The object an Event is about (events.k8s.io/v1 `regarding`). */
export interface ObjectReference {
  apiVersion?: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** A Kubernetes Event to report, before it is addressed and rate-limited. */
export interface ClusterEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  /** What haprx was doing. */
  action: string;
  /** At most 1024 bytes (the API's limit). */
  note: string;
  /** The object it is about, when not the recorder's own (e.g. an Ingress the render skipped). */
  regarding?: ObjectReference;
}

const NOTE_LIMIT = 1024;

/** Cuts a note to the API's limit on a character boundary. */
export function clampNote(note: string): string {
  if (Buffer.byteLength(note) <= NOTE_LIMIT) return note;
  let cut = note.slice(0, NOTE_LIMIT - 3);
  while (Buffer.byteLength(cut) > NOTE_LIMIT - 3) cut = cut.slice(0, -1);
  return `${cut}...`;
}

const LINE_LIMIT = 300;
// haproxy's own messages, wherever the API put them; the most severe come first.
const HAPROXY_TAG = /(?=\[(?:ALERT|WARNING|NOTICE)\])/;
const SEVERE = /^(\[ALERT\]|line=\d+ )/;

function cutLine(line: string, limit = LINE_LIMIT): string {
  if (Buffer.byteLength(line) <= limit) return line;
  let cut = line.slice(0, limit - 3);
  while (Buffer.byteLength(cut) > limit - 3) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/**
 * A failure as a note: its first line (without the API's transaction id), then
 * haproxy's own lines, alerts first, each cut to a readable length, as many as
 * fit the API's limit, and how many more there were.
 */
export function failureNote(prefix: string, error: string): string {
  const [first = '', ...rest] = error.split(/\r?\n/).flatMap((line) => line.split(HAPROXY_TAG)).map((l) => l.trim());
  const headline = cutLine(`${prefix}${first.replace(/:?\s*err transactionId=\S*\s*$/, '').trim()}`, NOTE_LIMIT / 2);
  const lines = rest.filter((l) => l !== '');
  const ordered = [...lines.filter((l) => SEVERE.test(l)), ...lines.filter((l) => !SEVERE.test(l))];
  let note = headline;
  for (const [i, line] of ordered.entries()) {
    const next = `${note}\n${cutLine(line)}`;
    const left = ordered.length - i - 1;
    const tail = left > 0 ? `\n… and ${left} more lines`.length + 8 : 0;
    if (Buffer.byteLength(next) + tail > NOTE_LIMIT) return `${note}\n… and ${ordered.length - i} more lines`;
    note = next;
  }
  return note;
}

/**
 * The Event a controller event becomes on the controller ConfigMap, if any:
 * Warnings for a rejected configuration, a failed render or validation, a check that
 * could not run, a failed stage and a failed deployment; Normal for a loaded configuration and a deployment that reached every
 * instance. Notes carry paths, lines and messages, never object contents.
 */
export function clusterEventFor(event: ControllerEvent): ClusterEvent | undefined {
  switch (event.type) {
    case 'ConfigRejected':
      return warn('ConfigRejected', 'LoadConfig', `the controller configuration was rejected, the previous one keeps running: ${event.path}: ${event.message}`);
    case 'ConfigAccepted':
      return normal('ConfigLoaded', 'LoadConfig', `controller configuration loaded (generation ${event.generation})`);
    case 'RenderFailed': {
      const { template, line, message } = event.error;
      return warn('RenderFailed', 'Render', `render failed at ${template}${line !== undefined ? `:${line}` : ''}: ${message}; the last good configuration stays live`);
    }
    case 'ValidationFailed': {
      const shown = event.problems.slice(0, 3).map((p) => `${p.file}${p.line !== undefined ? `:${p.line}` : ''}: ${p.message.split('\n')[0]}`);
      const more = event.problems.length > 3 ? ` (and ${event.problems.length - 3} more)` : '';
      return warn('ValidationFailed', 'Validate', `haproxy refused the configuration, the last good one stays live: ${shown.join('; ')}${more}`);
    }
    case 'ValidationUnavailable':
      return warn('ValidationUnavailable', 'Validate', `the configuration could not be checked (not a refusal): ${event.message.split('\n')[0]}; checking again in ${event.retryInMs} ms`);
    case 'StageFailed':
      return warn('StageFailed', 'Reconcile', `stage ${event.stage} failed: ${event.message.split('\n')[0]}; restarting in ${event.restartInMs} ms, the last good configuration stays live`);
    case 'CanaryFailed':
      return warn(
        'CanaryFailed',
        'Deploy',
        failureNote(
          `canary ${event.endpoint.id} failed with configuration ${event.config.hash.slice(0, 12)}, ${event.rollbackTo ? `rolled back to ${event.rollbackTo.slice(0, 12)}` : 'not rolled back (no configuration known to be good)'}, the rest left untouched: `,
          event.problems.join('\n'),
        ),
      );
    case 'InstanceDeployFailed':
      return warn('DeployFailed', 'Deploy', failureNote(`deployment to ${event.result.endpoint.id} failed: `, event.result.error ?? 'unknown error'));
    case 'DeploymentCompleted': {
      const failed = event.results.filter((r) => !r.ok).length;
      if (failed > 0 || event.results.length === 0) return undefined;
      const headline = `configuration ${event.deployment.config.hash.slice(0, 12)} deployed to ${event.results.length} instance(s) (${event.deployment.reason})`;
      return normal('Deployed', 'Deploy', event.diff ? withDiff(headline, event.diff) : headline);
    }
    default:
      return undefined;
  }
}

/**
 * The headline, the files changed and as much of the diff as fits the note, cut at a
 * line boundary and marked when cut (the whole diff is in /debug/vars).
 */
export function withDiff(headline: string, diff: ConfigDiff): string {
  const head = `${headline}: ${diffSummary(diff)}`;
  if (diff.text === '') return clampNote(head);
  const cutNote = '\n… (truncated: the whole diff is in /debug/vars)';
  const room = NOTE_LIMIT - Buffer.byteLength(cutNote);
  let note = head;
  const lines = diff.text.replace(/\n$/, '').split('\n');
  for (const [i, line] of lines.entries()) {
    const next = `${note}\n${line}`;
    // The last line may use the room the mark would have taken.
    if (Buffer.byteLength(next) > (i === lines.length - 1 && !diff.truncated ? NOTE_LIMIT : room)) return clampNote(`${note}${cutNote}`);
    note = next;
  }
  return diff.truncated ? clampNote(`${note}${cutNote}`) : note;
}

const warn = (reason: string, action: string, note: string): ClusterEvent => ({ type: 'Warning', reason, action, note: clampNote(note) });
const normal = (reason: string, action: string, note: string): ClusterEvent => ({ type: 'Normal', reason, action, note: clampNote(note) });

export interface EventLimits {
  /** Creates allowed at once. */
  burst: number;
  /** One more create is allowed every this many ms. */
  refillMs: number;
  /** The same event again within this window is counted into the first one's series, not created anew. */
  aggregateWindowMs: number;
  /** A series is written at most this often. */
  seriesFlushMs: number;
}

export const DEFAULT_EVENT_LIMITS: EventLimits = { burst: 10, refillMs: 30_000, aggregateWindowMs: 10 * 60_000, seriesFlushMs: 30_000 };

export type LimitDecision = { action: 'create'; key: string } | { action: 'count'; key: string } | { action: 'drop'; key: string };

export interface SeriesUpdate {
  key: string;
  count: number;
  lastObservedAt: number;
}

interface Entry {
  firstAt: number;
  count: number;
  written: number;
  lastAt: number;
  lastFlushAt: number;
}

/**
 * Rate limiting for Events, so that a flapping error cannot flood the API:
 * - the same event (type, reason, note) repeated within the aggregation window is
 *   not created again: it is counted, and the first Event's `series` is updated at
 *   most every `seriesFlushMs`;
 * - creates draw from a token bucket (`burst`, one more per `refillMs`); without a
 *   token an event is dropped and counted. Normal and Warning Events have a bucket
 *   each: a Deployed Event per deployment must never spend what a rejected
 *   configuration or a failed deployment needs to be told.
 * Pure: the caller passes the time.
 */
export class EventLimiter {
  dropped = 0;
  private readonly limits: EventLimits;
  private readonly entries = new Map<string, Entry>();
  private forgotten: string[] = [];
  /** A token bucket per event type. */
  private readonly buckets = new Map<string, { tokens: number; refilledAt: number }>();

  constructor(limits: Partial<EventLimits> = {}) {
    this.limits = { ...DEFAULT_EVENT_LIMITS, ...limits };
  }

  static keyOf(event: ClusterEvent): string {
    const r = event.regarding;
    const about = r ? `${r.kind}\u0000${r.namespace ?? ''}\u0000${r.name}\u0000${r.uid ?? ''}` : '';
    return `${event.type}\u0000${event.reason}\u0000${event.note}\u0000${about}`;
  }

  offer(event: ClusterEvent, now: number): LimitDecision {
    const key = EventLimiter.keyOf(event);
    const entry = this.entries.get(key);
    if (entry && now - entry.firstAt < this.limits.aggregateWindowMs) {
      entry.count++;
      entry.lastAt = now;
      return { action: 'count', key };
    }
    const bucket = this.refill(event.type, now);
    if (bucket.tokens < 1) {
      this.dropped++;
      return { action: 'drop', key };
    }
    bucket.tokens--;
    this.entries.set(key, { firstAt: now, count: 1, written: 1, lastAt: now, lastFlushAt: now });
    return { action: 'create', key };
  }

  /** Keys whose series ended (their Event will not be updated again) since the last call. */
  takeForgotten(): string[] {
    const keys = this.forgotten;
    this.forgotten = [];
    return keys;
  }

  /** Events whose repeats are still counted. */
  get size(): number {
    return this.entries.size;
  }

  /** Series whose count grew since last written and whose flush interval has passed. */
  due(now: number): SeriesUpdate[] {
    const updates: SeriesUpdate[] = [];
    for (const [key, entry] of this.entries) {
      if (entry.count > entry.written && now - entry.lastFlushAt >= this.limits.seriesFlushMs) {
        entry.written = entry.count;
        entry.lastFlushAt = now;
        updates.push({ key, count: entry.count, lastObservedAt: entry.lastAt });
      }
      // Forget series that are over and fully written.
      if (entry.count === entry.written && now - entry.firstAt >= this.limits.aggregateWindowMs) {
        this.entries.delete(key);
        this.forgotten.push(key);
      }
    }
    return updates;
  }

  private refill(type: string, now: number): { tokens: number; refilledAt: number } {
    let bucket = this.buckets.get(type);
    if (!bucket) {
      bucket = { tokens: this.limits.burst, refilledAt: now };
      this.buckets.set(type, bucket);
      return bucket;
    }
    const earned = Math.floor((now - bucket.refilledAt) / this.limits.refillMs);
    if (earned > 0) {
      bucket.tokens = Math.min(this.limits.burst, bucket.tokens + earned);
      bucket.refilledAt += earned * this.limits.refillMs;
    }
    return bucket;
  }
}
