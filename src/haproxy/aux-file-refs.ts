/**
 * References to rendered files from inside other auxiliary files, and how to
 * rewrite them as haproxy.cfg's are rewritten (aux-refs.ts). Two kinds of file
 * name other files:
 * - crt-lists, found through haproxy.cfg (`bind … crt-list <file>`): each entry
 *   starts with a certificate path and may carry `ca-file`, `crl-file` and
 *   `ca-verify-file` paths among its `[…]` options;
 * - files a template marks with `h.referencesFiles()`: every `maps/<name>`,
 *   `general/<name>` or `ssl/<name>` in them that names a rendered file.
 * Pure: no IO.
 */
import { type AuxKind, type RenderedConfig, auxPath } from '../templating/rendered.ts';
import { type PathRef, type RefBase, classify, findAuxRefs, isRedirected, replacementPath, spannedWords } from './aux-refs.ts';

/** A reference in an auxiliary file; its offsets are character offsets in the file's text. */
export type FileRef = PathRef;

export type ReferencingKind = 'crt-list' | 'marked';

/** A file whose content names other files. */
export interface ReferencingFile {
  kind: AuxKind;
  name: string;
  as: ReferencingKind;
}

/** A rendered file's path: one of the auxiliary directories, then a plain name. */
function fileOf(path: string): { kind: AuxKind; name: string } | undefined {
  const found = classify(path);
  return found && !found.name.includes('/') ? found : undefined;
}

const CRT_LIST_PATH_OPTIONS: Readonly<Record<string, RefBase>> = { 'ca-file': 'ca', 'crl-file': 'ca', 'ca-verify-file': 'ca' };

/**
 * The file references of a crt-list, as haproxy 2.6 reads one: a line is split
 * on blanks (no quoting), `#` starts a comment line, the first word is the
 * certificate and `[` … `]` encloses per-entry bind options.
 */
export function crtListRefs(text: string): FileRef[] {
  const refs: FileRef[] = [];
  let offset = 0;
  for (const line of text.split('\n')) {
    const lineStart = offset;
    offset += line.length + 1;
    if (/^\s*(#|$)/.test(line)) continue;
    const words = [...line.matchAll(/\S+/g)].map((m) => ({ text: m[0], at: lineStart + m.index }));
    const add = (word: { text: string; at: number } | undefined, base: RefBase, strip = false) => {
      if (!word) return;
      let { text: path, at } = word;
      if (strip) {
        // Bracketed options may touch their brackets: `[ca-file ssl/ca.pem]`.
        const lead = /^\[*/.exec(path)![0].length;
        path = path.slice(lead).replace(/\]+$/, '');
        at += lead;
      }
      const found = fileOf(path);
      if (found) refs.push({ start: at, end: at + path.length, path, ...found, base });
    };
    add(words[0], 'crt');
    let inOptions = false;
    for (let i = 1; i < words.length; i++) {
      const word = words[i]!.text;
      if (word.startsWith('[')) inOptions = true;
      if (inOptions) {
        const option = word.replace(/^\[+/, '').replace(/\]+$/, '');
        const base = CRT_LIST_PATH_OPTIONS[option];
        if (base !== undefined && !word.endsWith(']')) add(words[i + 1], base, true);
      }
      if (word.endsWith(']')) inOptions = false;
    }
  }
  return refs;
}

// A path naming a rendered file, standing alone: no path character right before or after it.
const MARKED_PATH = /(?<![A-Za-z0-9._/-])(?:maps|general|ssl)\/[A-Za-z0-9._-]+/g;

/** The references in a marked file: each `<dir>/<name>` that names a file of the render. */
export function markedFileRefs(text: string, files: Pick<RenderedConfig, AuxKind>): FileRef[] {
  const refs: FileRef[] = [];
  for (const m of text.matchAll(MARKED_PATH)) {
    // A sentence may end right after a path: `see ssl/a.pem.`
    const path = m[0].replace(/\.+$/, '');
    const found = fileOf(path);
    if (!found || files[found.kind][found.name] === undefined) continue;
    refs.push({ start: m.index, end: m.index + path.length, path, ...found, base: 'none' });
  }
  return refs;
}

/** The auxiliary files of a render whose content names other files: crt-lists haproxy.cfg names, and marked files. */
export function referencingFiles(config: RenderedConfig): Map<string, ReferencingFile> {
  const found = new Map<string, ReferencingFile>();
  let lines: string[] | undefined;
  for (const ref of findAuxRefs(config.main).refs) {
    if (ref.base !== 'crt' || ref.bundle || config[ref.kind][ref.name] === undefined) continue;
    const key = auxPath(ref.kind, ref.name);
    lines ??= config.main.split('\n');
    if (!found.has(key) && isCrtListRef(lines[ref.line - 1] ?? '', ref.word)) found.set(key, { kind: ref.kind, name: ref.name, as: 'crt-list' });
  }
  for (const path of config.referencing ?? []) {
    const at = fileOf(path);
    if (at && config[at.kind][at.name] !== undefined && !found.has(path)) found.set(path, { ...at, as: 'marked' });
  }
  return found;
}

/**
 * A map `config` changes from `previous` whose content names other files (a crt-list,
 * or a marked file): it cannot go by runtime map commands, since what it names must
 * be rewritten to where the files are stored. Which files name others takes a scan
 * of all of haproxy.cfg (some 80 ms at 10k Ingresses), so it is asked only when a map
 * changed: an endpoint change, the most frequent, changes none.
 */
export function changedReferencingMap(previous: Pick<RenderedConfig, 'maps'>, config: RenderedConfig, referencing: (config: RenderedConfig) => ReadonlyMap<string, unknown> = referencingFiles): string | undefined {
  const changed = Object.keys(config.maps).filter((name) => previous.maps[name] !== config.maps[name]);
  if (changed.length === 0) return undefined;
  const named = referencing(config);
  return changed.find((name) => named.has(auxPath('maps', name)));
}

function isCrtListRef(line: string, word: number): boolean {
  const words = spannedWords(line.replace(/\r$/, ''));
  return words?.[0]?.text === 'bind' && words[word - 1]?.text === 'crt-list';
}

/**
 * The content of a referencing file with each reference that `resolve` maps
 * replaced. References a `crt-base` or `ca-base` of haproxy.cfg redirects are
 * left alone, as in haproxy.cfg.
 */
export function rewriteFileRefs(
  text: string,
  as: ReferencingKind,
  files: Pick<RenderedConfig, AuxKind | 'main'>,
  resolve: (ref: FileRef) => string | undefined,
): string {
  const scan = findAuxRefs(files.main);
  const refs = as === 'crt-list' ? crtListRefs(text) : markedFileRefs(text, files);
  let out = '';
  let at = 0;
  for (const ref of refs) {
    if (isRedirected(ref, scan)) continue;
    const replacement = replacementPath(ref, resolve, `a ${as} file`);
    if (replacement === undefined) continue;
    out += text.slice(at, ref.start) + replacement;
    at = ref.end;
  }
  return out + text.slice(at);
}
