/**
 * Where haproxy.cfg references the auxiliary files of a render (`maps/<name>`,
 * `general/<name>`, `ssl/<name>`, relative to haproxy's working directory), and
 * how to rewrite exactly those references, e.g. into the absolute storage paths
 * of a Data Plane API instance. Pure: no IO.
 *
 * The positions are the ones haproxy opens a file from (map converters, `-f`,
 * errorfile, bind and server certificate options, …); phase-one validation
 * (structure.ts) checks the subset haproxy opens while checking a configuration,
 * and a rewrite changes all of them, so that every name a file goes by (a map
 * converter and a `set-map` action must name one map) stays the same.
 */
import { type Steps, runSteps } from '../steps.ts';
import { AUX_DIRS, type AuxKind, pieceStarts } from '../templating/rendered.ts';
import { isSectionKeyword } from './config.ts';

/** Which global base directive redirects relative paths of a reference. */
export type RefBase = 'crt' | 'ca' | 'none';

/** A path naming a file of an auxiliary directory, found in some text. */
export interface PathRef {
  /** Offsets of the path in the text it was found in: [start, end). */
  start: number;
  end: number;
  /** The path as haproxy reads it, e.g. `maps/hosts.map`. */
  path: string;
  kind: AuxKind;
  /** The file name inside its directory (may hold a '/' when the path names no rendered file). */
  name: string;
  base: RefBase;
}

/** A reference inside the words of one line (word 0 is the keyword); its offsets are inside the unquoted word. */
export interface WordRef extends PathRef {
  word: number;
  /** A `crt` path may stand for a bundle of `<path>.rsa`, `.ecdsa`, `.dsa`. */
  bundle: boolean;
  /** haproxy opens the file while checking the configuration (haproxy -c). */
  checked: boolean;
}

export interface AuxRef extends WordRef {
  /** 1-based line number in haproxy.cfg. */
  line: number;
}

const KIND_OF_DIR: ReadonlyMap<string, AuxKind> = new Map(
  (Object.entries(AUX_DIRS) as [AuxKind, string][]).map(([kind, dir]) => [dir, kind]),
);

const BIND_FILE_OPTIONS: Readonly<Record<string, RefBase>> = { crt: 'crt', 'crt-list': 'crt', 'ca-file': 'ca', 'crl-file': 'ca', 'ca-verify-file': 'ca' };
// A server's `crt` is only loaded when the server uses SSL, so haproxy -c may not open it.
const SERVER_FILE_OPTIONS: Readonly<Record<string, { base: RefBase; checked: boolean }>> = {
  'ca-file': { base: 'ca', checked: true },
  'crl-file': { base: 'ca', checked: true },
  crt: { base: 'crt', checked: false },
};
const HTTP_RULES = /^http-(request|response|after-response|error)$/;
const CONVERTER_FILE = /(?<![\w.-])map(?:_[a-z]+){0,2}\(\s*["']?((?:maps|general|ssl)\/[^,)"'\s]+)/g;
// Actions that name a map or ACL file; haproxy -c does not open the file for them.
const ACTION_FILE = /(?<![\w.-])(?:set-map|del-map|add-acl|del-acl)\(\s*["']?((?:maps|general|ssl)\/[^,)"'\s]+)/g;

/** The kind and name a relative path like `ssl/site.pem` names, if it is under an auxiliary directory. */
export function classify(path: string): { kind: AuxKind; name: string } | undefined {
  const slash = path.indexOf('/');
  if (slash <= 0) return undefined;
  const kind = KIND_OF_DIR.get(path.slice(0, slash));
  const name = path.slice(slash + 1);
  // A trailing slash names a directory (crt ssl/ loads every file in it).
  if (kind === undefined || name === '' || path.endsWith('/')) return undefined;
  return { kind, name };
}

/** The auxiliary file references among the words of one line. */
export function auxRefsInWords(words: readonly string[]): WordRef[] {
  const refs: WordRef[] = [];
  const keyword = words[0];
  if (keyword === undefined) return refs;
  const add = (word: number, start: number, path: string | undefined, base: RefBase, checked: boolean, bundle = false) => {
    if (path === undefined) return;
    const at = classify(path);
    if (at) refs.push({ word, start, end: start + path.length, path, ...at, base, bundle, checked });
  };
  if (keyword === 'errorfile') add(2, 0, words[2], 'none', true);
  if (keyword === 'lua-load' || keyword === 'ssl-dh-param-file') add(1, 0, words[1], 'none', true);
  if (keyword === 'lua-load-per-thread') add(1, 0, words[1], 'none', false);
  const isBind = keyword === 'bind';
  const isServer = keyword === 'server' || keyword === 'server-template' || keyword === 'default-server';
  const httpRule = HTTP_RULES.test(keyword);
  // Arguments start at word 1, so word i's previous word is i - 1 (the keyword for i = 1).
  for (let i = 2; i < words.length; i++) {
    const prev = words[i - 1]!;
    if (isBind && BIND_FILE_OPTIONS[prev] !== undefined) add(i, 0, words[i], BIND_FILE_OPTIONS[prev], true, prev === 'crt');
    else if (isServer && SERVER_FILE_OPTIONS[prev] !== undefined) {
      // default-server lines configure nothing by themselves: haproxy -c opens their files through servers only.
      const option = SERVER_FILE_OPTIONS[prev];
      add(i, 0, words[i], option.base, option.checked && keyword !== 'default-server');
    } else if (prev === '-f') add(i, 0, words[i], 'none', true);
    else if (httpRule && (prev === 'file' || prev === 'lf-file')) add(i, 0, words[i], 'none', true);
  }
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (!word.includes('map') && !word.includes('acl')) continue;
    for (const [pattern, checked] of [[CONVERTER_FILE, true], [ACTION_FILE, false]] as const) {
      for (const m of word.matchAll(pattern)) {
        const path = m[1]!;
        add(i, m.index + m[0].length - path.length, path, 'none', checked);
      }
    }
  }
  return refs;
}

/** A word of a line with, for each of its characters, the index it came from in the raw line. */
interface SpannedWord {
  text: string;
  from: number[];
}

/**
 * Splits a line into words exactly as config.ts tokenize() does (whitespace,
 * `#` comments, backslash escapes, single and double quotes), remembering where
 * each character came from. Undefined for a line with an unterminated quote.
 */
export function spannedWords(raw: string): SpannedWord[] | undefined {
  const words: SpannedWord[] = [];
  let text = '';
  let from: number[] = [];
  let inWord = false;
  let quote: '"' | "'" | undefined;
  const push = (c: string, at: number) => {
    text += c;
    from.push(at);
  };
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < raw.length) push(raw[++i]!, i);
      else push(c, i);
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < raw.length) {
      push(raw[++i]!, i);
      inWord = true;
    } else if (c === '#') {
      break;
    } else if (c === ' ' || c === '\t') {
      if (inWord) words.push({ text, from });
      text = '';
      from = [];
      inWord = false;
    } else {
      push(c, i);
      inWord = true;
    }
  }
  if (quote) return undefined;
  if (inWord) words.push({ text, from });
  return words;
}

export interface AuxRefScan {
  refs: AuxRef[];
  /** Bases that `crt-base` / `ca-base` in global move away from haproxy's working directory. */
  based: ReadonlySet<RefBase>;
  /** `default-path` (other than current or config) moves every relative path. */
  allBased: boolean;
  /** Where each line that holds a reference starts in the text, by line number. */
  lineStarts: ReadonlyMap<number, number>;
}

function splitLines(main: string): string[] {
  return main.split('\n');
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/** What one piece of haproxy.cfg holds, with lines and offsets counted from the piece's start. */
interface PieceScan {
  refs: AuxRef[];
  /** Offset of each line with a reference, by its line number in the piece. */
  lineStarts: Map<number, number>;
  /** Newlines in the piece: the lines it moves the next piece's down by. */
  lines: number;
  /** The section the piece ends in, which the next one starts in. */
  section: string;
  based: RefBase[];
  allBased: boolean;
}

function scanPiece(piece: string, section: string): PieceScan {
  const scan: PieceScan = { refs: [], lineStarts: new Map(), lines: 0, section, based: [], allBased: false };
  let offset = 0;
  for (const raw of splitLines(piece)) {
    const lineStart = offset;
    offset += raw.length + 1;
    scan.lines++;
    const words = spannedWords(stripCr(raw));
    if (!words || words.length === 0) continue;
    const texts = words.map((w) => w.text);
    const keyword = texts[0]!;
    if (isSectionKeyword(keyword)) scan.section = keyword;
    if (scan.section === 'global') {
      if (keyword === 'default-path' && texts[1] !== 'current' && texts[1] !== 'config') scan.allBased = true;
      if (keyword === 'crt-base') scan.based.push('crt');
      if (keyword === 'ca-base') scan.based.push('ca');
    }
    for (const ref of auxRefsInWords(texts)) {
      scan.refs.push({ ...ref, line: scan.lines });
      scan.lineStarts.set(scan.lines, lineStart);
    }
  }
  // The piece's last element follows its last newline: not a line of its own.
  scan.lines--;
  return scan;
}

/**
 * haproxy.cfg is scanned in the pieces its hash is made of (pieceStarts), and what each
 * piece held is kept until the next scan: a deployment scans the text the one before it
 * scanned, or that text with a few server lines changed, and at 10k Ingresses a whole
 * scan holds the event loop for some 80 ms. A piece is known by its text and the
 * section it starts in, so the result is the one a scan line by line gives. What is
 * kept refers to the last text scanned (slices of it), which its configuration holds
 * anyway.
 */
let lastPieces = new Map<string, Map<string, PieceScan>>();

function piecesOf(main: string): string[] {
  const starts = pieceStarts(main);
  return starts.map((start, i) => main.slice(start, starts[i + 1] ?? main.length));
}

/** Every auxiliary reference of haproxy.cfg, in .if blocks too, with the global base directives. */
export function findAuxRefs(main: string): AuxRefScan {
  return runSteps(auxRefSteps(main));
}

/**
 * findAuxRefs as steps (src/steps.ts), one after each piece scanned anew: a first
 * scan at 10k Ingresses (every piece new) takes some 100 ms, and a deployment runs it
 * in turns, after which the scans of the same text find every piece known.
 */
export function* auxRefSteps(main: string): Steps<AuxRefScan> {
  const refs: AuxRef[] = [];
  const lineStarts = new Map<number, number>();
  const based = new Set<RefBase>();
  let allBased = false;
  let section = '';
  let line = 0;
  let offset = 0;
  const kept = new Map<string, Map<string, PieceScan>>();
  for (const piece of piecesOf(main)) {
    let scan = lastPieces.get(piece)?.get(section) ?? kept.get(piece)?.get(section);
    if (!scan) {
      scan = scanPiece(piece, section);
      yield;
    }
    let bySection = kept.get(piece);
    if (!bySection) kept.set(piece, (bySection = new Map()));
    bySection.set(section, scan);
    for (const ref of scan.refs) refs.push({ ...ref, line: ref.line + line });
    for (const [n, at] of scan.lineStarts) lineStarts.set(n + line, at + offset);
    for (const base of scan.based) based.add(base);
    allBased ||= scan.allBased;
    section = scan.section;
    line += scan.lines;
    offset += piece.length;
  }
  lastPieces = kept;
  return { refs, based, allBased, lineStarts };
}

/** Whether a base directive sends this reference somewhere else than the rendered file. */
export function isRedirected(ref: Pick<WordRef, 'base'>, scan: Pick<AuxRefScan, 'based' | 'allBased'>): boolean {
  return scan.allBased || scan.based.has(ref.base);
}

// What a replacement path may hold: it is written into a configuration word or a file as is.
const SAFE_PATH = /^[A-Za-z0-9._/@+-]+$/;

/**
 * The path `resolve` replaces a reference's with, or undefined to leave it as it
 * is. A replacement must be a plain path (letters, digits, `._/@+-`): it is
 * written unescaped into `into` (e.g. `haproxy.cfg`), else a RangeError.
 */
export function replacementPath<R extends PathRef>(ref: R, resolve: (ref: R) => string | undefined, into: string): string | undefined {
  const replacement = resolve(ref);
  if (replacement === undefined || replacement === ref.path) return undefined;
  if (!SAFE_PATH.test(replacement)) throw new RangeError(`cannot write ${JSON.stringify(replacement)} into ${into} as a plain path`);
  return replacement;
}

export interface RewriteResult {
  text: string;
  /** How many references were replaced. */
  rewritten: number;
  /** References left alone because a base directive redirects them. */
  redirected: AuxRef[];
}

/** Quote state just before raw index `at` (outside comments). */
function quoteBefore(raw: string, at: number): '"' | "'" | undefined {
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < at; i++) {
    const c = raw[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"') i++;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '\\') i++;
  }
  return quote;
}

/**
 * Replaces each auxiliary reference that `resolve` maps to a new path, leaving
 * every other byte (and so every line number) as it was. References a base
 * directive redirects are left alone. A replacement must be a plain path
 * (letters, digits, `._/@+-`): it goes into the word unescaped.
 */
export function rewriteAuxRefs(main: string, resolve: (ref: AuxRef) => string | undefined): RewriteResult {
  const scan = findAuxRefs(main);
  const byLine = new Map<number, AuxRef[]>();
  const redirected: AuxRef[] = [];
  for (const ref of scan.refs) {
    if (isRedirected(ref, scan)) {
      redirected.push(ref);
      continue;
    }
    const list = byLine.get(ref.line) ?? [];
    list.push(ref);
    byLine.set(ref.line, list);
  }
  let rewritten = 0;
  // Only the lines that hold a reference are cut out and rewritten: the text between
  // them is passed on as slices, not split into its (at 10k Ingresses, 60k) lines.
  const changed: { from: number; to: number; text: string }[] = [];
  for (const [lineNo, refs] of byLine) {
    const start = scan.lineStarts.get(lineNo)!;
    const end = main.indexOf('\n', start);
    const full = main.slice(start, end < 0 ? main.length : end);
    const cr = full.endsWith('\r') ? '\r' : '';
    let raw = stripCr(full);
    const words = spannedWords(raw)!;
    const edits: { from: number; to: number; text: string }[] = [];
    for (const ref of refs) {
      const replacement = replacementPath(ref, resolve, 'haproxy.cfg');
      if (replacement === undefined) continue;
      const at = words[ref.word]!.from;
      const from = at[ref.start]!;
      const to = at[ref.end - 1]! + 1;
      // Quotes opened or closed inside the replaced range must keep their effect after it.
      const before = quoteBefore(raw, from);
      const after = quoteBefore(raw, to);
      let text = replacement;
      if (before !== after) text = `${text}${before ?? ''}${after ?? ''}`;
      edits.push({ from, to, text });
    }
    edits.sort((a, b) => b.from - a.from);
    for (const edit of edits) {
      raw = raw.slice(0, edit.from) + edit.text + raw.slice(edit.to);
      rewritten++;
    }
    changed.push({ from: start, to: start + full.length, text: raw + cr });
  }
  changed.sort((a, b) => a.from - b.from);
  let text = '';
  let from = 0;
  for (const line of changed) {
    text += main.slice(from, line.from) + line.text;
    from = line.to;
  }
  return { text: text + main.slice(from), rewritten, redirected };
}
