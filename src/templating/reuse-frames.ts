/**
 * What a call that may be reused by the next render (an h.mapEntries call) read and
 * whether it touched render state, including through the h.once values it used.
 *
 * A frame is open while such a call runs, and while an h.once value is computed. A
 * read goes to every open frame, so a call reads what the values it computes read;
 * an effect (a warning, a status, a skip caught, a certificate) spoils every open
 * frame. An h.once value the call only reads was computed before, perhaps by other
 * code: what computing it read, and whether that touched render state, is kept by
 * key and given to the reader's frames, so a value built from a whole set ties the
 * call to that set.
 */
export interface ReuseFrame {
  readonly reads: Set<string>;
  touched: boolean;
}

export class ReuseFrames {
  private readonly open: ReuseFrame[] = [];
  private readonly onces = new Map<string, { reads: readonly string[]; touched: boolean }>();

  begin(): ReuseFrame {
    const frame: ReuseFrame = { reads: new Set(), touched: false };
    this.open.push(frame);
    return frame;
  }

  /** Closes the innermost frame, which must be this one. */
  end(frame: ReuseFrame): void {
    if (this.open.at(-1) !== frame) throw new Error('reuse frames closed out of order');
    this.open.pop();
  }

  read(key: string): void {
    for (const frame of this.open) frame.reads.add(key);
  }

  touch(): void {
    for (const frame of this.open) frame.touched = true;
  }

  /** Computes an h.once value in a frame of its own, and keeps what computing it read. */
  computeOnce<T>(key: string, compute: () => T): T {
    const frame = this.begin();
    try {
      return compute();
    } finally {
      this.end(frame);
      this.onces.set(key, { reads: [...frame.reads], touched: frame.touched });
    }
  }

  /** What computing an h.once value of this render read, and whether that touched render state. */
  computed(key: string): { reads: readonly string[]; touched: boolean } | undefined {
    return this.onces.get(key);
  }

  /**
   * An h.once value kept from the last render and reused instead of computed: what
   * computing it read is noted by key, as if it had been computed, and its effects touch
   * every open frame. The reads themselves the caller replays, as reads of this render.
   */
  reused(key: string, reads: readonly string[], touched: boolean): void {
    this.onces.set(key, { reads, touched });
    if (touched) this.touch();
  }

  /** An h.once value read, not computed: what computing it read is read by every open frame. */
  readOnce(key: string): void {
    if (this.open.length === 0) return;
    const once = this.onces.get(key);
    if (!once) return this.touch();
    for (const read of once.reads) this.read(read);
    if (once.touched) this.touch();
  }
}
