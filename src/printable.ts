/**
 * Text bound for a terminal or a log line, with every character that could start a
 * new line, move the cursor or reorder what is shown written as an escape instead.
 * Warnings and log messages quote cluster values (names, hosts, annotations) that
 * anyone allowed to create an object chooses; raw, a name holding a newline could
 * print a line of its own that looks like haprx wrote it.
 *
 * Escaped: C0 controls (`\n`, `\r`, `\t`, others as `\xHH`), DEL and C1 controls,
 * the Unicode line and paragraph separators, and the bidirectional overrides and
 * isolates. Backslashes are left alone: the result is for reading, not for parsing.
 */
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
