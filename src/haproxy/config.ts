/** haproxy.cfg split into sections and tokenised lines, with 1-based line numbers. */

export const SECTION_KEYWORDS = [
  'global',
  'defaults',
  'frontend',
  'backend',
  'listen',
  'resolvers',
  'peers',
  'userlist',
  'mailers',
  'program',
  'http-errors',
  'ring',
  'cache',
  'log-forward',
  'fcgi-app',
] as const;
export type SectionType = (typeof SECTION_KEYWORDS)[number];
const SECTION_SET: ReadonlySet<string> = new Set(SECTION_KEYWORDS);

export interface ConfigLine {
  /** 1-based line number in the source text. */
  line: number;
  keyword: string;
  args: string[];
  /** The source line without its trailing comment and surrounding whitespace. */
  text: string;
  /** The trailing comment, without `#` and surrounding whitespace; '' when there is none. */
  comment: string;
}

export interface Section {
  type: SectionType;
  /** '' for unnamed sections (global, anonymous defaults). */
  name: string;
  header: ConfigLine;
  lines: ConfigLine[];
}

export interface HaproxyConfig {
  /** Lines before the first section header; haproxy rejects them. */
  orphans: ConfigLine[];
  sections: Section[];
  /** Lines that could not be tokenised, e.g. an unterminated quote. */
  errors: { line: number; message: string }[];
}

export function isSectionKeyword(word: string): word is SectionType {
  return SECTION_SET.has(word);
}

export function parseConfig(source: string): HaproxyConfig {
  const config: HaproxyConfig = { orphans: [], sections: [], errors: [] };
  let current: Section | undefined;
  const rawLines = source.split('\n');
  for (let i = 0; i < rawLines.length; i++) {
    const raw = rawLines[i]!.replace(/\r$/, '');
    const tokens = tokenize(raw);
    if ('error' in tokens) {
      config.errors.push({ line: i + 1, message: tokens.error });
      continue;
    }
    const [keyword, ...args] = tokens.args;
    if (keyword === undefined) continue;
    const line: ConfigLine = { line: i + 1, keyword, args, text: tokens.text, comment: tokens.comment };
    if (isSectionKeyword(keyword)) {
      current = { type: keyword, name: args[0] ?? '', header: line, lines: [] };
      config.sections.push(current);
    } else if (current) {
      current.lines.push(line);
    } else {
      config.orphans.push(line);
    }
  }
  return config;
}

/**
 * Splits a line into words the way haproxy does: whitespace separates, `#`
 * starts a comment, backslash escapes one character, and single or double
 * quotes group words (quotes are removed; escapes inside double quotes apply).
 */
export function tokenize(raw: string): { args: string[]; text: string; comment: string } | { error: string } {
  const args: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  let end = raw.length;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < raw.length) word += raw[++i];
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < raw.length) {
      word += raw[++i];
      inWord = true;
    } else if (c === '#') {
      end = i;
      break;
    } else if (c === ' ' || c === '\t') {
      if (inWord) args.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) return { error: `unterminated ${quote === '"' ? 'double' : 'single'} quote` };
  if (inWord) args.push(word);
  return { args, text: raw.slice(0, end).trim(), comment: end < raw.length ? raw.slice(end + 1).trim() : '' };
}

/** Finds a named section of a type; names are unique per type in a valid config. */
export function findSection(config: HaproxyConfig, type: SectionType, name: string): Section | undefined {
  return config.sections.find((s) => s.type === type && s.name === name);
}
