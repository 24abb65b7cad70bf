import { type CompiledPath, compilePath } from './json-path.ts';
import type { KubeObject } from './resource.ts';

/** A compiled label or field selector: a predicate over objects; never throws. */
export type Selector = (object: KubeObject) => boolean;

/** Whether an object matches, and why it could not be evaluated, when that is why it does not. */
export interface Verdict {
  match: boolean;
  problem?: string;
}

export type SelectorResult = { ok: true; matches: Selector; test: (object: KubeObject) => Verdict } | { ok: false; message: string };

const ALL: SelectorResult = { ok: true, matches: () => true, test: () => ({ match: true }) };

type LabelTerm =
  | { op: '=' | '!='; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: Set<string> }
  | { op: 'exists' | '!exists'; key: string };

/**
 * Parses a Kubernetes label selector (`app=web,tier!=db,env in (a,b),!legacy,track`),
 * as the API server would apply it, for sources that filter on the client side.
 */
export function labelSelector(text: string | undefined): SelectorResult {
  if (!text || !text.trim()) return ALL;
  const terms: LabelTerm[] = [];
  for (const raw of splitTerms(text)) {
    const term = raw.trim();
    let m: RegExpExecArray | null;
    if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term))) {
      terms.push({ op: m[2] as 'in' | 'notin', key: m[1]!, values: new Set(m[3]!.split(',').map((v) => v.trim()).filter(Boolean)) });
    } else if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(term))) {
      terms.push({ op: m[2] === '!=' ? '!=' : '=', key: m[1]!, value: m[3]! });
    } else if ((m = /^!\s*([\w./-]+)$/.exec(term))) {
      terms.push({ op: '!exists', key: m[1]! });
    } else if ((m = /^([\w./-]+)$/.exec(term))) {
      terms.push({ op: 'exists', key: m[1]! });
    } else {
      return { ok: false, message: `cannot parse label selector term "${term}"` };
    }
  }
  const matches: Selector = (object) => {
    const found: unknown = object?.metadata?.labels;
    const labels: Record<string, string> = found !== null && typeof found === 'object' ? (found as Record<string, string>) : {};
    return terms.every((t) => {
      const has = Object.hasOwn(labels, t.key);
      const value = labels[t.key];
      switch (t.op) {
        case '=':
          return has && value === t.value;
        case '!=':
          return !has || value !== t.value;
        case 'in':
          return has && t.values.has(value!);
        case 'notin':
          return !has || !t.values.has(value!);
        case 'exists':
          return has;
        case '!exists':
          return !has;
      }
    });
  };
  return { ok: true, matches, test: (object) => ({ match: matches(object) }) };
}

/**
 * Parses a field filter: comma-separated `path=value` or `path!=value`, where path is
 * a dotted field path (`metadata.namespace`, `spec.ingressClassName`) or a JSONPath,
 * compiled here. An object a path cannot be evaluated on does not match, and its
 * verdict says why.
 */
export function fieldSelector(text: string | undefined): SelectorResult {
  if (!text || !text.trim()) return ALL;
  const terms: { path: CompiledPath; negate: boolean; value: string }[] = [];
  for (const raw of text.split(',')) {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(raw);
    if (!m) return { ok: false, message: `cannot parse field selector term "${raw.trim()}"` };
    const path = compilePath(m[1]!.startsWith('$') ? m[1]! : `$.${m[1]!}`);
    if (!path.ok) return { ok: false, message: `field selector term "${raw.trim()}": ${path.message}` };
    terms.push({ path: path.path, negate: m[2] === '!=', value: m[3]! });
  }
  const test = (object: KubeObject): Verdict => {
    for (const { path, negate, value } of terms) {
      const found = path.values(object);
      if (!found.ok) return { match: false, problem: `fieldSelector ${found.message}` };
      const texts = found.values.map((v) => (v === null || v === undefined ? '' : String(v)));
      const equal = texts.length === 0 ? value === '' : texts.includes(value);
      if (negate === equal) return { match: false };
    }
    return { match: true };
  };
  return { ok: true, matches: (object) => test(object).match, test };
}

/** Splits on commas that are not inside `( … )`. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const c of text) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += c;
  }
  terms.push(current);
  return terms.filter((t) => t.trim());
}
