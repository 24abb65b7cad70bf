import { JSONPath } from 'jsonpath-plus';
import type { KubeObject } from './resource.ts';

/** A compiled label or field selector: a predicate over objects. */
export type Selector = (object: KubeObject) => boolean;

export type SelectorResult = { ok: true; matches: Selector } | { ok: false; message: string };

type LabelTerm =
  | { op: '=' | '!='; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: Set<string> }
  | { op: 'exists' | '!exists'; key: string };

/**
 * Parses a Kubernetes label selector (`app=web,tier!=db,env in (a,b),!legacy,track`),
 * as the API server would apply it, for sources that filter on the client side.
 */
export function labelSelector(text: string | undefined): SelectorResult {
  if (!text || !text.trim()) return { ok: true, matches: () => true };
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
  return {
    ok: true,
    matches: (object) => {
      const labels = object.metadata.labels ?? {};
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
    },
  };
}

/**
 * Parses a field filter: comma-separated `path=value` or `path!=value`, where path is
 * a dotted field path (`metadata.namespace`, `spec.ingressClassName`) or a JSONPath.
 */
export function fieldSelector(text: string | undefined): SelectorResult {
  if (!text || !text.trim()) return { ok: true, matches: () => true };
  const terms: { path: string; negate: boolean; value: string }[] = [];
  for (const raw of text.split(',')) {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(raw);
    if (!m) return { ok: false, message: `cannot parse field selector term "${raw.trim()}"` };
    const path = m[1]!.startsWith('$') ? m[1]! : `$.${m[1]!}`;
    terms.push({ path, negate: m[2] === '!=', value: m[3]! });
  }
  return {
    ok: true,
    matches: (object) =>
      terms.every(({ path, negate, value }) => {
        const found = (JSONPath({ path, json: object, wrap: true }) as unknown[]).map((v) => (v === null || v === undefined ? '' : String(v)));
        const equal = found.length === 0 ? value === '' : found.includes(value);
        return negate ? !equal : equal;
      }),
  };
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
