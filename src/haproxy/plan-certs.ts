/**
 * The certificate part of a deployment plan: which certificate files and crt-list
 * lines haproxy 2.6 can take at runtime, so that it serves what a fresh start on the
 * new files would serve, and why the others need a reload. Pure: no IO.
 *
 * At runtime:
 * - a certificate that was, and stays, a certificate with its key in one PEM file is
 *   replaced in one transaction (a renewal, by far the most frequent change);
 * - a line added to a crt-list a bind line loads, with its certificate when that is
 *   new (`new ssl cert`, then the same transaction, then `add ssl crt-list`): a new
 *   TLS host, or the Secret of an existing one arriving;
 * - a line removed from it, and its certificate when nothing names it any more.
 *
 * haproxy appends a line added at runtime, while a fresh start reads the file in
 * order. Order decides two things: the first line's certificate is served when no
 * name matches, and a name on two lines gets the certificate of one of them. So a
 * line goes at runtime only when the first line stays, every line names its hosts
 * (a line without names serves the names inside its certificate, which are not read
 * here), and no name is on two lines. A certificate's line with hosts added or
 * removed (a Secret several Ingresses share) is added anew, and the old line deleted
 * last by the number haproxy gives it (the certificate is on two lines meanwhile); a
 * certificate on several lines reloads when one of them changes.
 */
import { auxPath } from '../templating/rendered.ts';
import { classify } from './aux-refs.ts';
import { type CrtListLine, crtListLines, isKeyPair } from './crt-list.ts';
import { compareStrings } from './plan-config.ts';
import type { CertDelOp, CertNewOp, CertSetOp, CrtListAddOp, CrtListDelOp } from './plan-types.ts';

export interface CertPlan {
  reasons: string[];
  /** Before everything else: certificates set or loaded, then crt-list lines added. */
  early: (CertSetOp | CertNewOp | CrtListAddOp)[];
  /** After everything else: crt-list lines removed, then certificates no line names. */
  late: (CrtListDelOp | CertDelOp)[];
}

/** A certificate with its key, and no empty line, which would end the runtime command's payload early. */
const isRuntimePair = (text: string) => isKeyPair(text) && !/\n[ \t]*\r?\n/.test(text.trimEnd());

/**
 * Plans the certificate files from `before` to `after`. `lists` gives the crt-lists bind
 * lines load; it is asked only when a certificate file changed.
 */
export function planCerts(before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>, lists: () => ReadonlySet<string>): CertPlan {
  const plan: CertPlan = { reasons: [], early: [], late: [] };
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((n) => before[n] !== after[n]).sort(compareStrings);
  if (names.length === 0) return plan;
  const bound = lists();
  // Certificates crt-list lines load, or stop loading, at runtime.
  const loaded = new Set<string>();
  const unloaded = new Set<string>();
  const adds: CrtListAddOp[] = [];
  for (const list of names) {
    const was = before[list];
    const is = after[list];
    if (!bound.has(list) || was === undefined || is === undefined) continue;
    const edit = planCrtList(list, crtListLines(was), crtListLines(is), after);
    plan.reasons.push(...edit.reasons);
    adds.push(...edit.adds);
    plan.late.push(...edit.dels);
    for (const op of edit.adds) loaded.add(op.cert);
    for (const op of edit.dels) unloaded.add(op.cert);
  }
  for (const name of names) {
    const was = before[name];
    const is = after[name];
    if (bound.has(name) && was !== undefined && is !== undefined) continue;
    if (was === undefined) {
      if (!loaded.has(name)) plan.reasons.push(`certificate ${name} is new`);
      else if (!isRuntimePair(is!)) plan.reasons.push(`certificate ${name} is not a certificate with its key in one PEM file without empty lines`);
      else plan.early.push({ kind: 'cert-new', cert: name, ref: auxPath('certs', name), content: is!.trimEnd() });
    } else if (is === undefined) {
      if (unloaded.has(name)) plan.late.push({ kind: 'cert-del', cert: name, ref: auxPath('certs', name) });
      else plan.reasons.push(`certificate ${name} was removed`);
    } else if (isRuntimePair(was) && isRuntimePair(is)) {
      plan.early.push({ kind: 'cert-set', cert: name, ref: auxPath('certs', name), content: is.trimEnd() });
    } else plan.reasons.push(`certificate ${name} changed`);
  }
  // Renewals and new certificates (in name order), then the lines that load them.
  plan.early.push(...adds);
  return plan;
}

/** The runtime edits of one crt-list, or why it needs a reload. */
function planCrtList(list: string, was: readonly CrtListLine[], is: readonly CrtListLine[], after: Readonly<Record<string, string>>): { reasons: string[]; adds: CrtListAddOp[]; dels: CrtListDelOp[] } {
  const none = { adds: [], dels: [] };
  const at = `crt-list ${list}`;
  const listRef = auxPath('certs', list);
  if (was[0]?.text !== is[0]?.text) return { reasons: [`${at}: its first line, whose certificate is served when no name matches, changed`], ...none };
  const texts = (lines: readonly CrtListLine[]) => new Set(lines.map((l) => l.text));
  const wasTexts = texts(was);
  const isTexts = texts(is);
  const count = (lines: readonly CrtListLine[]) => {
    const n = new Map<string, number>();
    for (const l of lines) n.set(l.path, (n.get(l.path) ?? 0) + 1);
    return n;
  };
  const wasCount = count(was);
  const isCount = count(is);
  // A set: a changed line is seen from both sides.
  const reasons = new Set<string>();
  const adds: CrtListAddOp[] = [];
  const dels: CrtListDelOp[] = [];
  const certOf = (path: string) => {
    const file = classify(path);
    return file?.kind === 'certs' && !file.name.includes('/') && after[file.name] !== undefined ? file.name : undefined;
  };
  // A certificate on one line before and after may have its line edited: the new line goes
  // in first, and the old one, found by its text, goes last, so that every name keeps a line.
  const edited = (line: CrtListLine) => wasCount.get(line.path) === 1 && isCount.get(line.path) === 1;
  for (const line of was) {
    if (isTexts.has(line.text)) continue;
    if (wasCount.get(line.path) !== 1 || (isCount.has(line.path) && (!edited(line) || line.options))) {
      reasons.add(`${at}: the line of ${line.path} changed`);
      continue;
    }
    const file = classify(line.path);
    dels.push({ kind: 'crt-list-del', list, listRef, cert: file?.name ?? line.path, certRef: line.path, ...(edited(line) && { entry: line.text }) });
  }
  const hosts = new Map<string, number>();
  for (const line of is) for (const f of line.filters) hosts.set(f, (hosts.get(f) ?? 0) + 1);
  for (const line of is) {
    if (wasTexts.has(line.text)) continue;
    if ((wasCount.has(line.path) && !edited(line)) || isCount.get(line.path) !== 1) {
      reasons.add(`${at}: the line of ${line.path} changed`);
      continue;
    }
    const cert = certOf(line.path);
    const problem =
      cert === undefined ? `${line.path} is not a certificate of this configuration`
      : line.options ? `${line.path} has options`
      : line.filters.some((f) => f.startsWith('!')) ? `${line.path} has a negative SNI filter`
      : undefined;
    if (problem) reasons.add(`${at}: ${problem}`);
    else adds.push({ kind: 'crt-list-add', list, listRef, cert: cert!, entry: line.text });
  }
  // Which certificate a name gets must not depend on the order of the lines.
  if (adds.length > 0 || dels.length > 0) {
    const unnamed = is.find((l) => l.filters.length === 0);
    if (unnamed) reasons.add(`${at}: ${unnamed.path} has no SNI filter, so it serves the names in its certificate`);
    for (const [host, n] of hosts) if (n > 1) reasons.add(`${at}: ${host} is on two lines`);
  }
  return reasons.size > 0 ? { reasons: [...reasons], ...none } : { reasons: [], adds, dels };
}
