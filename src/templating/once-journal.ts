import type { RenderWarning } from '../events.ts';
import type { EntriesCall, Kept } from './call-cache.ts';
import type { DeclaredObject } from './map-entries.ts';
import type { Thrown } from './systematic-faults.ts';

/** A skip an h.isolate caught, as h.skipped reads it back. */
export interface CaughtSkip {
  message: string;
  field?: string;
  reason?: string;
}

/**
 * One thing computing a kept h.once value did to the render besides giving its value,
 * as it was attempted: a warning already said, or a skip already caught, is noted
 * all the same, since the render that replays it may not have said it before.
 */
export type JournalOp =
  | { kind: 'warning'; key: string; warning: RenderWarning }
  | { kind: 'skip'; key: string; skip: CaughtSkip }
  | { kind: 'failed'; site: string; subject: unknown; name: string; thrown: Thrown }
  /** An h.mapEntries call: its declaration, and the kept call (if it was kept) that the entries cache must keep too. */
  | { kind: 'entries'; snippet: string; args: string; declared: DeclaredObject; cacheKey: string; call: Kept<EntriesCall> | undefined };

/**
 * What computing a kept h.once value (`h.once(key, compute, { keep: true })`) did,
 * so that the next render can reuse the value and say it all again without
 * computing it: warnings, skips caught, unexpected errors caught, and h.mapEntries
 * declarations (statuses, isolations and reads are taken from the render's own
 * lists). What cannot be said again the same way (a certificate or file mark added,
 * h.skipped read, server lines written) spoils the journal: that value is not kept.
 *
 * Journals nest like the values they record: what an inner value notes, the values
 * being computed around it note as well.
 */
export class OnceJournal {
  readonly ops: JournalOp[] = [];
  /** Why the value cannot be kept, once something made it so. */
  spoiled: string | undefined;
  readonly parent: OnceJournal | undefined;

  constructor(parent: OnceJournal | undefined) {
    this.parent = parent;
  }

  note(op: JournalOp): void {
    this.ops.push(op);
    this.parent?.note(op);
  }

  spoil(why: string): void {
    this.spoiled ??= why;
    this.parent?.spoil(why);
  }
}
