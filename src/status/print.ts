/**
 * Object statuses as lines of text, one fact per line, for `haprx status`, the
 * fixture tests (`status:` assertions match these lines) and the logs:
 *
 *   HTTPRoute shop/web: parent shop/edge#http: Accepted=False NoMatchingParent: Gateway shop/edge has no valid listener named http
 *   Gateway shop/edge: listener http: attachedRoutes=1
 *   Gateway shop/edge: Programmed=True Programmed (once deployed): 2 listener(s) served
 *   Ingress shop/web: served
 *
 * Every line goes through printable(): names and messages quote cluster values.
 */
import { printable } from '../printable.ts';
import type { DeclaredCondition, DeclaredEntry, ObjectStatus } from './types.ts';

export function objectName(ref: ObjectStatus['ref']): string {
  return `${ref.kind ?? 'Object'} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** How an entry is named in a line: `listener http`, `parent shop/edge#http:8080`, `ancestor …`. */
export function entryName(entry: Pick<DeclaredEntry, 'list' | 'key'>): string {
  if (entry.list === 'listeners') return `listener ${String(entry.key.name)}`;
  const ref = (entry.list === 'parents' ? entry.key.parentRef : entry.key.ancestorRef) as Record<string, unknown> | undefined;
  const kind = typeof ref?.kind === 'string' && ref.kind !== 'Gateway' ? `${ref.kind} ` : '';
  const ns = typeof ref?.namespace === 'string' ? `${ref.namespace}/` : '';
  const section = ref?.sectionName !== undefined ? `#${String(ref.sectionName)}` : '';
  const port = ref?.port !== undefined ? `:${String(ref.port)}` : '';
  return `${entry.list === 'parents' ? 'parent' : 'ancestor'} ${kind}${ns}${String(ref?.name)}${section}${port}`;
}

export function conditionText(c: DeclaredCondition, pendingNote = false): string {
  return `${c.type}=${c.status} ${c.reason}${pendingNote && c.live ? ' (once deployed)' : ''}: ${c.message}`;
}

/**
 * The lines of each status. With `pendingNote`, conditions that hold once the
 * configuration is deployed say so (statuses as declared, not yet composed).
 */
export function statusLines(statuses: readonly ObjectStatus[], options: { pendingNote?: boolean } = {}): string[] {
  const lines: string[] = [];
  for (const s of statuses) {
    const name = objectName(s.ref);
    if (s.served !== undefined) lines.push(`${name}: ${s.served ? 'served' : 'not served'}`);
    for (const c of s.conditions) lines.push(`${name}: ${conditionText(c, options.pendingNote)}`);
    for (const [k, v] of Object.entries(s.fields)) lines.push(`${name}: ${k}=${JSON.stringify(v)}`);
    for (const e of s.entries) {
      const entry = entryName(e);
      for (const [k, v] of Object.entries(e.fields)) lines.push(`${name}: ${entry}: ${k}=${JSON.stringify(v)}`);
      for (const c of e.conditions) lines.push(`${name}: ${entry}: ${conditionText(c, options.pendingNote)}`);
    }
  }
  return lines.map(printable);
}
