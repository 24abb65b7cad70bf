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
      const count = change.value.length;
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
    // Only the lines between what both texts begin and end with (and the context around
    // them) are split and diffed: a large configuration with a small change costs little.
    const region = a && b && (main || path.startsWith('maps/')) ? changedRegion(a.text, b.text, context) : undefined;
    // PEM blocks span lines: auxiliary files are redacted whole before they are split.
    const oldLines = linesOf(region ? region.before : a ? (main ? a.text : redactPem(a.text)) : '');
    const newLines = linesOf(region ? region.after : b ? (main ? b.text : redactPem(b.text)) : '');
    const change: FileChange['change'] = !a ? 'added' : !b ? 'removed' : 'modified';
    const changes = diffArrays(oldLines, newLines, { maxEditLength: maxChangedLines });
    if (!changes) {
      files.push({ path, change, tooLarge: true });
      truncated = true;
      continue;
    }
    let added = 0;
    let removed = 0;
    for (const c of changes) {
      if (c.added) added += c.count;
      else if (c.removed) removed += c.count;
    }
    files.push({ path, change, added, removed });
    patches.push({
      oldFileName: a ? `a/${path}` : '/dev/null',
      newFileName: b ? `b/${path}` : '/dev/null',
      oldHeader: from.hash.slice(0, 12),
      newHeader: to.hash.slice(0, 12),
      hunks: hunksOf(changes, context, main ? redactLine : (line) => line, (region?.firstLine ?? 0) + 1),
    });
  }
  const scrub = options.scrub ?? ((text: string) => text);
  const bounded = boundText(patches.length > 0 ? scrub(formatPatch(patches, { includeIndex: false, includeUnderline: false, includeFileHeaders: true })) : '', maxBytes);
  return { from: from.hash, to: to.hash, files, text: bounded.text, truncated: truncated || bounded.cut };
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
