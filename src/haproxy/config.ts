/** haproxy.cfg split into sections and tokenised lines, with 1-based line numbers. */

import { type Steps, runSteps } from '../steps.ts';

export const SECTION_KEYWORDS = [
  'global',
  'defaults',
  'frontend',
  'backend',
  'listen',
  'resolvers',
  'peers',
  'userlist',
  'mailers',
  'program',
  'http-errors',
  'ring',
  'cache',
  'log-forward',
  'fcgi-app',
] as const;
export type SectionType = (typeof SECTION_KEYWORDS)[number];
const SECTION_SET: ReadonlySet<string> = new Set(SECTION_KEYWORDS);

export interface ConfigLine {
  /** 1-based line number in the source text. */
  line: number;
  keyword: string;
  args: string[];
  /** The source line without its trailing comment and surrounding whitespace. */
  text: string;
  /** The trailing comment, without `#` and surrounding whitespace; '' when there is none. */
  comment: string;
}

export interface Section {
  type: SectionType;
  /** '' for unnamed sections (global, anonymous defaults). */
  name: string;
  header: ConfigLine;
  /** Tokenised on first use: a plan reads only the sections whose text changed. */
  readonly lines: readonly ConfigLine[];
  /** The lines after the header as written: equal texts mean equal sections. */
  readonly text: string;
  /** Lines of the section that could not be tokenised (tokenises it). */
  readonly errors: readonly ParseError[];
  /** Where `text` starts in the source, and its first line's number. */
  readonly offset: number;
  readonly firstLine: number;
}

export interface ParseError {
  line: number;
  message: string;
}

export interface HaproxyConfig {
  /** Lines before the first section header; haproxy rejects them. */
  orphans: ConfigLine[];
  sections: Section[];
  /** Lines that could not be tokenised, e.g. an unterminated quote (tokenises every section). */
  readonly errors: readonly ParseError[];
  /** Those of them before the first section. */
  readonly orphanErrors: readonly ParseError[];
}

export function isSectionKeyword(word: string): word is SectionType {
  return SECTION_SET.has(word);
}

/** A section whose lines are tokenised when first read. */
class LazySection implements Section {
  readonly type: SectionType;
  readonly name: string;
  readonly header: ConfigLine;
  readonly text: string;
  readonly offset: number;
  readonly firstLine: number;
  private parsed: { lines: ConfigLine[]; errors: ParseError[] } | undefined;

  constructor(header: ConfigLine & { keyword: SectionType }, text: string, offset: number, firstLine: number) {
    this.type = header.keyword;
    this.name = header.args[0] ?? '';
    this.header = header;
    this.text = text;
    this.offset = offset;
    this.firstLine = firstLine;
  }

  get lines(): readonly ConfigLine[] {
    return this.parse().lines;
  }

  get errors(): readonly ParseError[] {
    return this.parse().errors;
  }

  /** Whether the lines were read; for tests of what a plan touches. */
  get tokenized(): boolean {
    return this.parsed !== undefined;
  }

  private parse(): { lines: ConfigLine[]; errors: ParseError[] } {
    if (!this.parsed) {
      const lines: ConfigLine[] = [];
      const errors: ParseError[] = [];
      forEachLine(this.text, this.firstLine, (raw, n) => {
        const tokens = tokenize(raw);
        if ('error' in tokens) errors.push({ line: n, message: tokens.error });
        else if (tokens.args.length > 0) lines.push({ line: n, keyword: tokens.args[0]!, args: tokens.args.slice(1), text: tokens.text, comment: tokens.comment });
      });
      this.parsed = { lines, errors };
    }
    return this.parsed;
  }
}

/** Calls `fn` with every line (without its line break and a trailing CR) and its 1-based number. */
function forEachLine(text: string, firstLine: number, fn: (raw: string, line: number) => void): void {
  let n = firstLine;
  for (let at = 0; at < text.length; n++) {
    const nl = text.indexOf('\n', at);
    const end = nl < 0 ? text.length : nl;
    fn(text.charCodeAt(end - 1) === 13 ? text.slice(at, end - 1) : text.slice(at, end), n);
    at = end + 1;
  }
}

// First letters of the section keywords: any other line is not a header, without slicing it.
const HEADER_INITIALS = new Set(SECTION_KEYWORDS.map((k) => k.charCodeAt(0)));

/** The section keyword a line starts with, read without tokenising the line when it can be. */
function headerKeyword(source: string, start: number, end: number): SectionType | 'maybe' | undefined {
  let i = start;
  while (i < end && (source.charCodeAt(i) === 32 || source.charCodeAt(i) === 9)) i++;
  if (i === end || !HEADER_INITIALS.has(source.charCodeAt(i))) return undefined;
  let j = i;
  for (; j < end; j++) {
    const c = source.charCodeAt(j);
    if (c === 32 || c === 9 || c === 35 || c === 13) break;
    // A quote or an escape can join words: only the tokeniser can tell.
    if (c === 34 || c === 39 || c === 92) return 'maybe';
  }
  const word = source.slice(i, j);
  return isSectionKeyword(word) ? word : undefined;
}

/**
 * Splits a configuration into sections. Only header lines (and lines before the
 * first section) are tokenised here; each section's lines are tokenised when first
 * read, so work on a large configuration follows what is read of it.
 */
export function parseConfig(source: string): HaproxyConfig {
  return runSteps(parseConfigSteps(source));
}

/** Lines read between two steps of parseConfigSteps: a few milliseconds' work. */
const LINES_PER_STEP = 20_000;

/** parseConfig, yielding between stretches of lines (steps.ts): at 10k backends, 150k lines take 10-35 ms. */
export function* parseConfigSteps(source: string): Steps<HaproxyConfig> {
  const orphans: ConfigLine[] = [];
  const sections: Section[] = [];
  const early: ParseError[] = [];
  let open: { header: ConfigLine & { keyword: SectionType }; bodyStart: number; firstLine: number } | undefined;
  const close = (until: number) => {
    if (open) sections.push(new LazySection(open.header, source.slice(open.bodyStart, until), open.bodyStart, open.firstLine));
  };
  let n = 1;
  for (let at = 0; at < source.length; n++) {
    if (n % LINES_PER_STEP === 0) yield;
    const nl = source.indexOf('\n', at);
    const end = nl < 0 ? source.length : nl;
    const next = end + 1;
    const kind = headerKeyword(source, at, end);
    if (kind !== undefined || !open) {
      const raw = source.slice(at, source.charCodeAt(end - 1) === 13 ? end - 1 : end);
      const tokens = tokenize(raw);
      if ('error' in tokens) {
        // Inside a section the error is the section's; before any, the file's.
        if (!open) early.push({ line: n, message: tokens.error });
      } else if (tokens.args.length > 0) {
        const [keyword, ...args] = tokens.args as [string, ...string[]];
        const line: ConfigLine = { line: n, keyword, args, text: tokens.text, comment: tokens.comment };
        if (isSectionKeyword(keyword)) {
          close(at);
          open = { header: line as ConfigLine & { keyword: SectionType }, bodyStart: Math.min(next, source.length), firstLine: n + 1 };
        } else if (!open) {
          orphans.push(line);
        }
      }
    }
    at = next;
  }
  close(source.length);
  return configOf(orphans, sections, early);
}

function configOf(orphans: ConfigLine[], sections: Section[], early: ParseError[]): HaproxyConfig {
  return {
    orphans,
    sections,
    orphanErrors: early,
    get errors() {
      return [...early, ...sections.flatMap((s) => s.errors)].sort((a, b) => a.line - b.line);
    },
  };
}

/** A stretch of a configuration's text replaced: [start, end) of the old text by `text`. */
export interface TextEdit {
  start: number;
  end: number;
  text: string;
}

const lineBreaks = (text: string) => {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
};

/**
 * The parse of a configuration made from `base`'s text by edits that each fall inside
 * the body of one section and contain no section header (server lines): the sections
 * the edits touch get their new text, the others are shared or only moved, and none
 * is read again. A large configuration changed in a few backends costs what those
 * backends cost, not a new split of the whole text.
 */
export function editConfig(base: HaproxyConfig, edits: readonly TextEdit[]): HaproxyConfig {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  const sections: Section[] = [];
  let delta = 0;
  let lines = 0;
  let e = 0;
  for (const section of base.sections) {
    const start = section.offset;
    const end = start + section.text.length;
    let text = section.text;
    let inside = 0;
    let insideLines = 0;
    let edited = false;
    while (e < sorted.length && sorted[e]!.start >= start && sorted[e]!.end <= end) {
      const edit = sorted[e++]!;
      edited = true;
      const at = edit.start - start + inside;
      const old = text.slice(at, at + edit.end - edit.start);
      text = text.slice(0, at) + edit.text + text.slice(at + edit.end - edit.start);
      inside += edit.text.length - (edit.end - edit.start);
      insideLines += lineBreaks(edit.text) - lineBreaks(old);
    }
    if (e < sorted.length && sorted[e]!.start < end) throw new RangeError(`an edit at ${sorted[e]!.start} is not inside one section body`);
    if (!edited && delta === 0 && lines === 0) sections.push(section);
    else {
      const header = { ...section.header, line: section.header.line + lines } as ConfigLine & { keyword: SectionType };
      sections.push(new LazySection(header, text, start + delta, section.firstLine + lines));
    }
    delta += inside;
    lines += insideLines;
  }
  if (e < sorted.length) throw new RangeError(`an edit at ${sorted[e]!.start} is not inside a section body`);
  return configOf(base.orphans, sections, [...base.orphanErrors]);
}

const QUOTING = /["'\\]/;
const BLANKS = /[ \t]+/;

/**
 * Splits a line into words the way haproxy does: whitespace separates, `#`
 * starts a comment, backslash escapes one character, and single or double
 * quotes group words (quotes are removed; escapes inside double quotes apply).
 */
export function tokenize(raw: string): { args: string[]; text: string; comment: string } | { error: string } {
  // Most lines hold no quote and no escape: plain splitting gives the same words.
  if (!QUOTING.test(raw)) {
    const hash = raw.indexOf('#');
    const body = hash < 0 ? raw : raw.slice(0, hash);
    const words = body.split(BLANKS);
    const args = words.filter((w) => w !== '');
    return { args, text: body.trim(), comment: hash < 0 ? '' : raw.slice(hash + 1).trim() };
  }
  const args: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  let end = raw.length;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < raw.length) word += raw[++i];
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < raw.length) {
      word += raw[++i];
      inWord = true;
    } else if (c === '#') {
      end = i;
      break;
    } else if (c === ' ' || c === '\t') {
      if (inWord) args.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) return { error: `unterminated ${quote === '"' ? 'double' : 'single'} quote` };
  if (inWord) args.push(word);
  return { args, text: raw.slice(0, end).trim(), comment: end < raw.length ? raw.slice(end + 1).trim() : '' };
}

/** Finds a named section of a type; names are unique per type in a valid config. */
export function findSection(config: HaproxyConfig, type: SectionType, name: string): Section | undefined {
  return config.sections.find((s) => s.type === type && s.name === name);
}
