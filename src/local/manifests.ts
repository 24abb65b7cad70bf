import { createHash } from 'node:crypto';
import { parseAllDocuments } from 'yaml';
import type { WatchedResource } from '../config/controller-config.ts';
import type { KubeObject } from '../k8s/resource.ts';
import { type Selector, fieldSelector, labelSelector } from '../k8s/selector.ts';

export interface ManifestProblem {
  file: string;
  line?: number;
  message: string;
}

export type ParsedManifests = { ok: true; objects: KubeObject[] } | { ok: false; problem: ManifestProblem };

/**
 * Parses a multi-document YAML (or JSON) file of Kubernetes objects. `List` kinds are
 * flattened. One bad document fails the whole file, so that a half-read file never
 * replaces what the file held before.
 */
export function parseManifests(file: string, text: string): ParsedManifests {
  const documents = parseAllDocuments(text, { prettyErrors: false });
  const objects: KubeObject[] = [];
  const lines = lineCounter(text);
  for (const doc of Array.isArray(documents) ? documents : [documents]) {
    const error = doc.errors[0];
    if (error) return { ok: false, problem: { file, line: lines(error.pos[0]), message: error.message.split('\n')[0]! } };
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const start = doc.contents?.range?.[0] ?? doc.range[0];
    const items = isObject(value) && value.kind === 'List' && Array.isArray(value.items) ? (value.items as unknown[]) : [value];
    for (const item of items) {
      const problem = objectProblem(item);
      if (problem) return { ok: false, problem: { file, line: lines(start), message: problem } };
      const object = item as KubeObject;
      // A content hash stands in for the resourceVersion, so re-reading an unchanged
      // file changes nothing downstream.
      object.metadata.resourceVersion ??= createHash('sha256').update(JSON.stringify(object)).digest('hex').slice(0, 16);
      objects.push(object);
    }
  }
  return { ok: true, objects };
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
}

/** Compiles the watched sets into predicates; a bad selector is reported with its set. */
export function compileWatches(watch: readonly WatchedResource[]): { ok: true; watches: CompiledWatch[] } | { ok: false; message: string } {
  const watches: CompiledWatch[] = [];
  for (const w of watch) {
    const labels = labelSelector(w.labelSelector);
    if (!labels.ok) return { ok: false, message: `watch ${w.name}: ${labels.message}` };
    const fields = fieldSelector(w.fieldSelector);
    if (!fields.ok) return { ok: false, message: `watch ${w.name}: ${fields.message}` };
    const selectors: Selector[] = [labels.matches, fields.matches];
    watches.push({
      name: w.name,
      matches: (o) =>
        o.apiVersion === w.apiVersion &&
        o.kind !== undefined &&
        pluralOf(o.kind) === w.resource &&
        (w.namespace === undefined || o.metadata.namespace === w.namespace) &&
        selectors.every((s) => s(o)),
    });
  }
  return { ok: true, watches };
}
