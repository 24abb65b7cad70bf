/**
 * Label and field selectors as the Kubernetes API server double applies them. This
 * is written apart from src/k8s/selector.ts on purpose: the double must not share
 * the code it checks.
 */
type Obj = { metadata: { name: string; namespace?: string; labels?: Record<string, string> } };

export type Matcher = (object: Obj) => boolean;
export type Parsed = { ok: true; matches: Matcher } | { ok: false; message: string };

/** `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, joined by commas. */
export function parseLabelSelector(text: string | null): Parsed {
  if (text === null || text.trim() === '') return { ok: true, matches: () => true };
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  const checks: Matcher[] = [];
  for (const part of parts.map((p) => p.trim())) {
    const set = /^(\S+)\s+(in|notin)\s+\((.*)\)$/.exec(part);
    const eq = /^([^!=\s]+)\s*(=|==|!=)\s*(\S*)$/.exec(part);
    const not = /^!\s*(\S+)$/.exec(part);
    if (set) {
      const [, key, op, list] = set as unknown as [string, string, string, string];
      const values = new Set(list.split(',').map((v) => v.trim()));
      checks.push((o) => {
        const v = o.metadata.labels?.[key];
        return op === 'in' ? v !== undefined && values.has(v) : v === undefined || !values.has(v);
      });
    } else if (eq) {
      const [, key, op, value] = eq as unknown as [string, string, string, string];
      checks.push((o) => {
        const v = o.metadata.labels?.[key];
        return op === '!=' ? v !== value : v === value;
      });
    } else if (not) {
      const key = not[1]!;
      checks.push((o) => o.metadata.labels?.[key] === undefined);
    } else if (/^[A-Za-z0-9][-A-Za-z0-9_./]*$/.test(part)) {
      checks.push((o) => o.metadata.labels?.[part] !== undefined);
    } else {
      return { ok: false, message: `unable to parse requirement: ${part}` };
    }
  }
  return { ok: true, matches: (o) => checks.every((c) => c(o)) };
}

/** Only `metadata.name` and `metadata.namespace`, which every resource supports. */
export function parseFieldSelector(text: string | null): Parsed {
  if (text === null || text.trim() === '') return { ok: true, matches: () => true };
  const checks: Matcher[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    const m = /^([^!=]+?)\s*(=|==|!=)\s*(.*)$/.exec(part);
    if (!m) return { ok: false, message: `invalid selector: '${text}'; can't understand '${part}'` };
    const [, field, op, value] = m as unknown as [string, string, string, string];
    const read = field === 'metadata.name' ? (o: Obj) => o.metadata.name : field === 'metadata.namespace' ? (o: Obj) => o.metadata.namespace ?? '' : undefined;
    if (!read) return { ok: false, message: `field label not supported: ${field}` };
    checks.push((o) => (op === '!=' ? read(o) !== value : read(o) === value));
  }
  return { ok: true, matches: (o) => checks.every((c) => c(o)) };
}
