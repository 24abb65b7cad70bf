/**
 * Map files as haproxy 2.6 reads them: one entry per line; a line whose very
 * first character is `#` is a comment (an indented `#` is an ordinary key);
 * leading spaces and tabs are skipped; blank lines are ignored; the key is the
 * first run of characters other than space, tab and CR; the value is the rest
 * of the line after the separating blanks, up to the first CR, without
 * trailing spaces and tabs. A backslash has no special meaning. A line may
 * hold a key without a value: the value is then empty.
 */

export interface MapEntry {
  key: string;
  value: string;
  /** 1-based line number in the file. */
  line: number;
}

const isBlank = (c: string | undefined) => c === ' ' || c === '\t';

export function parseMapFile(content: string): MapEntry[] {
  const entries: MapEntry[] = [];
  const lines = content.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n]!;
    if (raw.startsWith('#')) continue;
    // Everything from the first CR on is dropped, as haproxy stops there.
    const cr = raw.indexOf('\r');
    const text = cr === -1 ? raw : raw.slice(0, cr);
    let i = 0;
    while (isBlank(text[i])) i++;
    if (i === text.length) continue;
    const keyStart = i;
    while (i < text.length && !isBlank(text[i])) i++;
    const key = text.slice(keyStart, i);
    while (isBlank(text[i])) i++;
    let end = text.length;
    while (end > i && isBlank(text[end - 1])) end--;
    entries.push({ key, value: text.slice(i, end), line: n + 1 });
  }
  return entries;
}

const REGEX_SPECIAL = /[.*+?^${}()|[\]\\]/g;

/**
 * The value of the first entry with this key, as a lookup finds it, or undefined: read
 * from the one line that holds it, without splitting the whole file (a map of twenty
 * thousand entries is searched in well under a millisecond).
 */
export function mapEntry(content: string, key: string): string | undefined {
  if (key === '' || /[ \t\r\n]/.test(key)) return undefined;
  const line = new RegExp(`(?:^|\\n)[ \\t]*${key.replace(REGEX_SPECIAL, '\\$&')}(?=[ \\t\\r\\n]|$)`, 'g');
  for (let m = line.exec(content); m !== null; m = line.exec(content)) {
    const start = m[0].startsWith('\n') ? m.index + 1 : m.index;
    // A line whose very first character is `#` is a comment, whatever follows.
    if (content[start] === '#') continue;
    const end = content.indexOf('\n', start);
    return parseMapFile(content.slice(start, end < 0 ? content.length : end))[0]?.value;
  }
  return undefined;
}
