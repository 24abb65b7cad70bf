import vm from 'node:vm';
import ejs from 'ejs';
import type { Options } from 'ejs';
import type { RenderError } from '../events.ts';
import { TemplateAbort, describeValue } from './abort.ts';
import { compileInRealm } from './compile.ts';
import { type ObjectSkip as RealmObjectSkip, type TemplateFault as RealmTemplateFault, templateRealm } from './realm.ts';

/**
 * Where a template failed.
 *
 * At run time ejs (with compileDebug) tracks the template line in the compiled
 * function and, when anything is thrown, rewrites the error's message to
 * `<filename>:<line>\n<excerpt>\n\n<original message>` before rethrowing it.
 * The filename is the template's label, so that line is read back from exactly
 * that prefix. It is the line where the running tag starts, which is coarse
 * for a multi-line `<% %>` block; when the thrown value is an Error whose stack
 * has a frame in this template's code (ejs names the code after the label with
 * a sourceURL), that frame's line is mapped back through the template's
 * translation instead, giving the exact line.
 *
 * Lines need an extensible object: a thrown string, null or frozen error makes
 * ejs's own rewrite fail, and then only the template is known.
 */

/**
 * A failure already attributed to a template; passes unchanged through the
 * templates that included it. Like TemplateAbort, a class of the template realm.
 */
export type TemplateFault = RealmTemplateFault;
export const TemplateFault = templateRealm().TemplateFault;

/** Thrown by h.skip: the object being rendered cannot be served; `field` says which of its fields is at fault. */
export type ObjectSkip = RealmObjectSkip;
export const ObjectSkip = templateRealm().ObjectSkip;

const realm = templateRealm();

/**
 * Whether a throw is a fault of the templates rather than of the object being
 * rendered: a fatal abort (unknown snippet or template, include cycle, h.fail),
 * a name that does not exist (ReferenceError in strict mode), a misspelt helper
 * (`h.x is not a function`), or a write to the read-only resources and values.
 * A wrong-typed field of an object gives other errors. Never throws.
 */
export function atFault(thrown: unknown): boolean {
  try {
    if (thrown instanceof TemplateFault || thrown instanceof TemplateAbort) return thrown.fatal;
    if (realm.isError(thrown, 'ReferenceError')) return true;
    if (!realm.isError(thrown, 'TypeError')) return false;
    const message = String(thrown.message);
    return FROZEN_WRITE.test(message) || /^h\.[A-Za-z_$][\w$]* is not a function/.test(message);
  } catch {
    return false;
  }
}

/**
 * A TypeError that is not a fault of the templates by itself (atFault): a field
 * read from undefined, a call of what is not a function. An object of the wrong
 * shape causes them, and so does a template typo; systematic-faults.ts tells
 * the two apart. Never throws.
 */
function unexpectedError(thrown: unknown): boolean {
  try {
    return realm.isError(thrown, 'TypeError') && !atFault(thrown);
  } catch {
    return false;
  }
}

/** Where and why something failed inside a template, and whether the templates are at fault. */
export interface Located {
  template: string;
  line?: number;
  message: string;
  fatal: boolean;
  /** A TypeError the template did not mean: what systematic-faults.ts counts. */
  unexpected?: boolean;
  /** The field an h.skip named. */
  field?: string;
  /** The status reason an h.skip gave. */
  statusReason?: string;
}

/**
 * Locates a throw caught while a template was still running (inside h.isolate),
 * before ejs could annotate it: at the innermost stack frame in the code of any
 * of `templates`, or else in `running` without a line. Never throws.
 */
export function locateThrow(thrown: unknown, templates: ReadonlyMap<string, LocatableTemplate>, running: string): Located {
  const fault = asFault(thrown);
  if (fault) return { ...fault.fault, fatal: fault.fatal, ...(fault.field !== undefined && { field: fault.field }), ...(fault.statusReason !== undefined && { statusReason: fault.statusReason }), ...(fault.unexpected && { unexpected: true }) };
  const where = innermostFrame(thrown, templates) ?? { template: running };
  const fatal = atFault(thrown);
  try {
    if (thrown instanceof ObjectSkip)
      return { ...where, message: thrown.reason, fatal, ...(thrown.field !== undefined && { field: thrown.field }), ...(thrown.statusReason !== undefined && { statusReason: thrown.statusReason }) };
    if (thrown instanceof TemplateAbort) return { ...where, message: thrown.reason, fatal };
    if (realm.isError(thrown)) return { ...where, message: errorMessage(thrown, String(thrown.message)), fatal, ...(unexpectedError(thrown) && { unexpected: true }) };
  } catch {
    // A hostile error object: fall through to its description.
  }
  return { ...where, message: `the template threw ${describeValue(thrown)}`, fatal };
}

/** `Name: message`, with a hint when the template wrote to a read-only object. */
function errorMessage(thrown: Error, original: string): string {
  const name = typeof thrown.name === 'string' && thrown.name !== 'Error' ? `${thrown.name}: ` : '';
  // Stored objects are frozen: say why the write failed and what to do instead.
  const hint = realm.isError(thrown, 'TypeError') && FROZEN_WRITE.test(original) ? ` (${READ_ONLY_HINT})` : '';
  return `${name}${original}${hint}` || 'Error';
}

/** The template and exact line of the innermost stack frame in the code of one of the templates. */
function innermostFrame(thrown: unknown, templates: ReadonlyMap<string, LocatableTemplate>): { template: string; line?: number } | undefined {
  try {
    const stack: unknown = realm.isError(thrown) ? thrown.stack : undefined;
    if (typeof stack !== 'string') return undefined;
    const frames = stack.indexOf('\n    at ');
    if (frames < 0) return undefined;
    for (const m of stack.slice(frames).matchAll(/"([^"\n]+)":(\d+):\d+/g)) {
      const template = templates.get(m[1]!);
      if (!template) continue;
      const offset = bodyOffset(template.options);
      const line = offset === undefined ? undefined : templateLine(translationOf(template), Number(m[2]) - offset);
      return line === undefined ? { template: template.label } : { template: template.label, line };
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/** What is needed to locate a failure in a compiled template. */
export interface LocatableTemplate {
  /** The name errors report, also ejs's filename option. */
  readonly label: string;
  readonly text: string;
  readonly options: Options;
}

const FROZEN_WRITE = /read only property|not extensible|Cannot (add|delete|assign to) property|Cannot redefine property|object is frozen/i;
export const READ_ONLY_HINT = 'resources and values are read-only in templates; copy before changing, e.g. [...list].sort()';
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
export function faultFrom(thrown: unknown, template: LocatableTemplate): TemplateFault {
  // instanceof runs getPrototypeOf, which a thrown proxy may trap: asFault guards it.
  const fault = asFault(thrown);
  if (fault) return fault;
  const label = template.label;
  try {
    const annotated = readAnnotation(thrown, label);
    if (!annotated) return new TemplateFault({ template: label, message: NOT_ANNOTATABLE });
    const { original } = annotated;
    if (!realm.isError(thrown)) return new TemplateFault({ template: label, line: annotated.line, message: NOT_ANNOTATABLE });
    const line = exactLine(thrown, template) ?? annotated.line;
    const fatal = atFault(thrown);
    if (thrown instanceof ObjectSkip) return new TemplateFault({ template: label, line, message: thrown.reason }, fatal, thrown.field, thrown.statusReason);
    if (thrown instanceof TemplateAbort) return new TemplateFault({ template: label, line, message: thrown.reason }, fatal);
    return new TemplateFault({ template: label, line, message: errorMessage(thrown, original) }, fatal, undefined, undefined, unexpectedError(thrown));
  } catch {
    return new TemplateFault({ template: label, message: NOT_ANNOTATABLE });
  }
}

function readAnnotation(thrown: unknown, label: string): { line: number; original: string } | undefined {
  if (thrown === null || typeof thrown !== 'object') return undefined;
  const message: unknown = (thrown as { message?: unknown }).message;
  const prefix = `${label}:`;
  if (typeof message !== 'string' || !message.startsWith(prefix)) return undefined;
  const eol = message.indexOf('\n', prefix.length);
  if (eol < 0) return undefined;
  const line = Number(message.slice(prefix.length, eol));
  if (!Number.isSafeInteger(line) || line < 1) return undefined;
  const end = message.indexOf('\n\n', eol + 1);
  return { line, original: end < 0 ? '' : message.slice(end + 2) };
}

/** The template line of the innermost stack frame in the template's own code, if there is one. */
function exactLine(thrown: Error, template: LocatableTemplate): number | undefined {
  try {
    const stack: unknown = thrown.stack;
    if (typeof stack !== 'string') return undefined;
    const functionLine = frameLine(stack, template.label);
    const offset = bodyOffset(template.options);
    if (functionLine === undefined || offset === undefined) return undefined;
    return templateLine(translationOf(template), functionLine - offset);
  } catch {
    // A stack getter may throw; the line of the running tag is still known.
    return undefined;
  }
}

/** The line of the first frame in code named `label` (V8 prints it as `"label":line:column`). */
function frameLine(stack: string, label: string): number | undefined {
  const frames = stack.indexOf('\n    at ');
  if (frames < 0) return undefined;
  const at = stack.indexOf(`"${label}":`, frames);
  if (at < 0) return undefined;
  const match = /^:(\d+):\d+/.exec(stack.slice(at + label.length + 2));
  return match ? Number(match[1]) : undefined;
}

const PROBE = 'haprx-line-probe';
const offsets = new Map<string, number | undefined>();

/**
 * The line of the compiled function at which the translated template begins.
 * It depends on ejs's prologue, so it is measured once per option shape by
 * compiling a one-line probe that throws on its first generated line.
 */
function bodyOffset(options: Options): number | undefined {
  const key = JSON.stringify([options.localsName, options.destructuredLocals, options.strict]);
  if (offsets.has(key)) return offsets.get(key);
  let offset: number | undefined;
  try {
    const probe = compileInRealm('<% throw new Error() %>', { ...options, filename: PROBE });
    probe({}, (v: unknown) => v, undefined, (e: unknown) => {
      throw e;
    });
  } catch (e) {
    const line = realm.isError(e) && typeof e.stack === 'string' ? frameLine(e.stack, PROBE) : undefined;
    // The probe's statement is the first generated line of its translation.
    offset = line;
  }
  offsets.set(key, offset);
  return offset;
}

/** The parts of ejs.Template used to map generated code back to the template; stable within the pinned ejs version. */
interface TemplateInternals {
  source: string;
  currentLine: number;
  generateSource(): void;
  scanLine(token: string): void;
}

interface Translation {
  /** Where each template token starts: its line in the generated body, its line in the template. */
  tokens: { generated: number; line: number }[];
  body: string;
  bodyLines: number;
  templateLines: number;
}

class TranslationError extends Error {
  readonly line: number;

  constructor(message: string, line: number) {
    super(message);
    this.line = line;
  }
}

/** ejs's translation of the template into code, recording where each token lands. */
function translate(text: string, options: Options): Translation {
  const translation = new ejs.Template(text, options) as unknown as TemplateInternals;
  const tokens: Translation['tokens'] = [];
  const scan = translation.scanLine;
  // The generated source only grows, so newlines are counted once each.
  let counted = 0;
  let generated = 0;
  translation.scanLine = function (this: TemplateInternals, token: string) {
    generated += countNewlines(this.source.slice(counted));
    counted = this.source.length;
    tokens.push({ generated, line: this.currentLine });
    scan.call(this, token);
  };
  try {
    translation.generateSource();
  } catch (e) {
    throw new TranslationError(firstLine(e), translation.currentLine);
  }
  const body = translation.source;
  return { tokens, body, bodyLines: countNewlines(body), templateLines: countNewlines(text) + 1 };
}

const translations = new WeakMap<LocatableTemplate, Translation>();

function translationOf(template: LocatableTemplate): Translation {
  let translation = translations.get(template);
  if (!translation) {
    translation = translate(template.text, template.options);
    translations.set(template, translation);
  }
  return translation;
}

/** Template line of a 0-based line of the generated body; undefined outside the body. */
function templateLine(translation: Translation, generated: number): number | undefined {
  if (generated < 0 || generated >= translation.bodyLines) return undefined;
  let at = translation.tokens[0] ?? { generated: 0, line: 1 };
  for (const token of translation.tokens) if (token.generated <= generated) at = token;
  // Code tokens are copied with their newlines, so lines within a token correspond one to one.
  return Math.min(at.line + (generated - at.generated), translation.templateLines);
}

/** The template line of a construct compile.ts refuses, found at a line of the function body. */
export function locateForbidden(template: LocatableTemplate, forbidden: { line: number; message: string }): RenderError {
  try {
    const offset = bodyOffset(template.options);
    const line = offset === undefined ? undefined : templateLine(translationOf(template), forbidden.line - offset);
    return { template: template.label, ...(line !== undefined && { line }), message: forbidden.message };
  } catch {
    return { template: template.label, message: forbidden.message };
  }
}

/**
 * A SyntaxError of the compiled function body carries no template position.
 * On failure the template is translated again and the code compiled by
 * node:vm inside the same prologue ejs uses (so that redeclaring a context
 * name fails here too); vm reports the generated line, which maps back to the
 * template. An unmatched tag fails during translation, at the tag's line.
 */
export function diagnoseCompileError(template: LocatableTemplate, thrown: unknown): RenderError {
  const label = template.label;
  try {
    let translation: Translation;
    try {
      translation = translate(template.text, template.options);
    } catch (e) {
      if (e instanceof TranslationError) return { template: label, line: e.line, message: e.message };
      throw e;
    }
    const header = [
      '"use strict";',
      '(function (locals, escapeFn, include, rethrow) {',
      'let __line = 1, __lines = "", __filename = "";',
      'try {',
      'let __output = "";',
      'function __append(s) {}',
      `let __locals = (locals || {})${(template.options.destructuredLocals ?? []).map((name) => `, ${name} = __locals.${name}`).join('')};`,
    ];
    const code = `${header.join('\n')}\n${translation.body}\nreturn __output;\n} catch (e) {}\n});\n`;
    const found = syntaxError(code, label);
    if (!found) return { template: label, message: firstLine(thrown) };
    const line = templateLine(translation, found.line - 1 - header.length);
    if (line === undefined) {
      const message = `unexpected end of template (${found.message}): is a block, bracket or string left open?`;
      return { template: label, line: translation.templateLines, message };
    }
    return { template: label, line: Math.max(line, 1), message: found.message };
  } catch {
    return { template: label, message: firstLine(thrown) };
  }
}

function syntaxError(code: string, filename: string): { line: number; message: string } | undefined {
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
    const message = realm.isError(thrown) ? thrown.message : String(thrown);
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
