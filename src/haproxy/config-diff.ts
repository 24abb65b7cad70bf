/**
 * The unified diff between two rendered configurations: haproxy.cfg and every
 * auxiliary file, with credentials redacted, bounded in the work it does and in the
 * size of its text, so that every deployment can carry one.
 *
 * The line diff is jsdiff's (`diffArrays` over lines split once, which is fast on
 * large files where its text tokenizer is not); the hunks are grouped here and printed
 * by jsdiff's `formatPatch`.
 */
import { type ArrayChange, type StructuredPatch, type StructuredPatchHunk, diffArrays, formatPatch } from 'diff';
import { redactHaproxyConfig, redactPem } from '../observability/redact.ts';
import { AUX_KINDS, type RenderedConfig, auxPath } from '../templating/rendered.ts';

export interface FileChange {
  /** As haproxy.cfg names it: `haproxy.cfg`, `maps/hosts.map`, `general/…`, `ssl/…`. */
  path: string;
  change: 'added' | 'removed' | 'modified';
  /** Lines added and removed; absent when the change was too large to compute (`tooLarge`). */
  added?: number;
  removed?: number;
  /** More lines changed than the diff looks for: the file is listed, its hunks are not. */
  tooLarge?: true;
}

export interface ConfigDiff {
  /** The hash of the configuration diffed against; absent when there was none. */
  from?: string;
  to: string;
  /** The files that differ, haproxy.cfg first, then by path. */
  files: readonly FileChange[];
  /** The unified diff, redacted; empty when nothing differs or nothing was diffed against. */
  text: string;
  /** Hunks were left out: the text reached its bound, or a file's change was too large. */
  truncated: boolean;
}

export interface ConfigDiffOptions {
  /** The text is cut at a line boundary below this many bytes; default 64 KiB. */
  maxBytes?: number;
  /** Beyond this many changed lines in one file, the file is only listed; default 500. */
  maxChangedLines?: number;
  /** Lines of context around each change; default 3. */
  context?: number;
  /** Blanks out what else must not be shown (e.g. the values of watched Secrets); applied to the text. */
  scrub?: (text: string) => string;
  /** Told how many lines each region of haproxy.cfg that it line-diffs has (both sides together); for measuring its work. */
  onRegion?: (lines: number) => void;
}

export const DIFF_DEFAULTS = { maxBytes: 64 * 1024, maxChangedLines: 500, context: 3 } as const;

interface FileText {
  path: string;
  text: string;
  main: boolean;
}

function filesOf(config: RenderedConfig): Map<string, FileText> {
  const files = new Map<string, FileText>([['haproxy.cfg', { path: 'haproxy.cfg', text: config.main, main: true }]]);
  for (const kind of AUX_KINDS) for (const [name, text] of Object.entries(config[kind])) files.set(auxPath(kind, name), { path: auxPath(kind, name), text, main: false });
  return files;
}

/** How many lines linesOf would give, counted without making them. */
function lineCount(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return text === '' || text.endsWith('\n') ? n : n + 1;
}

/** Lines with their newline kept (the last one may have none), as jsdiff's line tokens are. */
function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  const last = lines.pop()!;
  const out = lines.map((l) => `${l}\n`);
  if (last !== '') out.push(last);
  return out;
}

/** Redaction that works line by line on haproxy.cfg (its secrets are single directives), and on whole files elsewhere (PEM blocks span lines). */
function redactLine(line: string): string {
  return redactHaproxyConfig(line);
}

/**
 * Groups a line diff into hunks with `context` lines around each change, as
 * jsdiff's structuredPatch does, lines without their newline and a
 * `\ No newline at end of file` line after a last line that had none.
 */
function hunksOf(changes: readonly ArrayChange<string>[], context: number, shown: (line: string) => string, firstLine = 1): StructuredPatchHunk[] {
  const hunks: StructuredPatchHunk[] = [];
  let oldLine = firstLine;
  let newLine = firstLine;
  let open: { oldStart: number; newStart: number; lines: string[] } | undefined;
  const close = (trailing: readonly string[]) => {
    if (!open) return;
    for (const line of trailing) open.lines.push(` ${line}`);
    const count = (sign: string) => open!.lines.filter((l) => l[0] === sign || l[0] === ' ').length;
    hunks.push({ oldStart: open.oldStart, oldLines: count('-'), newStart: open.newStart, newLines: count('+'), lines: open.lines });
    open = undefined;
  };
  for (const [i, change] of changes.entries()) {
    if (!change.added && !change.removed) {
      // Only the lines shown as context are redacted: a long unchanged stretch costs nothing.
      // A long stretch may carry only its first and last `context` lines (see sectionChanges).
      const count = change.count;
      if (open) {
        if (count <= 2 * context && i < changes.length - 1) for (const line of change.value) open.lines.push(` ${shown(line)}`);
        else close(change.value.slice(0, context).map(shown));
      }
      oldLine += count;
      newLine += count;
      continue;
    }
    const lines = change.value.map(shown);
    if (!open) {
      const previous = changes[i - 1];
      const lead = previous && !previous.added && !previous.removed && context > 0 ? previous.value.slice(-context).map(shown) : [];
      open = { oldStart: oldLine - lead.length, newStart: newLine - lead.length, lines: lead.map((l) => ` ${l}`) };
    }
    for (const line of lines) open.lines.push(`${change.added ? '+' : '-'}${line}`);
    if (change.added) newLine += lines.length;
    else oldLine += lines.length;
  }
  close([]);
  for (const hunk of hunks) {
    const out: string[] = [];
    for (const line of hunk.lines) {
      if (line.endsWith('\n')) out.push(line.slice(0, -1));
      else out.push(line, '\\ No newline at end of file');
    }
    hunk.lines = out;
  }
  return hunks;
}

/**
 * The diff from `from` to `to`. Without `from` (nothing to compare with), only the
 * files are listed, as added, without their text.
 */
export function configDiff(from: RenderedConfig | undefined, to: RenderedConfig, options: ConfigDiffOptions = {}): ConfigDiff {
  const { maxBytes, maxChangedLines, context } = { ...DIFF_DEFAULTS, ...options };
  const after = filesOf(to);
  if (from === undefined) {
    return { to: to.hash, files: [...after.values()].map((f) => ({ path: f.path, change: 'added', added: lineCount(f.text), removed: 0 })), text: '', truncated: false };
  }
  if (from.hash === to.hash) return { from: from.hash, to: to.hash, files: [], text: '', truncated: false };
  const before = filesOf(from);
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort((a, b) => (a === 'haproxy.cfg' ? -1 : b === 'haproxy.cfg' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  const files: FileChange[] = [];
  const patches: StructuredPatch[] = [];
  let truncated = false;
  for (const path of paths) {
    const a = before.get(path);
    const b = after.get(path);
    if (a && b && a.text === b.text) continue;
    const main = (a ?? b)!.main;
    const change: FileChange['change'] = !a ? 'added' : !b ? 'removed' : 'modified';
    // haproxy.cfg is diffed a section at a time from one change to the next, so that
    // changes spread over a large configuration (servers moved in many backends) cost
    // what they change, and the work ends as soon as the bound is crossed.
    const changes = main && a && b ? sectionChanges(a.text, b.text, maxChangedLines, context, options.onRegion) : regionChanges(a, b, main, path, context, maxChangedLines);
    if (!changes) {
      files.push({ path, change, tooLarge: true });
      truncated = true;
      continue;
    }
    let added = 0;
    let removed = 0;
    for (const c of changes.changes) {
      if (c.added) added += c.count;
      else if (c.removed) removed += c.count;
    }
    files.push({ path, change, added, removed });
    patches.push({
      oldFileName: a ? `a/${path}` : '/dev/null',
      newFileName: b ? `b/${path}` : '/dev/null',
      oldHeader: from.hash.slice(0, 12),
      newHeader: to.hash.slice(0, 12),
      hunks: hunksOf(changes.changes, context, main ? redactLine : (line) => line, changes.firstLine + 1),
    });
  }
  const scrub = options.scrub ?? ((text: string) => text);
  const bounded = boundText(patches.length > 0 ? scrub(formatPatch(patches, { includeIndex: false, includeUnderline: false, includeFileHeaders: true })) : '', maxBytes);
  return { from: from.hash, to: to.hash, files, text: bounded.text, truncated: truncated || bounded.cut };
}

interface LineChanges {
  changes: ArrayChange<string>[];
  /** Lines before the first change listed (the same number in both texts). */
  firstLine: number;
}

/** Any file: the lines between what both texts begin and end with, diffed at once; undefined beyond the bound. */
function regionChanges(a: FileText | undefined, b: FileText | undefined, main: boolean, path: string, context: number, maxChangedLines: number): LineChanges | undefined {
  // Only the lines between what both texts begin and end with (and the context around
  // them) are split and diffed: a large configuration with a small change costs little.
  const region = a && b && (main || path.startsWith('maps/')) ? changedRegion(a.text, b.text, context) : undefined;
  // PEM blocks span lines: auxiliary files are redacted whole before they are split.
  const oldLines = linesOf(region ? region.before : a ? (main ? a.text : redactPem(a.text)) : '');
  const newLines = linesOf(region ? region.after : b ? (main ? b.text : redactPem(b.text)) : '');
  const changes = diffArrays(oldLines, newLines, { maxEditLength: maxChangedLines });
  return changes && { changes, firstLine: region?.firstLine ?? 0 };
}

/** Headers tried after a change before the rest of both texts is taken as one region (a section removed in `b` has no match). */
const RESYNC_TRIES = 8;

/**
 * The line changes from `a` to `b` (haproxy.cfg), found a change at a time: from the
 * first character that differs, back to its line's start, forward to the next section
 * header of `a` that `b` also has after that point; the lines in between are
 * line-diffed, and the comparison goes on from that header in both. Unchanged
 * stretches are not split into lines: they carry their line count and only the lines
 * shown as context. Undefined as soon as more than `maxEdits` lines changed.
 */
function sectionChanges(a: string, b: string, maxEdits: number, context: number, onRegion?: (lines: number) => void): LineChanges | undefined {
  const changes: ArrayChange<string>[] = [];
  const same = (value: string[], count: number) => {
    if (count === 0) return;
    const last = changes.at(-1);
    if (last && !last.added && !last.removed) {
      const joined = [...last.value, ...value];
      count += last.count;
      changes.pop();
      value = count <= 2 * context ? joined : context > 0 ? [...joined.slice(0, context), ...joined.slice(-context)] : [];
    }
    changes.push({ value, count, added: false, removed: false });
  };
  let pa = 0;
  let pb = 0;
  let edits = 0;
  while (pa < a.length || pb < b.length) {
    const common = commonFrom(a, pa, b, pb);
    if (pa + common === a.length && pb + common === b.length) {
      same(...unchangedLines(a, pa, a.length, context));
      break;
    }
    // The changed line starts where the common text's last line break ends.
    const la = Math.max(pa, a.lastIndexOf('\n', pa + common - 1) + 1);
    const lb = pb + (la - pa);
    same(...unchangedLines(a, pa, la, context));
    let [ha, hb] = [a.length, b.length];
    for (let header = nextHeader(a, la), tries = 0; header < a.length && tries < RESYNC_TRIES; header = nextHeader(a, header), tries++) {
      const found = lineIn(b, a.slice(header, lineEnd(a, header)), lb);
      if (found >= 0) {
        [ha, hb] = [header, found];
        break;
      }
    }
    const before = linesOf(a.slice(la, ha));
    const after = linesOf(b.slice(lb, hb));
    onRegion?.(before.length + after.length);
    const region = diffArrays(before, after, { maxEditLength: maxEdits - edits });
    if (!region) return undefined;
    for (const c of region) {
      if (c.added || c.removed) {
        edits += c.count;
        changes.push(c);
      } else same(c.value, c.count);
    }
    if (edits > maxEdits) return undefined;
    [pa, pb] = [ha, hb];
  }
  return { changes, firstLine: 0 };
}

/** The lines of text[from, to) as an unchanged change: all of them when few, else only the first and last `context`. */
function unchangedLines(text: string, from: number, to: number, context: number): [string[], number] {
  if (from >= to) return [[], 0];
  let count = 0;
  for (let i = text.indexOf('\n', from); i >= 0 && i < to; i = text.indexOf('\n', i + 1)) count++;
  if (text[to - 1] !== '\n') count++;
  if (count <= 2 * context) return [linesOf(text.slice(from, to)), count];
  if (context === 0) return [[], count];
  let headEnd = from;
  for (let k = 0; k < context; k++) headEnd = text.indexOf('\n', headEnd) + 1;
  let tailStart = text[to - 1] === '\n' ? to - 1 : to;
  for (let k = 0; k < context; k++) tailStart = text.lastIndexOf('\n', tailStart - 1);
  return [[...linesOf(text.slice(from, headEnd)), ...linesOf(text.slice(tailStart + 1, to))], count];
}

/** The start of the first line after the one at `from` that opens a section (not indented, not blank, not a comment); the text's length if none. */
function nextHeader(text: string, from: number): number {
  for (let i = text.indexOf('\n', from); i >= 0 && i + 1 < text.length; i = text.indexOf('\n', i + 1)) {
    const c = text.charCodeAt(i + 1);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x23) return i + 1;
  }
  return text.length;
}

/** Where the line starting at `at` ends, its line break included. */
function lineEnd(text: string, at: number): number {
  const end = text.indexOf('\n', at);
  return end < 0 ? text.length : end + 1;
}

/** The start of the first whole line of `text` at or after `from` equal to `line` (with its line break); -1 if none. */
function lineIn(text: string, line: string, from: number): number {
  for (let at = text.indexOf(line, from), seen = 0; at >= 0 && seen < RESYNC_TRIES; at = text.indexOf(line, at + 1), seen++) {
    const starts = at === 0 || text.charCodeAt(at - 1) === 0x0a;
    const ends = line.endsWith('\n') || at + line.length === text.length;
    if (starts && ends) return at;
  }
  return -1;
}

/** How many characters `a` from `ia` and `b` from `ib` share, compared a block at a time (no copies). */
function commonFrom(a: string, ia: number, b: string, ib: number): number {
  const limit = Math.min(a.length - ia, b.length - ib);
  let same = 0;
  let step = 1 << 16;
  while (same < limit) {
    const n = Math.min(step, limit - same);
    if (a.slice(ia + same, ia + same + n) === b.slice(ib + same, ib + same + n)) same += n;
    else if (n === 1) break;
    else step = Math.max(1, n >> 1);
  }
  return same;
}

/**
 * The lines of two texts that differ, with `context` lines of what they share around
 * them: what follows the common whole-line prefix and precedes the common whole-line
 * suffix, and how many lines come before it (the same number in both).
 */
export function changedRegion(a: string, b: string, context: number): { before: string; after: string; firstLine: number } {
  let prefix = commonLength(a, b, (s, i, n) => s.slice(i, i + n));
  let suffix = commonLength(a, b, (s, i, n) => s.slice(s.length - i - n, s.length - i));
  // Whole lines only: the prefix ends after a line break, the suffix starts at a line's start.
  prefix = a.lastIndexOf('\n', prefix - 1) + 1;
  for (let k = 0; k < context && prefix > 0; k++) prefix = a.lastIndexOf('\n', prefix - 2) + 1;
  suffix = Math.min(suffix, a.length - prefix, b.length - prefix);
  let cut = a.length - suffix;
  if (cut > 0 && a[cut - 1] !== '\n') {
    const next = a.indexOf('\n', cut);
    cut = next < 0 ? a.length : next + 1;
  }
  for (let k = 0; k < context && cut < a.length; k++) {
    const next = a.indexOf('\n', cut);
    cut = next < 0 ? a.length : next + 1;
  }
  suffix = a.length - cut;
  let firstLine = 0;
  for (let i = a.indexOf('\n'); i >= 0 && i < prefix; i = a.indexOf('\n', i + 1)) firstLine++;
  return { before: a.slice(prefix, a.length - suffix), after: b.slice(prefix, b.length - suffix), firstLine };
}

/** How many characters two strings share from one end, compared a block at a time (no copies). */
function commonLength(a: string, b: string, take: (s: string, i: number, n: number) => string): number {
  const limit = Math.min(a.length, b.length);
  let same = 0;
  let step = 1 << 16;
  while (same < limit) {
    const n = Math.min(step, limit - same);
    if (take(a, same, n) === take(b, same, n)) same += n;
    else if (n === 1) break;
    else step = Math.max(1, n >> 1);
  }
  return same;
}

/** The text cut at a line boundary so that it and the note saying so stay below `maxBytes`. */
function boundText(text: string, maxBytes: number): { text: string; cut: boolean } {
  if (Buffer.byteLength(text) <= maxBytes) return { text, cut: false };
  const lines = text.split('\n');
  const kept: string[] = [];
  let size = 0;
  const room = maxBytes - 64;
  for (const line of lines) {
    const bytes = Buffer.byteLength(line) + 1;
    if (size + bytes > room) break;
    kept.push(line);
    size += bytes;
  }
  return { text: `${kept.join('\n')}\n… diff cut at ${maxBytes} bytes (${lines.length - kept.length} more lines)\n`, cut: true };
}

/** One line per file: `haproxy.cfg +3 -1, maps/hosts.map (new) +2`. */
export function diffSummary(diff: ConfigDiff): string {
  if (diff.from === undefined) return `nothing to compare with: ${diff.files.length} file(s)`;
  if (diff.files.length === 0) return 'no change';
  return diff.files
    .map((f) => {
      const what = f.change === 'added' ? ' (new)' : f.change === 'removed' ? ' (removed)' : '';
      return f.tooLarge ? `${f.path}${what} (too many changes to show)` : `${f.path}${what} +${f.added} -${f.removed}`;
    })
    .join(', ');
}
