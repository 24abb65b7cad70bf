/**
 * The path language of `/debug/vars?field=`: the plain subset of JSONPath and
 * nothing more. `$` and then any number of
 *
 *   .name   ['name']   ["name"]   [0]   [*]   .*
 *
 * A leading `$.` may be left out (`resources` is `$.resources`). There are no
 * filters, scripts, regular expressions, slices or recursive descent: whoever
 * can reach the endpoint can only walk the answer, and a walk is linear in the
 * size of what it walks, so no query can hold the event loop.
 */

export type Step = { kind: 'key'; key: string } | { kind: 'index'; index: number } | { kind: 'all' };

export type ParsedPath = { ok: true; steps: Step[] } | { ok: false; message: string };

/** Longer paths are refused before they are read. */
export const MAX_PATH_LENGTH = 512;
export const MAX_STEPS = 32;

const NAME = /[A-Za-z0-9_$-]/;
const SUPPORTED = "use $.name, ['name'], [0], [*] or .*";

export function parseFieldPath(text: string): ParsedPath {
  if (text.length > MAX_PATH_LENGTH) return { ok: false, message: `longer than ${MAX_PATH_LENGTH} characters` };
  // Without `$`, the text is read as if it followed `$.`; positions still count in the text given.
  const prefixed = !text.startsWith('$');
  if (prefixed) text = `.${text}`;
  let at = prefixed ? 0 : 1;
  const steps: Step[] = [];
  const fail = (why: string): ParsedPath => ({ ok: false, message: `${why} at character ${prefixed ? Math.max(at, 1) : at + 1}: ${SUPPORTED}` });
  while (at < text.length) {
    if (steps.length >= MAX_STEPS) return { ok: false, message: `more than ${MAX_STEPS} steps` };
    const c = text[at];
    if (c === '.') {
      at++;
      if (text[at] === '.') return fail('recursive descent (..) is not supported');
      if (text[at] === '*') {
        steps.push({ kind: 'all' });
        at++;
        continue;
      }
      const start = at;
      while (at < text.length && NAME.test(text[at]!)) at++;
      if (at === start) return fail(`expected a name after '.'`);
      steps.push({ kind: 'key', key: text.slice(start, at) });
      continue;
    }
    if (c === '[') {
      at++;
      const q = text[at];
      if (q === '*') {
        at++;
        if (text[at] !== ']') return fail("expected ']'");
        at++;
        steps.push({ kind: 'all' });
        continue;
      }
      if (q === "'" || q === '"') {
        at++;
        let key = '';
        while (at < text.length && text[at] !== q) {
          if (text[at] === '\\') {
            at++;
            if (at >= text.length) break;
          }
          key += text[at];
          at++;
        }
        if (text[at] !== q) return fail('unterminated string');
        at++;
        if (text[at] !== ']') return fail("expected ']'");
        at++;
        steps.push({ kind: 'key', key });
        continue;
      }
      const start = at;
      while (at < text.length && text[at]! >= '0' && text[at]! <= '9') at++;
      if (at === start || at - start > 9) return fail(at === start ? 'filters, scripts and slices are not supported' : 'index too large');
      if (text[at] !== ']') return fail("expected ']'");
      steps.push({ kind: 'index', index: Number(text.slice(start, at)) });
      at++;
      continue;
    }
    return fail(`unexpected ${JSON.stringify(c)}`);
  }
  return { ok: true, steps };
}

/** Every value the steps reach from `root`, in document order; missing keys reach nothing. */
export function selectPath(root: unknown, steps: readonly Step[]): unknown[] {
  let nodes: unknown[] = [root];
  for (const step of steps) {
    const next: unknown[] = [];
    for (const node of nodes) {
      if (node === null || typeof node !== 'object') continue;
      if (step.kind === 'all') {
        if (Array.isArray(node)) next.push(...(node as unknown[]));
        else next.push(...Object.values(node));
      } else if (step.kind === 'index') {
        if (Array.isArray(node) && step.index < node.length) next.push(node[step.index]);
      } else if (Object.hasOwn(node, step.key)) {
        next.push((node as Record<string, unknown>)[step.key]);
      }
    }
    nodes = next;
  }
  return nodes;
}
