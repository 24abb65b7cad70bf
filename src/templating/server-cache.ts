import { flatText } from '../flat-text.ts';
import type { KubeObject } from '../k8s/resource.ts';
import type { ResourceView } from '../k8s/store.ts';
import type { Isolation } from './systematic-faults.ts';

/** What one h.servers call wrote, and what it read to write it. */
export interface ServerCall {
  text: string;
  /** Read keys (`set \u0001 key`), as the fast path's index takes them. */
  reads: readonly string[];
  /** The isolations it made (h.isolate of each slice): replayed, so that the template-fault count stays whole. */
  entered: readonly Isolation[];
}

interface Kept extends ServerCall {
  /** Each read's lookup result, by identity: a store hands out the same array while the bucket is unchanged. */
  lookups: readonly (readonly KubeObject[])[];
}

/**
 * The server lines of the last render, reused by the next one where nothing they
 * read changed. A full render at 10k Ingresses spends about a quarter of its time
 * writing server lines, and between two renders almost all of them are the same.
 *
 * A call is kept only when it did nothing but write its text from its arguments and
 * lookups by key: no warning, skip, status, certificate, h.once or h.skipped (render
 * state the cache could not replay), and no read of a whole set. It is reused while
 * every lookup it made returns the same objects; the store keeps a lookup's result
 * while its bucket is unchanged, so that is one map hit per lookup. Calls not made
 * in a render are dropped after it, so the cache never outgrows one render.
 */
export class ServerCache {
  private kept = new Map<string, Kept>();
  private used = new Map<string, Kept>();
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

  /** The call's output, if it was kept and every lookup it made still returns what it did. */
  get(key: string): ServerCall | undefined {
    const kept = this.kept.get(key);
    if (!kept || !this.sets) return undefined;
    for (const [i, read] of kept.reads.entries()) {
      if (lookup(this.sets, read) !== kept.lookups[i]) return undefined;
    }
    this.used.set(key, kept);
    this.reused++;
    return kept;
  }

  /** Keeps a call that changed nothing but its text; a call that read a whole set is not kept. */
  put(key: string, call: ServerCall): void {
    if (!this.sets) return;
    const lookups: (readonly KubeObject[])[] = [];
    for (const read of call.reads) {
      const found = lookup(this.sets, read);
      if (found === undefined) return;
      lookups.push(found);
    }
    // Kept for the next render: the snippet's output flat, not the tree of pieces it was written as.
    this.used.set(key, { ...call, text: flatText(call.text), lookups });
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

/** A read's lookup result; undefined for a whole-set read (list, size) or an unknown set. */
function lookup(sets: Readonly<Record<string, ResourceView>>, read: string): readonly KubeObject[] | undefined {
  const at = read.indexOf('\u0001');
  const key = read.slice(at + 1);
  const view = sets[read.slice(0, at)];
  if (key === '' || !view) return undefined;
  return view.get(...key.split('\u0000'));
}

function sameSets(a: Readonly<Record<string, ResourceView>>, b: Readonly<Record<string, ResourceView>> | undefined): boolean {
  if (!b) return false;
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((n) => a[n] === b[n]);
}
