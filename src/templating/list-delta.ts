/**
 * A list that the render thread sends after every render, sent as what changed since
 * the list it sent before. At 10k objects a render declares some 30k small records
 * (statuses, server sets, map entries), nearly all as they were last time. Copied
 * whole, the main thread spent 100–170 ms deserializing them after each render, its
 * event loop held the while (a heap near its cap collects meanwhile). Here the render
 * thread compares them by a digest of their text, off the main thread, and sends the
 * few that changed; the main thread puts the list together again from what it kept,
 * reusing the same objects for what did not change. So consumers can tell them apart
 * by identity, and the renders the main thread keeps share them instead of each
 * holding a copy. Neither side keeps the texts: at 10k, 30k of them were 10 MiB.
 */
import { createHash } from 'node:crypto';
import { textDigest } from '../text-digest.ts';

export interface ListDelta<T> {
  /** Every key in order, when the keys or their order changed; otherwise the same as before. */
  order?: string[];
  /** The items new or changed since the list sent before. */
  changed: T[];
  /** The key of each changed item, in the same order. */
  keys: string[];
  /** A digest of every item, equal for equal lists, when the sender was asked for one. */
  digest?: string;
}

/** The render thread's side: what it sent last, as the digest of each item's text by key. */
export class ListDeltaSender<T> {
  private digests = new Map<string, string>();
  private order: string[] = [];
  private readonly keyOf: (item: T, digest: string) => string;
  private readonly withDigest: boolean;

  /** `keyOf` names an item among the others; it is given the digest of the item's JSON text. */
  constructor(keyOf: (item: T, digest: string) => string, options: { digest?: boolean } = {}) {
    this.keyOf = keyOf;
    this.withDigest = options.digest ?? false;
  }

  delta(items: readonly T[]): ListDelta<T> {
    const digests = new Map<string, string>();
    const order: string[] = [];
    const changed: T[] = [];
    const keys: string[] = [];
    const whole = this.withDigest ? createHash('sha256') : undefined;
    let sameOrder = items.length === this.order.length;
    for (const [i, item] of items.entries()) {
      const digest = textDigest(JSON.stringify(item));
      const key = this.keyOf(item, digest);
      whole?.update(digest);
      // A key twice in one list (equal items keyed by their content) is sent once.
      if (this.digests.get(key) !== digest && digests.get(key) !== digest) {
        changed.push(item);
        keys.push(key);
      }
      if (sameOrder && this.order[i] !== key) sameOrder = false;
      digests.set(key, digest);
      order.push(key);
    }
    this.digests = digests;
    this.order = order;
    return { ...(!sameOrder && { order }), changed, keys, ...(whole && { digest: whole.digest('base64') }) };
  }
}

/** The main thread's side: the list put together again; one receiver per sender, taking every delta it sent. */
export class ListDeltaReceiver<T> {
  private readonly byKey = new Map<string, T>();
  private order: string[] = [];
  private last: readonly T[] = [];

  /** The list put together again: the very array of the last take when nothing changed, so a consumer can skip it. */
  take(delta: ListDelta<T>): readonly T[] {
    if (!delta.order && delta.changed.length === 0) return this.last;
    if (delta.order) {
      const keep = new Set(delta.order);
      for (const key of this.byKey.keys()) if (!keep.has(key)) this.byKey.delete(key);
      this.order = delta.order;
    }
    for (const [i, item] of delta.changed.entries()) this.byKey.set(delta.keys[i]!, item);
    this.last = this.order.map((key) => this.byKey.get(key)!);
    return this.last;
  }
}
