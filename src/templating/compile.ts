/**
 * Templates compiled into the template realm (realm.ts).
 *
 * ejs turns a template into the body of a function and compiles it with its own
 * realm's `Function`; here the same body (built as ejs 7 builds it, so that its
 * lines, its error annotations and locate.ts's mapping stay exactly as ejs makes
 * them) is compiled in the template realm instead. Before that it is parsed
 * once more to refuse what would reach out of a synchronous render: `import()`
 * (whose rejection is an error object of the controller's realm), async
 * functions and `await` (promises that outlive the render and its time limit).
 */
import { parse } from 'acorn';
import ejs from 'ejs';
import type { Options } from 'ejs';
import { templateRealm } from './realm.ts';

/** The parameters ejs gives a compiled template, in order. */
export const TEMPLATE_PARAMS = ['locals', 'escapeFn', 'include', 'rethrow'] as const;

export type TemplateFunction = (locals: object, escapeFn: unknown, include: unknown, rethrow: unknown) => string;

interface TemplateInternals {
  source: string;
  templateText: string;
  generateSource(): void;
}

/** The function body ejs.compile would compile for this template and these options (strict, no `with`, compileDebug). */
export function ejsFunctionBody(text: string, options: Options): string {
  const template = new ejs.Template(text, options) as unknown as TemplateInternals;
  template.generateSource();
  const localsName = options.localsName ?? 'locals';
  const names = options.destructuredLocals ?? [];
  let prepended = '  var __output = "";\n  function __append(s) { if (s !== undefined && s !== null) __output += s }\n';
  if (names.length > 0) prepended += `  var __locals = (${localsName} || {}),\n${names.map((n, i) => `${i > 0 ? ',\n  ' : ''}${n} = __locals.${n}`).join('')};\n`;
  const source = `${prepended}${template.source}  return __output;\n`;
  const filename = JSON.stringify(options.filename);
  const body =
    `var __line = 1\n  , __lines = ${JSON.stringify(template.templateText)}\n  , __filename = ${filename};\n` +
    `try {\n${source}} catch (e) {\n  rethrow(e, __lines, __filename, __line, escapeFn);\n}\n`;
  return `"use strict";\n${body}\n//# sourceURL=${filename}\n`;
}

/** A construct a template may not use, and the line of the function body where it is. */
export interface Forbidden {
  line: number;
  message: string;
}

const FORBIDDEN: Readonly<Record<string, string>> = {
  ImportExpression: 'import() is not available in templates',
  AwaitExpression: 'templates render synchronously: await is not available',
};

/**
 * Each forbidden construct is written with one of these words, and a keyword cannot be
 * spelt with escapes: a body without them has none, and is not parsed again (parsing the
 * shipped templates' bodies was most of the 200-270 ms their compilation held the event loop).
 */
const NEEDED_WORDS = /import|async|await/;

/** The first import(), async function or await in a function body, if any. */
export function forbiddenConstruct(body: string): Forbidden | undefined {
  if (!NEEDED_WORDS.test(body)) return undefined;
  let tree: unknown;
  try {
    tree = parse(body, { ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true, locations: true });
  } catch (err) {
    const loc = (err as { loc?: { line: number } }).loc;
    return { line: loc?.line ?? 1, message: `cannot read the template's code to check it: ${(err as Error).message}` };
  }
  const pending: unknown[] = [tree];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      pending.push(...(node as unknown[]));
      continue;
    }
    const n = node as { type?: unknown; async?: unknown; await?: unknown; loc?: { start: { line: number } } };
    if (typeof n.type === 'string') {
      const line = n.loc?.start.line ?? 1;
      if (FORBIDDEN[n.type]) return { line, message: FORBIDDEN[n.type]! };
      if (n.async === true) return { line, message: 'templates render synchronously: async functions are not available' };
      if (n.type === 'ForOfStatement' && n.await === true) return { line, message: 'templates render synchronously: for await is not available' };
    }
    for (const [key, value] of Object.entries(n)) if (key !== 'loc' && value !== null && typeof value === 'object') pending.push(value);
  }
  return undefined;
}

/**
 * Compiles a template into the realm. A syntax error is thrown as V8 reports it;
 * a forbidden construct as a `{ forbidden }` object with its line in the body.
 */
export function compileInRealm(text: string, options: Options): TemplateFunction {
  const body = ejsFunctionBody(text, options);
  const fn = templateRealm().compile(body, TEMPLATE_PARAMS, String(options.filename)) as TemplateFunction;
  const forbidden = forbiddenConstruct(body);
  if (forbidden) throw new ForbiddenConstruct(forbidden);
  return fn;
}

export class ForbiddenConstruct extends Error {
  readonly forbidden: Forbidden;

  constructor(forbidden: Forbidden) {
    super(forbidden.message);
    this.name = 'ForbiddenConstruct';
    this.forbidden = forbidden;
  }
}

/**
 * ejs's handler of a failure inside a compiled template: the error's message
 * becomes `<file>:<line>`, the template lines around it (the failing one marked
 * ` >> `), a blank line and the original message; locate.ts reads it back. Then
 * it throws the error on.
 */
export function rethrow(err: unknown, text: string, filename: string, line: number, escape: (value: unknown) => string): never {
  const lines = String(text).split('\n');
  const start = Math.max(line - 3, 0);
  const end = Math.min(lines.length, line + 3);
  const name = escape(filename);
  const excerpt = lines
    .slice(start, end)
    .map((l, i) => `${i + start + 1 === line ? ' >> ' : '    '}${i + start + 1}| ${l}`)
    .join('\n');
  // Defined rather than assigned: an error without a message of its own inherits it from a frozen prototype.
  const message = `${name || 'ejs'}:${line}\n${excerpt}\n\n${String((err as { message?: unknown }).message)}`;
  Object.defineProperty(err, 'path', { value: name, writable: true, configurable: true });
  Object.defineProperty(err, 'message', { value: message, writable: true, configurable: true });
  throw err;
}
