/**
 * What a render declares besides its files, sent from the render thread to the main
 * thread as lists of what changed since the render sent before (list-delta.ts): the
 * statuses, the server sets (h.servers) and the map entries (h.mapEntries). Where a
 * server set stands in haproxy.cfg moves with every line written before it, so the
 * places go apart, as one typed array (copied between threads at memory speed), and
 * the calls themselves, which seldom change, as a delta.
 */
import { deserialize, serialize } from 'node:v8';
import { type ObjectStatus, statusKey } from '../status/types.ts';
import { type Steps, runSteps } from '../steps.ts';
import { nextTurn, runInTurns } from '../turns.ts';
import type { RenderResult } from './engine.ts';
import { type ListDelta, ListDeltaReceiver, ListDeltaSender } from './list-delta.ts';
import type { DeclaredObject, MapDeclarations } from './map-entries.ts';
import type { ServerSet } from './rendered.ts';

type Rendered = Extract<RenderResult, { ok: true }>;
/** A server set without its place in the text. */
type ServerCall = Omit<ServerSet, 'start' | 'end'>;

export interface RenderDelta {
  /** Its digest is equal for renders that declared equal statuses (render.ts compares renders by it). */
  statuses: ListDelta<ObjectStatus>;
  /** `places`: each set's start and end, in order. */
  serverSets?: { calls: ListDelta<ServerCall>; places: Int32Array; reads: readonly string[] };
  mapEntries?: { sets: MapDeclarations['sets']; objects: ListDelta<DeclaredObject> };
  /**
   * The changed records of a large delta (the first render's: every record), serialized in
   * parts and taken out of the lists above: the main thread reads them a part per turn.
   */
  packed?: Uint8Array[];
}

type ListName = 'statuses' | 'calls' | 'objects';
/** A delta with more changed records than this goes packed; each part holds this many. */
const PACK_OVER = 2_000;
const PART_RECORDS = 1_000;

/** The render thread's side. */
export class RenderDeltaSender {
  private readonly statuses = new ListDeltaSender<ObjectStatus>((status) => statusKey(status.ref), { digest: true });
  // Equal calls are interchangeable: a call is keyed by its content.
  private readonly calls = new ListDeltaSender<ServerCall>((_, digest) => digest);
  private readonly objects = new ListDeltaSender<DeclaredObject>((object) => `${object.set}\u0001${object.key}`);

  /** The result to send, without its statuses, server sets and map entries, and what stands for them. */
  ship(rendered: Rendered): { result: Rendered; delta: RenderDelta } {
    const { serverSets, mapEntries, ...config } = rendered.config;
    const delta: RenderDelta = { statuses: this.statuses.delta(rendered.statuses) };
    if (serverSets) {
      const places = new Int32Array(serverSets.sets.length * 2);
      const calls = serverSets.sets.map(({ start, end, ...call }, i) => {
        places[2 * i] = start;
        places[2 * i + 1] = end;
        return call;
      });
      delta.serverSets = { calls: this.calls.delta(calls), places, reads: serverSets.reads };
    }
    if (mapEntries) delta.mapEntries = { sets: mapEntries.sets, objects: this.objects.delta(mapEntries.objects) };
    return { result: { ...rendered, config, statuses: [] }, delta: pack(delta) };
  }
}

/** The lists of a delta, by name. */
function lists(delta: RenderDelta): [ListName, ListDelta<unknown> | undefined][] {
  return [
    ['statuses', delta.statuses],
    ['calls', delta.serverSets?.calls],
    ['objects', delta.mapEntries?.objects],
  ];
}

/**
 * Moves the changed records of a large delta into serialized parts. Copied to the main
 * thread as one object graph, the 30k records of a first render at 10k objects held its
 * event loop 230 ms as they were read; as bytes they copy at memory speed, and are read a part at a time.
 */
function pack(delta: RenderDelta): RenderDelta {
  if (lists(delta).reduce((n, [, list]) => n + (list?.changed.length ?? 0), 0) <= PACK_OVER) return delta;
  const packed: Uint8Array[] = [];
  for (const [name, list] of lists(delta)) {
    if (!list) continue;
    for (let i = 0; i < list.changed.length; i += PART_RECORDS) packed.push(serialize([name, list.changed.slice(i, i + PART_RECORDS)]));
    list.changed = [];
  }
  return { ...delta, packed };
}

/** The main thread's side: one receiver per sender, taking every render it sent. */
export class RenderDeltaReceiver {
  /** How long putting the lists together may hold the event loop before it gets a turn. */
  private readonly budgetMs: number;
  private readonly statuses = new ListDeltaReceiver<ObjectStatus>();
  private readonly calls = new ListDeltaReceiver<ServerCall>();
  private readonly objects = new ListDeltaReceiver<DeclaredObject>();

  constructor(options: { budgetMs?: number } = {}) {
    this.budgetMs = options.budgetMs ?? 10;
  }

  /**
   * take(), reading a packed delta's parts one per turn of the event loop first, and
   * giving the event loop a turn between the lists once they have held it for the budget: a
   * render that adds or removes an object moves every key of its lists (at 10k objects,
   * some 30k keys put in order again).
   */
  async receive(shipped: Rendered, delta: RenderDelta): Promise<Rendered> {
    for (const [i, part] of (delta.packed ?? []).entries()) {
      if (i > 0) await nextTurn();
      const [name, records] = deserialize(part) as [ListName, unknown[]];
      const list = lists(delta).find(([n]) => n === name)?.[1];
      if (!list) throw new Error(`a packed part of the render's ${name}, which the render has none of`);
      list.changed.push(...records);
    }
    return runInTurns(this.takeSteps(shipped, { ...delta, packed: undefined }), this.budgetMs);
  }

  take(shipped: Rendered, delta: RenderDelta): Rendered {
    return runSteps(this.takeSteps(shipped, delta));
  }

  private *takeSteps(shipped: Rendered, delta: RenderDelta): Steps<Rendered> {
    if (delta.packed?.length) throw new Error('a packed render delta is read with receive()');
    const config = { ...shipped.config };
    if (delta.serverSets) {
      const { calls, places, reads } = delta.serverSets;
      config.serverSets = { sets: this.calls.take(calls).map((call, i) => ({ ...call, start: places[2 * i]!, end: places[2 * i + 1]! })), reads };
      yield;
    }
    if (delta.mapEntries) {
      config.mapEntries = { sets: delta.mapEntries.sets, objects: this.objects.take(delta.mapEntries.objects) };
      yield;
    }
    return { ...shipped, config, statuses: this.statuses.take(delta.statuses) };
  }
}
