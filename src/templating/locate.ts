import vm from 'node:vm';
import ejs from 'ejs';
import type { RenderError } from '../events.ts';
import { TemplateAbort } from './abort.ts';

/**
 * Where a template failed.
 *
 * At run time ejs (with compileDebug) tracks the template line in the compiled
 * function and, when anything is thrown, rewrites the error's message to
 * `<filename>:<line>\n<excerpt>\n\n<original message>` before rethrowing it.
 * The filename is the template's label, so the line is read back from exactly
 * that prefix. This needs an extensible object: a thrown string, null or frozen
 * error makes ejs's own rewrite fail, and then only the template is known.
 */

/** A failure already attributed to a template; passes unchanged through the templates that included it. */
export class TemplateFault extends Error {
  readonly fault: RenderError;

  constructor(fault: RenderError) {
    super(fault.message);
    this.name = 'TemplateFault';
    this.fault = fault;
  }
}

const NOT_ANNOTATABLE = 'the template threw a value that is not an extensible Error object; use h.fail(message) or throw new Error(message)';

/** The value as a TemplateFault, if it is one; never throws. */
export function asFault(thrown: unknown): TemplateFault | undefined {
  try {
    return thrown instanceof TemplateFault ? thrown : undefined;
  } catch {
    return undefined;
  }
}

/** Attributes whatever a compiled template threw to that template; never throws. */
export function faultFrom(thrown: unknown, template: string): TemplateFault {
  // instanceof runs getPrototypeOf, which a thrown proxy may trap: asFault guards it.
  const fault = asFault(thrown);
  if (fault) return fault;
  try {
    const annotated = readAnnotation(thrown, template);
    if (!annotated) return new TemplateFault({ template, message: NOT_ANNOTATABLE });
    const { line, original } = annotated;
    if (thrown instanceof TemplateAbort) return new TemplateFault({ template, line, message: thrown.reason });
    if (thrown instanceof Error) {
      const name = typeof thrown.name === 'string' && thrown.name !== 'Error' ? `${thrown.name}: ` : '';
      return new TemplateFault({ template, line, message: `${name}${original}` || 'Error' });
    }
    return new TemplateFault({ template, line, message: NOT_ANNOTATABLE });
  } catch {
    return new TemplateFault({ template, message: NOT_ANNOTATABLE });
  }
}

function readAnnotation(thrown: unknown, template: string): { line: number; original: string } | undefined {
  if (thrown === null || typeof thrown !== 'object') return undefined;
  const message: unknown = (thrown as { message?: unknown }).message;
  const prefix = `${template}:`;
  if (typeof message !== 'string' || !message.startsWith(prefix)) return undefined;
  const eol = message.indexOf('\n', prefix.length);
  if (eol < 0) return undefined;
  const line = Number(message.slice(prefix.length, eol));
  if (!Number.isSafeInteger(line) || line < 1) return undefined;
  const end = message.indexOf('\n\n', eol + 1);
  return { line, original: end < 0 ? '' : message.slice(end + 2) };
}

/** The parts of ejs.Template used to locate a compile error; stable within the pinned ejs version. */
interface TemplateInternals {
  source: string;
  currentLine: number;
  generateSource(): void;
  scanLine(token: string): void;
}

/**
 * ejs compiles with `new Function`, whose SyntaxError carries no position.
 * On failure the template is translated again, recording where each template
 * token lands in the generated code, and that code is compiled by node:vm
 * inside the same prologue ejs uses (so that redeclaring a context name fails
 * here too); vm reports the generated line, which maps back to the template.
 * An unmatched tag fails during translation, at the tag's line.
 */
export function diagnoseCompileError(template: string, text: string, options: ejs.Options, destructured: readonly string[], thrown: unknown): RenderError {
  const fallback = (): RenderError => ({ template, message: firstLine(thrown) });
  try {
    const translation = new ejs.Template(text, options) as unknown as TemplateInternals;
    const tokens: { generated: number; line: number }[] = [];
    const scan = translation.scanLine;
    translation.scanLine = function (this: TemplateInternals, token: string) {
      tokens.push({ generated: countNewlines(this.source), line: this.currentLine });
      scan.call(this, token);
    };
    try {
      translation.generateSource();
    } catch (e) {
      return { template, line: translation.currentLine, message: firstLine(e) };
    }
    const body = translation.source;
    const header = [
      '"use strict";',
      '(function (locals, escapeFn, include, rethrow) {',
      'let __line = 1, __lines = "", __filename = "";',
      'try {',
      'let __output = "";',
      'function __append(s) {}',
      `let __locals = (locals || {})${destructured.map((name) => `, ${name} = __locals.${name}`).join('')};`,
    ];
    const code = `${header.join('\n')}\n${body}\nreturn __output;\n} catch (e) {}\n});\n`;
    const generatedLine = syntaxErrorLine(code, template);
    if (!generatedLine) return fallback();
    const lines = countNewlines(text) + 1;
    const g = generatedLine.line - 1 - header.length;
    if (g >= countNewlines(body)) {
      return { template, line: lines, message: `unexpected end of template (${generatedLine.message}): is a block, bracket or string left open?` };
    }
    let at = tokens[0] ?? { generated: 0, line: 1 };
    for (const token of tokens) if (token.generated <= g) at = token;
    const line = Math.min(Math.max(at.line + (g - at.generated), 1), lines);
    return { template, line, message: generatedLine.message };
  } catch {
    return fallback();
  }
}

function syntaxErrorLine(code: string, filename: string): { line: number; message: string } | undefined {
  try {
    new vm.Script(code, { filename });
    return undefined;
  } catch (e) {
    if (!(e instanceof SyntaxError) || typeof e.stack !== 'string') return undefined;
    // Node prefixes a compile error's stack with `<filename>:<line>` and the offending source line.
    const prefix = `${filename}:`;
    if (!e.stack.startsWith(prefix)) return undefined;
    const line = Number(e.stack.slice(prefix.length, e.stack.indexOf('\n')));
    return Number.isSafeInteger(line) ? { line, message: e.message } : undefined;
  }
}

function firstLine(thrown: unknown): string {
  try {
    const message = thrown instanceof Error ? thrown.message : String(thrown);
    // ejs appends " in <file> while compiling ejs" and advice that does not apply here.
    return message.split('\n')[0]?.replace(/ in \S+ while compiling ejs$/, '') ?? 'compile error';
  } catch {
    return 'compile error';
  }
}

function countNewlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}
