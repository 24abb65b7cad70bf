/**
 * The statuses of a render, sent from the render thread as what changed since the
 * render it sent before. At 10k objects a render declares 10k statuses and nearly
 * all are the same as last time; copying them to the main thread, and comparing them
 * there as text, cost tens of milliseconds of its event loop on every render. Here
 * the render thread compares (off the main thread) and sends the few that changed;
 * the main thread puts the list together again from what it kept, reusing the same
 * objects for what did not change, so that its consumers can tell them apart by
 * identity.
 */
import { createHash } from 'node:crypto';
import { type ObjectStatus, statusKey } from '../status/types.ts';

export interface StatusDelta {
  /** Every key in order, when the keys or their order changed; otherwise the same as before. */
  order?: string[];
  /** The statuses new or changed since the render sent before. */
  changed: ObjectStatus[];
  /** A digest of every status, equal for equal statuses (render.ts compares renders by it). */
  digest: string;
}

/** The render thread's side: what it sent last. */
export class StatusDeltaSender {
  private texts = new Map<string, string>();
  private order: string[] = [];

  delta(statuses: readonly ObjectStatus[]): StatusDelta {
    const texts = new Map<string, string>();
    const order: string[] = [];
    const changed: ObjectStatus[] = [];
    const hash = createHash('sha256');
    let sameOrder = statuses.length === this.order.length;
    for (const [i, status] of statuses.entries()) {
      const key = statusKey(status.ref);
      const text = JSON.stringify(status);
      hash.update(text).update('\u0000');
      if (this.texts.get(key) !== text) changed.push(status);
      if (sameOrder && this.order[i] !== key) sameOrder = false;
      texts.set(key, text);
      order.push(key);
    }
    this.texts = texts;
    this.order = order;
    return { ...(!sameOrder && { order }), changed, digest: hash.digest('base64') };
  }
}

/** The main thread's side: the list put together again; one receiver per sender. */
export class StatusDeltaReceiver {
  private readonly byKey = new Map<string, ObjectStatus>();
  private order: string[] = [];

  take(delta: StatusDelta): ObjectStatus[] {
    if (delta.order) {
      const keep = new Set(delta.order);
      for (const key of this.byKey.keys()) if (!keep.has(key)) this.byKey.delete(key);
      this.order = delta.order;
    }
    for (const status of delta.changed) this.byKey.set(statusKey(status.ref), status);
    return this.order.map((key) => this.byKey.get(key)!);
  }
}
