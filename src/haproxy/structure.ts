/**
 * Phase one of validation: fast, pure checks on a render, before haproxy is
 * spawned. Every rule is conservative: it only reports what haproxy 2.6 -c
 * rejects too, so it never blocks a configuration haproxy would accept. Where
 * haproxy's behaviour depends on something this check cannot see (conditional
 * blocks, environment variables, log-format names, base directories) the rule
 * stays silent and leaves the verdict to haproxy.
 */
import type { ValidationProblem } from '../events.ts';
import { AUX_KINDS, auxPath } from '../templating/rendered.ts';
import type { RenderedFiles } from '../templating/rendered.ts';
import { type RefBase, auxRefsInWords } from './aux-refs.ts';
import { SECTION_KEYWORDS, parseConfig } from './config.ts';
import type { ConfigLine } from './config.ts';

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

interface Block {
  type: string;
  name: string | undefined;
  header: ConfigLine;
  /** False when the header sits inside a .if block: haproxy may skip it. */
  certain: boolean;
  lines: { line: ConfigLine; certain: boolean }[];
}

interface Layout {
  orphans: { line: ConfigLine; certain: boolean }[];
  blocks: Block[];
}

/** Re-segments the parser's lines to track .if/.endif nesting: lines inside a false block may be skipped by haproxy. */
function layout(source: string): { layout: Layout; errors: ValidationProblem[] } {
  const parsed = parseConfig(source);
  const all: ConfigLine[] = [...parsed.orphans];
  for (const s of parsed.sections) all.push(s.header, ...s.lines);
  const result: Layout = { orphans: [], blocks: [] };
  let depth = 0;
  let current: Block | undefined;
  for (const line of all) {
    if (line.keyword === '.if') {
      depth++;
      continue;
    }
    if (line.keyword === '.endif') {
      depth = Math.max(0, depth - 1);
      continue;
    }
    const certain = depth === 0;
    if (SECTIONS.has(line.keyword)) {
      current = { type: line.keyword, name: line.args[0], header: line, certain, lines: [] };
      result.blocks.push(current);
    } else if (current) {
      current.lines.push({ line, certain: certain && current.certain });
    } else {
      result.orphans.push({ line, certain });
    }
  }
  const errors: ValidationProblem[] = parsed.errors.map((e) => ({ file: MAIN_FILE, line: e.line, message: e.message }));
  // Word limits apply to every line, inside false .if blocks too.
  for (const line of all) {
    const words = 1 + line.args.length;
    if (words > MAX_LINE_WORDS && !line.text.includes('$')) {
      errors.push({ file: MAIN_FILE, line: line.line, message: `too many words (${words}): haproxy accepts at most ${MAX_LINE_WORDS} per line` });
    }
  }
  return { layout: result, errors };
}

function isDynamic(name: string): boolean {
  // '%' makes use_backend a log-format expression; '$' may expand an environment variable.
  return name.includes('%') || name.includes('$');
}

function describe(type: string): string {
  return type === 'listen' ? 'listen section' : type;
}

function checkSections(l: Layout, out: ValidationProblem[]): void {
  for (const { line, certain } of l.orphans) {
    if (!certain || line.keyword.startsWith('.')) continue;
    out.push({ file: MAIN_FILE, line: line.line, message: `'${line.keyword}' is outside any section` });
  }
  const seen = new Map<string, Block>();
  for (const block of l.blocks) {
    if (!block.certain) continue;
    const { type, name, header } = block;
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
        message: `${describe(type)} '${name}' has the same name as ${describe(earlier.type)} '${name}' declared at line ${earlier.header.line}`,
      });
      continue;
    }
    seen.set(`${type}\u0000${name}`, block);
  }
}

function checkBackendReferences(l: Layout, out: ValidationProblem[]): void {
  // Backends inside .if blocks count as defined: haproxy may keep them.
  const backends = new Set(l.blocks.filter((b) => b.type === 'backend' || b.type === 'listen').map((b) => b.name));
  for (const block of l.blocks) {
    // defaults only matter through the proxies that inherit them; backends ignore these keywords.
    if (block.type !== 'frontend' && block.type !== 'listen') continue;
    for (const { line, certain } of block.lines) {
      if (!certain || (line.keyword !== 'default_backend' && line.keyword !== 'use_backend')) continue;
      const name = line.args[0];
      if (name === undefined || isDynamic(name) || backends.has(name)) continue;
      out.push({ file: MAIN_FILE, line: line.line, message: `${line.keyword} '${name}' names no backend or listen section` });
    }
  }
}

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

function checkFileReferences(l: Layout, rendered: RenderedFiles, out: ValidationProblem[]): void {
  const produced = new Set<string>();
  for (const kind of AUX_KINDS) for (const name of Object.keys(rendered[kind])) produced.add(auxPath(kind, name));
  // Base directives move relative paths away from the configuration directory.
  let allBases = false;
  const bases = new Set<RefBase>();
  for (const block of l.blocks) {
    if (block.type !== 'global') continue;
    for (const { line } of block.lines) {
      if (line.keyword === 'default-path' && line.args[0] !== 'current' && line.args[0] !== 'config') allBases = true;
      if (line.keyword === 'crt-base') bases.add('crt');
      if (line.keyword === 'ca-base') bases.add('ca');
    }
  }
  if (allBases) return;
  for (const block of l.blocks) {
    for (const { line, certain } of block.lines) {
      if (!certain) continue;
      for (const ref of fileRefs(line)) {
        if (bases.has(ref.base) || produced.has(ref.path)) continue;
        if (ref.bundle && ['.rsa', '.ecdsa', '.dsa'].some((ext) => produced.has(ref.path + ext))) continue;
        out.push({ file: MAIN_FILE, line: line.line, message: `'${ref.path}' is not among the rendered files` });
      }
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
 * makes it, and this returns that verdict instead of checking again.
 * An empty result does not mean the configuration is valid: only haproxy can say that.
 */
export function checkStructure(rendered: RenderedFiles): ValidationProblem[] {
  const known = remembered.get(rendered);
  if (known) return known.map((p) => ({ ...p }));
  const names: ValidationProblem[] = [];
  checkFileNames(rendered, names);
  const { layout: l, errors } = layout(rendered.main);
  const main: ValidationProblem[] = [...errors];
  checkSections(l, main);
  checkBackendReferences(l, main);
  checkFileReferences(l, rendered, main);
  main.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  return [...names, ...main];
}
