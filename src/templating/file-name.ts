import { createHash } from 'node:crypto';
import { abort, describeValue } from './abort.ts';

/**
 * File names built from cluster values (a Secret's namespace and name, say),
 * for files whose number depends on the cluster.
 *
 * Every tuple of parts maps to its own name, whatever the parts hold: spaces,
 * slashes, `..`, upper case, any Unicode. The name uses only `a-z`, `0-9`, `-`
 * and `_`, so it is a plain file name on any file system (case-insensitive ones
 * too), never contains `/` or `.`, and passes unchanged through the Data Plane
 * API's storage, which rewrites every other character to `_`. The caller adds
 * the extension (`.pem`).
 *
 * Encoding: `a-z`, `0-9` and `-` stand for themselves; any other code point
 * below U+0100 is `_` and two hex digits (`.` is `_2e`); any other is `_u` and
 * six hex digits; parts are joined by `__`. Read left to right, each `_` starts
 * exactly one of those forms, so the name decodes to one tuple only. A single
 * empty part is `_`, which no other tuple gives.
 *
 * Names longer than MAX_SHORT are cut to a readable prefix and end in `_` and
 * 32 hex digits of a SHA-256 over the exact parts: always LONG_LENGTH
 * characters, longer than any short name, so a long name never equals a short
 * one, and two long names are equal only if the hashes collide (128 bits).
 */
export const MAX_SHORT = 100;
const PREFIX = 80;
export const LONG_LENGTH = PREFIX + 1 + 32;

export function fileName(...parts: unknown[]): string {
  if (parts.length === 0) abort('fileName() needs at least one part');
  const texts = parts.map((part, i) => {
    if (typeof part === 'string' || (typeof part === 'number' && Number.isFinite(part))) return String(part);
    return abort(`fileName(): part ${i + 1} is ${describeValue(part)}, expected a string or number`);
  });
  let encoded = '';
  for (const [i, text] of texts.entries()) {
    if (i > 0) encoded += '__';
    // Past MAX_SHORT only the prefix is kept: a huge value costs no more than its hash.
    for (const char of text) {
      if (encoded.length > MAX_SHORT) break;
      const code = char.codePointAt(0)!;
      if ((code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39) || code === 0x2d) encoded += char;
      else encoded += code < 0x100 ? `_${code.toString(16).padStart(2, '0')}` : `_u${code.toString(16).padStart(6, '0')}`;
    }
  }
  if (encoded === '') return '_';
  if (encoded.length <= MAX_SHORT) return encoded;
  // JSON escapes lone surrogates, so distinct parts hash distinct texts.
  const digest = createHash('sha256').update(JSON.stringify(texts)).digest('hex').slice(0, 32);
  return `${encoded.slice(0, PREFIX)}_${digest}`;
}
