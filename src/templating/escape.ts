import { abort, describeValue } from './abort.ts';

/**
 * Output escaping for `<%= %>`.
 *
 * haproxy.cfg is parsed line by line into words separated by spaces and tabs;
 * `#` starts a comment, `'` and `"` quote, `\` escapes and `"$VAR"` expands.
 * `haproxyWord` turns a scalar into exactly one word:
 * - strings, finite numbers, bigints and booleans are accepted; anything else
 *   (undefined, null, objects, NaN) is a template bug and aborts the render;
 * - a control character (Unicode category Cc: \n, \r, \t, \0, DEL, C1) aborts:
 *   a line break would let data inject directives, and none of them belongs
 *   in a word;
 * - the empty string aborts: HAProxy ends a directive's arguments at the first
 *   empty word and silently ignores the rest (an `if` condition, say);
 * - a value made only of characters outside [ '"\#$] is written as is;
 * - anything else is single-quoted, inside which HAProxy interprets nothing;
 *   a `'` is written as `'\''` (close, escaped quote, reopen: still one word).
 * This settles word boundaries only: an argument HAProxy parses further
 * (a log-format string's `%`, a regex, a sample expression) keeps its meaning.
 */
export function haproxyWord(value: unknown): string {
  const text = scalarText(value);
  rejectControl(text);
  if (text === '') abort('an empty string cannot be written as a haproxy word: HAProxy would drop the arguments after it');
  if (!/[ '"\\#$]/.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * `<%= %>` in map, general and certificate files. These formats have no
 * quoting, and what matters is the line: a map holds one `key value` entry
 * per line, a PEM bundle one block per run of lines. So the value is written
 * unchanged, but a control character (category Cc, which includes \n, \r and
 * \t) aborts, which keeps one value from starting another entry or shifting
 * tab-separated columns. Multi-line content (a PEM body) is written with
 * `<%- %>` on purpose. Non-scalars abort as for haproxy.cfg.
 */
export function auxText(value: unknown): string {
  const text = scalarText(value);
  rejectControl(text);
  return text;
}

/**
 * A map file key: the first word on its line, so it may not be empty, contain
 * whitespace (the rest would become part of the value) or start with `#`
 * (the line would become a comment).
 */
export function mapKey(value: unknown): string {
  const text = auxText(value);
  if (text === '' || /\s/.test(text) || text.startsWith('#')) {
    abort(`${describeValue(text)} cannot be a map key: it must be non-empty, without whitespace, and not start with #`);
  }
  return text;
}

/**
 * Literal text inside a log-format argument (set-header values, redirect
 * locations, `lf-string`): there `%` starts a sample expression, so it is
 * doubled. The result is still a value for `<%= %>`, which makes it one word.
 */
export function lfText(value: unknown): string {
  const text = scalarText(value);
  rejectControl(text);
  return text.replaceAll('%', '%%');
}

/** A literal for a PCRE pattern: every metacharacter escaped with a backslash. */
export function regexEscape(value: unknown): string {
  const text = scalarText(value);
  rejectControl(text);
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/** The text of a scalar, or an abort naming what was given instead. */
function scalarText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'number':
      if (!Number.isFinite(value)) abort(`cannot write ${String(value)}`);
      return String(value);
    default:
      return abort(`cannot write ${describeValue(value)} with <%= %>: expected a string, number or boolean`);
  }
}

function rejectControl(text: string): void {
  const found = /\p{Cc}/u.exec(text);
  if (found) {
    const code = found[0].codePointAt(0) ?? 0;
    abort(`value contains control character U+${code.toString(16).toUpperCase().padStart(4, '0')}, which could inject configuration`);
  }
}

const FILE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** A plain file name: no directory part, no leading dot, at most 255 characters. */
export function isFileName(name: string): boolean {
  return name.length <= 255 && FILE_NAME.test(name);
}
