import { hash } from 'node:crypto';
import { CORE_SCHEMA, YAMLException, loadAll } from 'js-yaml';
import type { WatchedResource } from '../config/controller-config.ts';
import type { KubeObject } from '../k8s/resource.ts';
import { textDigest } from '../text-digest.ts';
import { type Verdict, fieldSelector, labelSelector } from '../k8s/selector.ts';
import { runInTurns } from '../turns.ts';
import type { Steps } from '../steps.ts';

export interface ManifestProblem {
  file: string;
  line?: number;
  message: string;
}

/** A document left out because it is larger than an object may be; the rest of the file was read. */
export interface SkippedDocument {
  line: number;
  bytes: number;
  /** What the document's first lines say it is, when they say it plainly. */
  object: { kind?: string; namespace?: string; name?: string };
  message: string;
}

/**
 * What each document of a file gave, in the file's order, with a digest of its text:
 * read again, the file's unchanged documents are taken from here instead of parsed
 * again. Kept for every file while haprx runs (30k documents at 10k Ingresses), so
 * compact: two arrays, and a document's one object held as itself, not in an array.
 */
export interface ParsedDocuments {
  readonly digests: readonly string[];
  readonly gave: readonly (KubeObject | readonly KubeObject[])[];
}

export type ParsedManifests = { ok: true; objects: KubeObject[]; skipped: SkippedDocument[]; documents: ParsedDocuments } | { ok: false; problem: ManifestProblem };

/**
 * The API server refuses objects above about 1.5 MiB (etcd's default request limit),
 * so a larger document in a manifest is a mistake, and parsing it would cost many
 * times its size in memory.
 */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;

/**
 * Parses a multi-document YAML (or JSON) file of Kubernetes objects, one document at
 * a time, so that memory follows the largest document and not the file. `List` kinds
 * are flattened. A document above `maxObjectBytes` is skipped and described; any other
 * bad document fails the whole file, so that a half-read file never replaces what the
 * file held before.
 *
 * `readBack: false` keeps each object as the parser made it instead of reading it back
 * from its JSON: for a caller that sends the objects on as JSON text (parse-wire.ts),
 * where the receiver's own JSON.parse makes them compact.
 */
export function parseManifests(file: string, text: string, maxObjectBytes = MAX_OBJECT_BYTES, known?: ParsedDocuments, options: { readBack?: boolean } = {}): ParsedManifests {
  const steps = manifestSteps(file, text, maxObjectBytes, known, options.readBack ?? true);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * As parseManifests, giving the event loop a turn whenever parsing has held it for
 * `sliceMs`: a file of thirty thousand documents takes a second or more to read, and
 * health probes, watches and deployments must not wait for it.
 */
export async function parseManifestsInSlices(file: string, text: string, maxObjectBytes = MAX_OBJECT_BYTES, sliceMs = 10, known?: ParsedDocuments): Promise<ParsedManifests> {
  return runInTurns(manifestSteps(file, text, maxObjectBytes, known), sliceMs);
}

/** Aliases a document may hold: each is a reference, and a few can stand for an exponential amount of data. */
const MAX_ALIASES = 100;

/**
 * Parses the documents one by one, yielding after each. A document whose text `known`
 * has (the file as it was read before) gives the objects it gave then: a file of a
 * thousand objects of which one changed is parsed for that one (parsing is what reading
 * a file costs, and its garbage what the collector then spends on).
 */
function* manifestSteps(file: string, text: string, maxObjectBytes: number, known: ParsedDocuments | undefined, readBack = true): Steps<ParsedManifests> {
  const objects: KubeObject[] = [];
  const skipped: SkippedDocument[] = [];
  const digests: string[] = [];
  const gave: (KubeObject | readonly KubeObject[])[] = [];
  const lines = lineCounter(text);
  const reuse = knownDocuments(known);
  for (const { start, end } of documentRanges(text)) {
    yield;
    const source = text.slice(start, end);
    const bytes = Buffer.byteLength(source);
    if (bytes > maxObjectBytes) {
      const object = identify(source.slice(0, 64 * 1024));
      const what = object.kind || object.name ? `${object.kind ?? 'object'} ${object.namespace ? `${object.namespace}/` : ''}${object.name ?? '(no name)'}` : 'a document';
      skipped.push({ line: lines(start), bytes, object, message: `${what} is ${mib(bytes)}, more than the ${mib(maxObjectBytes)} an object may be; skipped` });
      continue;
    }
    const digest = textDigest(source);
    const reused = reuse(digests.length, digest);
    if (reused !== undefined) {
      if (Array.isArray(reused)) objects.push(...(reused as readonly KubeObject[]));
      else objects.push(reused as KubeObject);
      digests.push(digest);
      gave.push(reused);
      continue;
    }
    const made: KubeObject[] = [];
    const parsed = parseDocuments(source);
    if ('error' in parsed) return { ok: false, problem: { file, line: lines(start + parsed.at), message: parsed.error } };
    const at = start + contentStart(source);
    for (const value of parsed.values) {
      if (value === null || value === undefined) continue;
      const items = isObject(value) && value.kind === 'List' && Array.isArray(value.items) ? (value.items as unknown[]) : [value];
      for (const item of items) {
        const problem = objectProblem(item);
        if (problem) return { ok: false, problem: { file, line: lines(at), message: problem } };
        const json = JSON.stringify(item);
        // Read back from its JSON, an object is compact, with short strings shared, and
        // holds no slice of the file's text (which would keep the whole file alive).
        const object = (parsed.json || !readBack ? item : JSON.parse(json)) as KubeObject;
        // A content hash stands in for the resourceVersion, so re-reading an unchanged
        // file changes nothing downstream.
        object.metadata.resourceVersion ??= hash('sha256', json).slice(0, 16);
        made.push(object);
      }
    }
    objects.push(...made);
    digests.push(digest);
    gave.push(made.length === 1 ? made[0]! : made);
  }
  return { ok: true, objects, skipped, documents: { digests, gave } };
}

/**
 * What a document gave when the file was read before, by its place and digest: a
 * document is most often where it was, and otherwise found by digest (documents
 * moved, inserted or removed above it), through an index made only then.
 */
function knownDocuments(known: ParsedDocuments | undefined): (at: number, digest: string) => KubeObject | readonly KubeObject[] | undefined {
  let byDigest: Map<string, number> | undefined;
  return (at, digest) => {
    if (!known) return undefined;
    if (known.digests[at] === digest) return known.gave[at];
    byDigest ??= new Map(known.digests.map((d, i) => [d, i]));
    const i = byDigest.get(digest);
    return i === undefined ? undefined : known.gave[i];
  };
}

/**
 * The documents of one stretch of a YAML stream, with the YAML 1.2 core schema (what
 * kubectl reads: no timestamps or merge keys). A document that is JSON is read as
 * JSON, many times faster; anything JSON.parse refuses goes to the YAML parser, which
 * also reads JSON and says where a mistake is.
 */
function parseDocuments(source: string): { values: unknown[]; json: boolean } | { error: string; at: number } {
  const first = /\S/.exec(source);
  if (first?.[0] === '{') {
    try {
      return { values: [JSON.parse(source)], json: true };
    } catch {
      // Not plain JSON (a comment, a YAML flow mapping): the YAML parser decides.
    }
  }
  try {
    return { values: loadAll(source, { schema: CORE_SCHEMA, maxAliases: MAX_ALIASES }), json: false };
  } catch (err) {
    const mark = (err as YAMLException).mark;
    const reason = err instanceof YAMLException ? err.reason : err instanceof Error ? err.message : String(err);
    return { error: reason.split('\n')[0]!, at: mark?.position ?? 0 };
  }
}

/** Where a document's content starts: after blank and comment lines, directives and the `---` marker. */
function contentStart(source: string): number {
  const skip = /^(?:[ \t]*(?:#.*)?(?:\r?\n|$)|%.*(?:\r?\n|$)|---[ \t]*(?:#.*)?(?:\r?\n|$))*(?:---[ \t]+)?/.exec(source);
  return Math.min(skip?.[0].length ?? 0, Math.max(0, source.length - 1));
}

/**
 * Where each document of a YAML stream starts and ends, without parsing it: a `---`
 * at the start of a line always opens a document (YAML forbids it inside a scalar at
 * that position). Directives (`%YAML`) stay with the document they precede.
 */
function documentRanges(text: string): { start: number; end: number }[] {
  const starts = [0];
  for (const match of text.matchAll(/^---(?=[ \t\r\n]|$)/gm)) if (match.index > 0) starts.push(match.index);
  const ranges: { start: number; end: number }[] = [];
  let from: number | undefined;
  for (let i = 0; i < starts.length; i++) {
    const start = from ?? starts[i]!;
    const end = starts[i + 1] ?? text.length;
    from = undefined;
    if (end < text.length && onlyDirectives(text.slice(starts[i], end))) from = start;
    else ranges.push({ start, end });
  }
  return ranges;
}

function onlyDirectives(text: string): boolean {
  return /^%/m.test(text) && text.split('\n').every((line) => /^(%.*|#.*|\.\.\.\s*|\s*)$/.test(line));
}

/** Kind, namespace and name from the top of a document, read by pattern: enough to name it in a message. */
function identify(head: string): SkippedDocument['object'] {
  const plain = (s: string | undefined) => s?.replace(/^["']|["']$/g, '');
  const kind = plain(/^kind:[ \t]*(\S+)/m.exec(head)?.[1]);
  let metadata = '';
  // Flow style: `metadata: {name: x, namespace: y, ...}`, possibly cut off by the head's end.
  const flow = /^metadata:[ \t]*\{(.*)$/m.exec(head);
  if (flow) metadata = flow[1]!.split(',').map((p) => p.trim()).join('\n');
  else {
    const block = /^metadata:[ \t]*\r?\n((?:[ \t]+.*\r?\n?)*)/m.exec(head);
    const indent = block ? /^[ \t]+/.exec(block[1]!)?.[0] : undefined;
    if (block && indent) metadata = block[1]!.split('\n').filter((l) => l.startsWith(indent) && !/^[ \t]/.test(l.slice(indent.length))).map((l) => l.slice(indent.length)).join('\n');
  }
  const field = (name: string) => plain(new RegExp(`^${name}:[ \\t]*([^\\s#,{}[\\]]+)`, 'm').exec(metadata)?.[1]);
  const name = field('name');
  const namespace = field('namespace');
  return { ...(kind && { kind }), ...(namespace && { namespace }), ...(name && { name }) };
}

/** A size for messages. */
export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function objectProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'a document must be a Kubernetes object';
  if (typeof value.apiVersion !== 'string' || !value.apiVersion) return 'the object has no apiVersion';
  if (typeof value.kind !== 'string' || !value.kind) return 'the object has no kind';
  const metadata = value.metadata;
  if (!isObject(metadata) || typeof metadata.name !== 'string' || !metadata.name) return `the ${value.kind} has no metadata.name`;
  if (metadata.namespace !== undefined && typeof metadata.namespace !== 'string') return `the ${value.kind} ${metadata.name} has a metadata.namespace that is not a string`;
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Line numbers of offsets, computed only when a problem needs one (a large file has thousands of documents). */
function lineCounter(text: string): (offset: number) => number {
  let starts: number[] | undefined;
  return (offset) => {
    if (!starts) {
      starts = [0];
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    }
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

/** The plural resource name the API server gives a kind by default. */
export function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower === 'endpoints') return lower;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

export interface CompiledWatch {
  name: string;
  matches(object: KubeObject): boolean;
  /** As matches, and why a selector could not be evaluated on the object, when that is why it does not match. */
  test(object: KubeObject): Verdict;
}

/** Compiles the watched sets into predicates; a bad selector is reported with its set. */
export function compileWatches(watch: readonly WatchedResource[]): { ok: true; watches: CompiledWatch[] } | { ok: false; message: string } {
  const watches: CompiledWatch[] = [];
  for (const w of watch) {
    const labels = labelSelector(w.labelSelector);
    if (!labels.ok) return { ok: false, message: `watch ${w.name}: ${labels.message}` };
    const fields = fieldSelector(w.fieldSelector);
    if (!fields.ok) return { ok: false, message: `watch ${w.name}: ${fields.message}` };
    const test = (o: KubeObject): Verdict => {
      const ofSet = o.apiVersion === w.apiVersion && o.kind !== undefined && pluralOf(o.kind) === w.resource && (w.namespace === undefined || o.metadata.namespace === w.namespace);
      if (!ofSet || !labels.matches(o)) return { match: false };
      return fields.test(o);
    };
    watches.push({ name: w.name, matches: (o) => test(o).match, test });
  }
  return { ok: true, watches };
}
