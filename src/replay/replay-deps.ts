/**
 * A recording as the graph's dependencies: each input's n-th subscription (or call)
 * gets what the recorded one got, at the recorded times on `inner` (virtual time in a
 * replay), and the graph's timers run when they ran in the recording. Nothing is rendered, checked or deployed. Where the graph asks for more, or
 * for something else, than the recording holds, the replay has diverged: it is noted,
 * and the input gives nothing (a stream) or a neutral value (a plan, a diff).
 */
import { Observable, type SchedulerAction, type SchedulerLike, Subscription } from 'rxjs';
import type { ConfigDiff } from '../haproxy/config-diff.ts';
import type { GraphDeps } from '../../streams/graph.ts';
import type { FastPathOutcome } from '../../streams/fast-path.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import type { Entry, Recording, StreamDep, ValueDep } from './format.ts';

/** How far a recorded timer may have run from when it was due, either way (see checkDue). */
export const TIMER_EARLY_MS = 20;
export const TIMER_LATE_MS = 250;

type Notification = Extract<Entry, { k: 'next' | 'error' | 'complete' }>;

export interface ReplayedIO {
  deps: GraphDeps;
  /** Where the graph asked for what the recording does not hold, as it happened. */
  divergences: string[];
}

export function replayDeps(recording: Recording, inner: SchedulerLike): ReplayedIO {
  const streams = new Map<string, { key?: string; notes: { index: number; note: Notification }[] }>();
  const values = new Map<ValueDep, unknown[]>();
  const ticks = new Map<number, number[]>();
  /** What the recording says happened at a time, in the file's order: timer runs, notifications. */
  const slots: number[] = [];
  recording.entries.forEach((e, index) => {
    if (e.k === 'subscribe') streams.set(`${e.dep}#${e.n}`, { ...(e.key !== undefined && { key: e.key }), notes: [] });
    else if (e.k === 'next' || e.k === 'error' || e.k === 'complete') {
      // Notifications of a subscription that began before the recording did are not replayed.
      streams.get(`${e.dep}#${e.n}`)?.notes.push({ index, note: e });
      if (!e.sync) slots.push(index);
    } else if (e.k === 'tick') {
      const runs = ticks.get(e.n) ?? [];
      runs.push(index);
      ticks.set(e.n, runs);
      slots.push(index);
    } else if (e.k === 'value') {
      const list = values.get(e.dep) ?? [];
      list[e.n - 1] = e.v;
      values.set(e.dep, list);
    }
  });
  const divergences: string[] = [];
  const diverged = (message: string) => divergences.push(`${inner.now()}ms: ${message}`);
  const counts = new Map<string, number>();
  const count = (dep: string) => {
    const n = (counts.get(dep) ?? 0) + 1;
    counts.set(dep, n);
    return n;
  };

  // The slots run in the file's order, each at its time: what happened in one millisecond
  // happens in the same order again. A slot runs what the graph bound to it, if anything.
  const bound = new Map<number, () => void>();
  let cursor = 0;
  const runSlots = () => {
    const t = recording.entries[slots[cursor]!]!.t;
    while (cursor < slots.length && recording.entries[slots[cursor]!]!.t === t) {
      const index = slots[cursor++]!;
      const run = bound.get(index);
      bound.delete(index);
      run?.();
    }
    if (cursor < slots.length) inner.schedule(runSlots, recording.entries[slots[cursor]!]!.t - inner.now());
  };
  if (slots.length > 0) inner.schedule(runSlots, recording.entries[slots[0]!]!.t);
  /** Whether an entry's slot is still to come. */
  const ahead = (index: number) => cursor >= slots.length ? false : index >= slots[cursor]!;

  const stream = <T>(dep: StreamDep, key?: string): Observable<T> =>
    new Observable<T>((subscriber) => {
      const n = count(dep);
      const recorded = streams.get(`${dep}#${n}`);
      if (!recorded) {
        diverged(`${dep} #${n}${key ? ` (${key})` : ''} is not in the recording`);
        return;
      }
      if (key !== undefined && recorded.key !== undefined && key !== recorded.key) diverged(`${dep} #${n} was recorded for ${recorded.key}, replayed for ${key}`);
      const deliver = (note: Notification) => {
        if (note.k === 'next') subscriber.next(note.v as T);
        else if (note.k === 'error') subscriber.error(new Error(note.message));
        else subscriber.complete();
      };
      const mine: number[] = [];
      for (const { index, note } of recorded.notes) {
        if (subscriber.closed) break;
        if (note.sync) deliver(note);
        else if (ahead(index)) {
          bound.set(index, () => deliver(note));
          mine.push(index);
        } else diverged(`${dep} #${n} was subscribed after its notification at ${note.t}ms`);
      }
      return () => {
        for (const index of mine) bound.delete(index);
      };
    });

  const value = <T>(dep: ValueDep, fallback: () => T): T => {
    const n = count(dep);
    const list = values.get(dep);
    if (!list || n > list.length) {
      diverged(`${dep} #${n} is not in the recording`);
      return fallback();
    }
    return list[n - 1] as T;
  };

  let actions = 0;
  /**
   * A timer of the replay should be due about when the recorded one ran: never much later
   * (a timer is not early), and not much earlier (a busy event loop runs timers late, not
   * seconds late). Outside these bounds the graph's timing differs from the recorded graph's.
   */
  const checkDue = (n: number, slot: number, delay: number) => {
    const due = inner.now() + delay;
    const ran = recording.entries[slot]!.t;
    if (ran < due - TIMER_EARLY_MS || ran > due + TIMER_LATE_MS) diverged(`timer #${n} is due at ${due}ms, the recorded one ran at ${ran}ms`);
  };
  /** Runs the graph's n-th scheduled action when the recording says it ran; one the recording never saw run, never. */
  class ReplayedAction<S> extends Subscription implements SchedulerAction<S> {
    private runs: readonly number[];
    private k = 0;
    private slot: number | undefined;
    private pending: Subscription | undefined;
    private readonly work: (this: SchedulerAction<S>, state?: S) => void;
    private readonly n: number;

    constructor(work: (this: SchedulerAction<S>, state?: S) => void) {
      super();
      this.work = work;
      this.n = ++actions;
      this.runs = ticks.get(this.n) ?? [];
      this.add(() => this.cancel());
    }

    schedule(state?: S, delay = 0): Subscription {
      if (this.closed) return this;
      this.cancel();
      const slot = this.runs[this.k];
      if (slot === undefined) {
        // The recorded one never ran (again): it was cancelled first, or still pending when
        // the recording ended. Due by the replay's clock it could run where it did not:
        // a timeout the live run cancelled in the milliseconds its own work took.
        return this;
      }
      if (ahead(slot)) {
        checkDue(this.n, slot, delay);
        this.slot = slot;
        bound.set(slot, () => this.execute(state));
      } else {
        diverged(`timer #${this.n} was scheduled after the recorded one ran, at ${recording.entries[slot]!.t}ms`);
        this.pending = inner.schedule(() => this.execute(state), delay);
      }
      return this;
    }

    private execute(state?: S): void {
      this.k++;
      this.slot = undefined;
      this.pending = undefined;
      this.work.call(this, state);
    }

    private cancel(): void {
      if (this.slot !== undefined) bound.delete(this.slot);
      this.slot = undefined;
      this.pending?.unsubscribe();
      this.pending = undefined;
    }
  }
  const scheduler: SchedulerLike = {
    now: () => inner.now(),
    schedule: <S>(work: (this: SchedulerAction<S>, state?: S) => void, delay?: number, state?: S) => new ReplayedAction<S>(work).schedule(state, delay),
  };

  const inputs = new Set(recording.header.inputs);
  const deps: GraphDeps = {
    changes$: stream('changes'),
    endpoints$: stream('endpoints'),
    render: (input) => stream('render', String(input.reconcile.seq)),
    validate: (config) => stream('validate', config.hash),
    deployTo: (endpoint, deployment) => stream('deploy', `${endpoint.id} ${deployment.config.hash}`),
    ...(inputs.has('fastPlan') && { fastPlan: () => value<FastPathOutcome>('fastPlan', () => ({ kind: 'none' })) }),
    ...(inputs.has('diff') && { diff: (_from, to) => value<ConfigDiff>('diff', () => ({ to: to.hash, files: [], text: '', truncated: false })) }),
    ...(inputs.has('canary') && {
      canary: {
        check: (endpoint) => stream('check', endpoint.id),
        reloads: () => value('reloads', () => true),
        // A recorded `undefined` is written as null.
        running: () => value<RenderedConfig | null>('running', () => null) ?? undefined,
      },
    }),
    ...(inputs.has('leader') && { leader$: stream<boolean>('leader') }),
    ...(inputs.has('credentials') && { credentials$: stream('credentials') }),
    random: () => value('random', () => 0.5),
    scheduler,
  };
  return { deps, divergences };
}
