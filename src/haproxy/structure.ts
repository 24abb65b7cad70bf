/**
 * Phase one of validation: fast, pure checks on a render, before haproxy is
 * spawned. Every rule is conservative: it only reports what haproxy 2.6 -c
 * rejects too, so it never blocks a configuration haproxy would accept. Where
 * haproxy's behaviour depends on something this check cannot see (conditional
 * blocks, environment variables, log-format names, base directories) the rule
 * stays silent and leaves the verdict to haproxy.
 */
import { flatText } from '../flat-text.ts';
import type { ValidationProblem } from '../events.ts';
import { AUX_KINDS, auxPath } from '../templating/rendered.ts';
import type { RenderedFiles } from '../templating/rendered.ts';
import { type RefBase, auxRefsInWords } from './aux-refs.ts';
import { SECTION_KEYWORDS, parseConfig } from './config.ts';
import type { ConfigLine, ParseError, Section } from './config.ts';

/** The name the main configuration is written under and reported as. */
export const MAIN_FILE = 'haproxy.cfg';

/** haproxy splits a line into at most this many words and rejects longer lines. */
export const MAX_LINE_WORDS = 64;

const SECTIONS: ReadonlySet<string> = new Set(SECTION_KEYWORDS);
const NAMED_SECTIONS: ReadonlySet<string> = new Set([...SECTIONS].filter((s) => s !== 'global' && s !== 'defaults'));
const PROXIES: ReadonlySet<string> = new Set(['frontend', 'backend', 'listen']);
const NAME_CHECKED: ReadonlySet<string> = new Set([...PROXIES, 'userlist']);
// haproxy's invalid_char(): names may only hold ASCII letters, digits and . : _ -
const NAME_CHAR = /[A-Za-z0-9._:-]/;

interface FileRef {
  path: string;
  /** Which base directive redirects relative paths of this reference. */
  base: RefBase;
  /** A `crt` path may stand for a bundle of `<path>.rsa`, `.ecdsa`, `.dsa`. */
  bundle: boolean;
}

/** Files a line makes haproxy open at check time; each case was confirmed against haproxy -c. */
function fileRefs(line: ConfigLine): FileRef[] {
  return auxRefsInWords([line.keyword, ...line.args])
    .filter((ref) => ref.checked)
    .map(({ path, base, bundle }) => ({ path, base, bundle }));
}

/**
 * What the check needs of the lines of one section body (or of the lines before the
 * first section), found by tokenising them: line numbers relative to its first line.
 * Lines inside a `.if` block count as uncertain (haproxy may skip them): `depth` is the
 * nesting the body starts at, and `depthAfter` where it ends.
 */
interface Facts {
  /** Lines that could not be tokenised; too many words (checked inside `.if` blocks too). */
  errors: { at: number; message: string }[];
  words: { at: number; message: string }[];
  /** Certain lines that are not in a section: kept for the lines before the first one only. */
  lines: { at: number; keyword: string }[];
  /** Certain `use_backend` / `default_backend` lines. */
  backendRefs: { at: number; keyword: string; name: string | undefined }[];
  /** Files certain lines open. */
  fileRefs: { at: number; ref: FileRef }[];
  /** Base directives, certain or not (a global section's): they move where relative paths are read. */
  defaultPathElsewhere: boolean;
  crtBase: boolean;
  caBase: boolean;
  depthAfter: number;
}

function tooManyWords(line: ConfigLine): string | undefined {
  const words = 1 + line.args.length;
  return words > MAX_LINE_WORDS && !line.text.includes('$') ? `too many words (${words}): haproxy accepts at most ${MAX_LINE_WORDS} per line` : undefined;
}

/**
 * The facts of a section body with nothing to report, shared: at 10k backends nearly every
 * body has these, and a memo of an object each held 9 MiB in the render thread between
 * renders (under its heap cap, where every MiB kept is a MiB less for the next render).
 */
const NOTHING = Object.freeze({ errors: Object.freeze([]), words: Object.freeze([]), lines: Object.freeze([]), backendRefs: Object.freeze([]), fileRefs: Object.freeze([]), defaultPathElsewhere: false, crtBase: false, caBase: false, depthAfter: 0 }) as unknown as Facts;

function isNothing(facts: Facts): boolean {
  return facts.errors.length === 0 && facts.words.length === 0 && facts.lines.length === 0 && facts.backendRefs.length === 0 && facts.fileRefs.length === 0 && !facts.defaultPathElsewhere && !facts.crtBase && !facts.caBase && facts.depthAfter === 0;
}

/** The facts of a section body: its lines are not kept (only the lines before the first section are reported as outside one). */
function sectionFactsOf(section: Section, depth: number): Facts {
  const facts = factsOf(section.lines, section.errors, section.firstLine, depth, false);
  return isNothing(facts) ? NOTHING : facts;
}

function factsOf(lines: readonly ConfigLine[], errors: readonly ParseError[], firstLine: number, depth: number, keepLines = true): Facts {
  // What facts keep is copied flat: a memo keeps them past the configuration whose text they were cut from.
  const facts: Facts = { errors: errors.map((e) => ({ at: e.line - firstLine, message: flatText(e.message) })), words: [], lines: [], backendRefs: [], fileRefs: [], defaultPathElsewhere: false, crtBase: false, caBase: false, depthAfter: depth };
  // The header stands at the depth the body starts at: a section opened inside a .if block is uncertain throughout.
  const headerCertain = depth === 0;
  for (const line of lines) {
    const at = line.line - firstLine;
    const words = tooManyWords(line);
    if (words) facts.words.push({ at, message: flatText(words) });
    if (line.keyword === '.if') {
      depth++;
      continue;
    }
    if (line.keyword === '.endif') {
      depth = Math.max(0, depth - 1);
      continue;
    }
    if (line.keyword === 'default-path' && line.args[0] !== 'current' && line.args[0] !== 'config') facts.defaultPathElsewhere = true;
    if (line.keyword === 'crt-base') facts.crtBase = true;
    if (line.keyword === 'ca-base') facts.caBase = true;
    if (depth !== 0 || !headerCertain) continue;
    // Only the lines before the first section are listed, and those facts are never memoized.
    if (keepLines) facts.lines.push({ at, keyword: line.keyword });
    if (line.keyword === 'default_backend' || line.keyword === 'use_backend') {
      const name = line.args[0];
      facts.backendRefs.push({ at, keyword: line.keyword === 'use_backend' ? 'use_backend' : 'default_backend', name: name === undefined ? undefined : flatText(name) });
    }
    for (const { path, base, bundle } of fileRefs(line)) facts.fileRefs.push({ at, ref: { path: flatText(path), base, bundle } });
  }
  facts.depthAfter = depth;
  return facts;
}

/**
 * What the structure check found in each section body of the last configuration it
 * checked, by the body's text: a body that stands unchanged in the next configuration
 * (at 10k backends almost all of them) is not tokenised again. At 10k Ingresses that
 * was some 100 ms and 130 MiB of garbage per render in the render thread. Only the
 * last configuration's bodies are kept; give each sequence of renders its own memo.
 */
export class StructureMemo {
  private facts = new Map<string, Facts>();
  private next: Map<string, Facts> | undefined;

  /** Section bodies the last check tokenised: those it had no facts of. */
  read = 0;

  /** Facts of a body that starts outside any `.if` block. */
  factsOf(section: Section): Facts {
    let facts = this.facts.get(section.text);
    if (!facts) {
      facts = sectionFactsOf(section, 0);
      this.read++;
    }
    this.next?.set(section.text, facts);
    return facts;
  }

  begin(): void {
    this.next = new Map();
    this.read = 0;
  }

  end(): void {
    if (this.next) this.facts = this.next;
    this.next = undefined;
  }

  /** Bodies kept, for tests. */
  get size(): number {
    return this.facts.size;
  }
}

function isDynamic(name: string): boolean {
  // '%' makes use_backend a log-format expression; '$' may expand an environment variable.
  return name.includes('%') || name.includes('$');
}

function describe(type: string): string {
  return type === 'listen' ? 'listen section' : type;
}

interface Block {
  section: Section;
  /** False when the header sits inside a .if block: haproxy may skip it. */
  certain: boolean;
  facts: Facts;
}

function checkSections(orphans: Facts, blocks: readonly Block[], out: ValidationProblem[]): void {
  for (const { at, keyword } of orphans.lines) {
    if (keyword.startsWith('.')) continue;
    out.push({ file: MAIN_FILE, line: 1 + at, message: `'${keyword}' is outside any section` });
  }
  const seen = new Map<string, Block>();
  for (const block of blocks) {
    if (!block.certain) continue;
    const { type, header } = block.section;
    const name = header.args[0];
    if (NAMED_SECTIONS.has(type) && !name) {
      out.push({ file: MAIN_FILE, line: header.line, message: `'${type}' section needs a name` });
      continue;
    }
    if (name === undefined || name.includes('$')) continue;
    if (NAME_CHECKED.has(type)) {
      const bad = [...name].find((c) => !NAME_CHAR.test(c));
      if (bad !== undefined) {
        out.push({ file: MAIN_FILE, line: header.line, message: `character '${bad}' is not permitted in ${type} name '${name}'` });
        continue;
      }
    }
    if (!PROXIES.has(type)) continue;
    // A frontend and a backend may share a name; a listen section is both, so it clashes with either.
    const clashes = type === 'listen' ? ['frontend', 'backend', 'listen'] : [type, 'listen'];
    const earlier = clashes.map((t) => seen.get(`${t}\u0000${name}`)).find((b) => b !== undefined);
    if (earlier) {
      out.push({
        file: MAIN_FILE,
        line: header.line,
        message: `${describe(type)} '${name}' has the same name as ${describe(earlier.section.type)} '${name}' declared at line ${earlier.section.header.line}`,
      });
      continue;
    }
    seen.set(`${type}\u0000${name}`, block);
  }
}

function checkBackendReferences(blocks: readonly Block[], out: ValidationProblem[]): void {
  // Backends inside .if blocks count as defined: haproxy may keep them.
  const backends = new Set(blocks.filter((b) => b.section.type === 'backend' || b.section.type === 'listen').map((b) => b.section.header.args[0]));
  for (const { section, facts } of blocks) {
    // defaults only matter through the proxies that inherit them; backends ignore these keywords.
    if (section.type !== 'frontend' && section.type !== 'listen') continue;
    for (const { at, keyword, name } of facts.backendRefs) {
      if (name === undefined || isDynamic(name) || backends.has(name)) continue;
      out.push({ file: MAIN_FILE, line: section.firstLine + at, message: `${keyword} '${name}' names no backend or listen section` });
    }
  }
}

function checkFileReferences(blocks: readonly Block[], rendered: RenderedFiles, out: ValidationProblem[]): void {
  const produced = new Set<string>();
  for (const kind of AUX_KINDS) for (const name of Object.keys(rendered[kind])) produced.add(auxPath(kind, name));
  // Base directives move relative paths away from the configuration directory.
  const bases = new Set<RefBase>();
  for (const { section, facts } of blocks) {
    if (section.type !== 'global') continue;
    if (facts.defaultPathElsewhere) return;
    if (facts.crtBase) bases.add('crt');
    if (facts.caBase) bases.add('ca');
  }
  for (const { section, facts } of blocks) {
    for (const { at, ref } of facts.fileRefs) {
      if (bases.has(ref.base) || produced.has(ref.path)) continue;
      if (ref.bundle && ['.rsa', '.ecdsa', '.dsa'].some((ext) => produced.has(ref.path + ext))) continue;
      out.push({ file: MAIN_FILE, line: section.firstLine + at, message: `'${ref.path}' is not among the rendered files` });
    }
  }
}

/** Why an auxiliary file name cannot be written as one file inside its directory, if it cannot. */
export function fileNameProblem(name: string): string | undefined {
  if (name === '') return 'empty file name';
  if (name === '.' || name === '..') return `file name ${JSON.stringify(name)} is reserved`;
  if (name.includes('/')) return `file name ${JSON.stringify(name)} contains '/'`;
  // Control characters (newlines above all) cannot be written into a configuration line.
  if ([...name].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f')) return `file name ${JSON.stringify(name)} contains a control character`;
  return undefined;
}

function checkFileNames(rendered: RenderedFiles, out: ValidationProblem[]): void {
  for (const kind of AUX_KINDS) {
    for (const name of Object.keys(rendered[kind])) {
      const problem = fileNameProblem(name);
      if (problem) out.push({ file: auxPath(kind, name), message: problem });
    }
  }
}

/** Verdicts of checks made elsewhere (the render worker checks what it renders), by render. */
const remembered = new WeakMap<RenderedFiles, readonly ValidationProblem[]>();

/** Records the structure check's verdict on a render, made in another thread: checkStructure returns it. */
export function rememberStructure(rendered: RenderedFiles, problems: readonly ValidationProblem[]): void {
  remembered.set(rendered, problems);
}

/**
 * Reports obvious mistakes in a render with precise lines. It reads every line, which
 * takes a while on a large configuration: the render worker checks each render as it
 * makes it, with a memo of the last one's sections, and this returns that verdict
 * instead of checking again.
 * An empty result does not mean the configuration is valid: only haproxy can say that.
 */
export function checkStructure(rendered: RenderedFiles, memo?: StructureMemo): ValidationProblem[] {
  const known = remembered.get(rendered);
  if (known) return known.map((p) => ({ ...p }));
  const names: ValidationProblem[] = [];
  checkFileNames(rendered, names);
  const parsed = parseConfig(rendered.main);
  const orphans = factsOf(parsed.orphans, parsed.orphanErrors, 1, 0);
  const blocks: Block[] = [];
  let depth = orphans.depthAfter;
  memo?.begin();
  for (const section of parsed.sections) {
    // Word limits apply to header lines too.
    const header = tooManyWords(section.header);
    // A body that starts inside a .if block is read for this configuration alone.
    const facts = depth === 0 && memo ? memo.factsOf(section) : sectionFactsOf(section, depth);
    blocks.push({ section, certain: depth === 0, facts: header ? { ...facts, words: [{ at: section.header.line - section.firstLine, message: header }, ...facts.words] } : facts });
    depth = facts.depthAfter;
  }
  memo?.end();
  const errors = [...orphans.errors.map((e) => ({ line: 1 + e.at, message: e.message })), ...blocks.flatMap(({ section, facts }) => facts.errors.map((e) => ({ line: section.firstLine + e.at, message: e.message })))].sort((a, b) => a.line - b.line);
  const main: ValidationProblem[] = errors.map((e) => ({ file: MAIN_FILE, line: e.line, message: e.message }));
  for (const w of orphans.words) main.push({ file: MAIN_FILE, line: 1 + w.at, message: w.message });
  for (const { section, facts } of blocks) for (const w of facts.words) main.push({ file: MAIN_FILE, line: section.firstLine + w.at, message: w.message });
  checkSections(orphans, blocks, main);
  checkBackendReferences(blocks, main);
  checkFileReferences(blocks, rendered, main);
  main.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  return [...names, ...main];
}
