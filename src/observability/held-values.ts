/**
 * A set of strings held as hashes, and found in texts in one pass: what the Secret
 * scrubber looks for. At 10k TLS Secrets it holds some 300,000 values (each key whole,
 * base64 and decoded, and each line of its body); as strings, with the maps that find
 * them, that was 76 MiB. Here each value costs under 100 bytes whatever its length,
 * half of them in typed arrays outside the JavaScript heap (26 MiB in all).
 *
 * A value is found where a text has, at one position, its first MIN_LENGTH characters
 * (a rolling hash over the text gives every position's at once), its length, the hash
 * of the MIN_LENGTH characters in its middle, and two 32-bit hashes of the whole. The
 * middle hash is there because many values share their first characters: the base64
 * of every PEM key starts with that of `-----BEGIN PRIVATE KEY-----`. A text that
 * matches all four by chance has a blanked-out stretch it did not need; nothing held
 * is ever missed.
 */

/** The shortest value held, and the width of the start and middle hashes. */
export const MIN_LENGTH = 8;

const BASE = 31;
/** BASE to the power MIN_LENGTH - 1, in 32 bits: what the character leaving the window weighs. */
const TOP = Array.from({ length: MIN_LENGTH - 1 }).reduce<number>((h) => Math.imul(h, BASE), 1);
const NONE = -1;

function windowHash(text: string, at: number): number {
  let h = 0;
  for (let i = at; i < at + MIN_LENGTH; i++) h = (Math.imul(h, BASE) + text.charCodeAt(i)) | 0;
  return h;
}

/** Where a value's middle window starts, for a value of `length`. */
const middleOf = (length: number) => (length - MIN_LENGTH) >> 1;

/** Two independent 32-bit hashes of text[at, at + length): FNV-1a, and a polynomial one. */
function wholeHashes(text: string, at: number, length: number): [number, number] {
  let a = 0x811c9dc5 ^ length;
  let b = length ^ 0x9e3779b9;
  for (let i = at; i < at + length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 16777619);
    b = (Math.imul(b, 1000003) + c) | 0;
  }
  return [a | 0, b];
}

/** A value's place in the table, or NONE. */
export type ValueId = number;

export class HeldValues {
  private capacity = 0;
  private length = new Int32Array(0);
  private start = new Int32Array(0);
  private middle = new Int32Array(0);
  private whole1 = new Int32Array(0);
  private whole2 = new Int32Array(0);
  /** How many holders hold it; 0 for a free slot. */
  private count = new Int32Array(0);
  /** The next value with the same start hash (or the next free slot), and the one before. */
  private nextByStart = new Int32Array(0);
  /** Linked both ways: many values can share a start (crafted ones, or lines of generated keys), and one goes in O(1). */
  private prevByStart = new Int32Array(0);
  /** The next value with the same first whole hash. */
  private nextByWhole = new Int32Array(0);
  private readonly byStart = new Map<number, ValueId>();
  private readonly byWhole = new Map<number, ValueId>();
  private free: ValueId = NONE;
  private used = 0;
  /** Values held (each once, however many hold it). */
  size = 0;

  /** Places ever taken: the values held and the free places a new value takes first. */
  get places(): number {
    return this.used;
  }

  /** Holds a value once more; values shorter than MIN_LENGTH are not held. */
  add(value: string): ValueId {
    if (value.length < MIN_LENGTH) return NONE;
    const [w1, w2] = wholeHashes(value, 0, value.length);
    const mid = windowHash(value, middleOf(value.length));
    const st = windowHash(value, 0);
    for (let id = this.byWhole.get(w1) ?? NONE; id !== NONE; id = this.nextByWhole[id]!) {
      if (this.whole2[id] === w2 && this.length[id] === value.length && this.middle[id] === mid && this.start[id] === st) {
        this.count[id]!++;
        return id;
      }
    }
    const id = this.slot();
    this.length[id] = value.length;
    this.start[id] = st;
    this.middle[id] = mid;
    this.whole1[id] = w1;
    this.whole2[id] = w2;
    this.count[id] = 1;
    const head = this.byStart.get(st) ?? NONE;
    this.nextByStart[id] = head;
    this.prevByStart[id] = NONE;
    if (head !== NONE) this.prevByStart[head] = id;
    this.byStart.set(st, id);
    this.nextByWhole[id] = this.byWhole.get(w1) ?? NONE;
    this.byWhole.set(w1, id);
    this.size++;
    return id;
  }

  /** Holds a value once less: the last holder gone, it goes. */
  release(id: ValueId): void {
    if (id === NONE || this.count[id]! <= 0) return;
    if (--this.count[id]! > 0) return;
    const before = this.prevByStart[id]!;
    const after = this.nextByStart[id]!;
    if (after !== NONE) this.prevByStart[after] = before;
    if (before !== NONE) this.nextByStart[before] = after;
    else if (after !== NONE) this.byStart.set(this.start[id]!, after);
    else this.byStart.delete(this.start[id]!);
    unlink(this.byWhole, this.nextByWhole, this.whole1[id]!, id);
    this.nextByStart[id] = this.free;
    this.free = id;
    this.size--;
  }

  /**
   * The stretches of `text` that are held values, as [from, to) pairs, sorted and
   * merged where they overlap: a key and the lines of its body it contains are one
   * stretch, and two values that overlap leave nothing of either uncovered.
   */
  find(text: string): [number, number][] {
    if (this.size === 0 || text.length < MIN_LENGTH) return [];
    // The longest value found at each position, as the end of its stretch.
    const found: [number, number][] = [];
    let h = windowHash(text, 0);
    for (let at = 0; ; at++) {
      let end = 0;
      for (let id = this.byStart.get(h) ?? NONE; id !== NONE; id = this.nextByStart[id]!) {
        const length = this.length[id]!;
        if (at + length > text.length || at + length <= end) continue;
        if (windowHash(text, at + middleOf(length)) !== this.middle[id]) continue;
        const [w1, w2] = wholeHashes(text, at, length);
        if (w1 === this.whole1[id] && w2 === this.whole2[id]) end = at + length;
      }
      if (end > 0) found.push([at, end]);
      if (at + MIN_LENGTH >= text.length) break;
      h = (Math.imul((h - Math.imul(text.charCodeAt(at), TOP)) | 0, BASE) + text.charCodeAt(at + MIN_LENGTH)) | 0;
    }
    // Found in order of their starts: each either extends the stretch before it or opens one.
    const merged: [number, number][] = [];
    for (const [from, to] of found) {
      const last = merged.at(-1);
      if (last && from <= last[1]) last[1] = Math.max(last[1], to);
      else merged.push([from, to]);
    }
    return merged;
  }

  private slot(): ValueId {
    if (this.free !== NONE) {
      const id = this.free;
      this.free = this.nextByStart[id]!;
      return id;
    }
    if (this.used === this.capacity) this.grow();
    return this.used++;
  }

  private grow(): void {
    // By half again: at 300,000 values, doubling would leave up to as many places unused.
    const capacity = Math.max(1024, Math.ceil(this.capacity * 1.5));
    const larger = (old: Int32Array) => {
      const next = new Int32Array(capacity);
      next.set(old);
      return next;
    };
    this.length = larger(this.length);
    this.start = larger(this.start);
    this.middle = larger(this.middle);
    this.whole1 = larger(this.whole1);
    this.whole2 = larger(this.whole2);
    this.count = larger(this.count);
    this.nextByStart = larger(this.nextByStart);
    this.prevByStart = larger(this.prevByStart);
    this.nextByWhole = larger(this.nextByWhole);
    this.capacity = capacity;
  }
}

/** Takes `id` out of the chain that starts at `heads.get(key)` and follows `next`. */
function unlink(heads: Map<number, ValueId>, next: Int32Array, key: number, id: ValueId): void {
  let at = heads.get(key) ?? NONE;
  if (at === id) {
    const after = next[id]!;
    if (after === NONE) heads.delete(key);
    else heads.set(key, after);
    return;
  }
  while (at !== NONE) {
    const after = next[at]!;
    if (after === id) {
      next[at] = next[id]!;
      return;
    }
    at = after;
  }
}
