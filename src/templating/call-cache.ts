import type { KubeObject } from '../k8s/resource.ts';
import type { ResourceView } from '../k8s/store.ts';
import type { DeclaredObject } from './map-entries.ts';
import type { Isolation } from './systematic-faults.ts';
import type { JournalOp } from './once-journal.ts';
import type { Declaration } from './status-declarations.ts';

/** What a call made reusable across renders read: each read as the fast path's index takes it (`set \u0001 key`). */
export interface KeptCall {
  /** Read keys; an empty key is the whole set (list(), size). */
  reads: readonly string[];
  /** The isolations it made (h.isolate): replayed, so that the template-fault count stays whole. */
  entered: readonly Isolation[];
}

/** What one h.servers call wrote. */
export interface ServerCall extends KeptCall {
  text: string;
}

/** What one h.mapEntries call declared and gave its caller (h.result), for one object. */
export interface EntriesCall extends KeptCall {
  /** The object it was made for: reused only for the very same (unchanged) object. */
  object: unknown;
  declared: Omit<DeclaredObject, 'set' | 'key'>;
  result: unknown;
}

/**
 * A kept h.once value (`{ keep: true }`), with what computing it did besides: the
 * isolations (`entered`), what the journal noted (warnings, skips, errors caught,
 * h.mapEntries declarations), the statuses it declared, how many effects it counted,
 * and whether it touched render state at all (for the frames of calls around it).
 */
export interface OnceCall extends KeptCall {
  value: unknown;
  ops: readonly JournalOp[];
  declarations: readonly Declaration[];
  effects: number;
  touched: boolean;
}

/** A call as the cache holds it: with the objects its lookups returned when it was kept. */
export type Kept<C extends KeptCall> = C & { lookups: readonly (readonly KubeObject[])[] };

/**
 * The calls of the last render that may be reused by the next one where nothing they
 * read changed: the server lines of each h.servers call, the map entries (and
 * value) of each h.mapEntries call, and the kept h.once values. A full render at 10k Ingresses spends about a
 * quarter of its time writing server lines and about a third reading each Ingress,
 * and between two renders almost all of them are the same.
 *
 * A call is kept only when it did nothing but compute its output from its arguments
 * and lookups (what counts as that is the engine's to say: no warning, skip, status or
 * certificate). It is reused while every lookup it made returns the same objects: the
 * store keeps a lookup's result while its bucket is unchanged, and a whole set's
 * list while the set is unchanged, so that is one map hit per read. Calls not made
 * in a render are dropped after it, so the cache never outgrows one render.
 */
export class CallCache<C extends KeptCall> {
  private kept = new Map<string, Kept<C>>();
  private used = new Map<string, Kept<C>>();
  private templates: unknown;
  private values: unknown;
  private sets: Readonly<Record<string, ResourceView>> | undefined;
  /** Calls the current (or last) render reused. */
  reused = 0;

  /** Starts a render of these templates over these sets and values: any other makes everything kept stale. */
  begin(templates: unknown, sets: Readonly<Record<string, ResourceView>>, values: unknown): void {
    if (templates !== this.templates || values !== this.values || !sameSets(sets, this.sets)) this.kept.clear();
    this.templates = templates;
    this.values = values;
    this.sets = sets;
    this.used = new Map();
    this.reused = 0;
  }

  /**
   * The call, if it was kept, `fits` it, and every lookup it made still returns what it
   * did. One that no longer does is dropped at once, not at the render's end: it will not
   * fit again (the objects it read are gone), and a kept h.once value that is being
   * computed anew would otherwise be held twice through the render, at 10k Ingresses 13 MiB
   * more near the heap's cap.
   */
  get(key: string, fits: (kept: C) => boolean = () => true): Kept<C> | undefined {
    const kept = this.kept.get(key);
    if (!kept || !this.sets) return undefined;
    if (!fits(kept)) return this.drop(key);
    for (const [i, read] of kept.reads.entries()) {
      if (lookup(this.sets, read) !== kept.lookups[i]) return this.drop(key);
    }
    this.used.set(key, kept);
    this.reused++;
    return kept;
  }

  private drop(key: string): undefined {
    this.kept.delete(key);
    return undefined;
  }

  /** Keeps a call for the next render; answers what is kept, if it could be. */
  put(key: string, call: C): Kept<C> | undefined {
    if (!this.sets) return undefined;
    const lookups: (readonly KubeObject[])[] = [];
    for (const read of call.reads) {
      const found = lookup(this.sets, read);
      if (found === undefined) return undefined;
      lookups.push(found);
    }
    const kept = { ...call, lookups };
    this.used.set(key, kept);
    return kept;
  }

  /**
   * Keeps for the next render a call this render reused without making it: one made
   * inside a kept h.once value that was reused whole, whose reads cover the call's.
   */
  carry(key: string, kept: Kept<C>): void {
    this.used.set(key, kept);
    this.reused++;
  }

  /** Ends the render: what it did not use goes. A render that failed keeps what was kept before it. */
  end(completed: boolean): void {
    if (completed) this.kept = this.used;
    this.used = new Map();
  }

  get size(): number {
    return this.kept.size;
  }
}

/** A read's lookup result (a whole set's list for an empty key); undefined for an unknown set. */
function lookup(sets: Readonly<Record<string, ResourceView>>, read: string): readonly KubeObject[] | undefined {
  const at = read.indexOf('\u0001');
  const key = read.slice(at + 1);
  const view = sets[read.slice(0, at)];
  if (!view) return undefined;
  return key === '' ? view.list() : view.get(...key.split('\u0000'));
}

function sameSets(a: Readonly<Record<string, ResourceView>>, b: Readonly<Record<string, ResourceView>> | undefined): boolean {
  if (!b) return false;
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((n) => a[n] === b[n]);
}
