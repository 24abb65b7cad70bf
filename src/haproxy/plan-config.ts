/** Helpers over parsed configurations for the deployment plan. */
import { isIPv4, isIPv6 } from 'node:net';
import type { ConfigLine, HaproxyConfig, Section } from './config.ts';

export function sectionLabel(section: Section): string {
  return section.name === '' ? section.type : `${section.type} ${section.name}`;
}

export const lineKey = (line: ConfigLine) => JSON.stringify([line.keyword, ...line.args]);

export const compareStrings = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The defaults section named after `from` in a section header, if any. */
function fromName(section: Section): string | undefined {
  const i = section.header.args.indexOf('from');
  return i >= 0 ? section.header.args[i + 1] : undefined;
}

/**
 * Where a configuration's defaults sections stand: the first one of each name, and the
 * positions of all of them, by section index. Found in one pass, once per configuration,
 * and shared by a configuration derived by editing section bodies (the fast path's),
 * whose sections keep their order and headers: a plan over a few backends of a large
 * configuration then costs what those backends cost.
 */
interface DefaultsLayout {
  named: Map<string, number>;
  positions: number[];
}

const layouts = new WeakMap<HaproxyConfig, DefaultsLayout>();

function layoutOf(config: HaproxyConfig): DefaultsLayout {
  let layout = layouts.get(config);
  if (layout) return layout;
  layout = { named: new Map(), positions: [] };
  config.sections.forEach((s, i) => {
    if (s.type !== 'defaults') return;
    layout!.positions.push(i);
    if (!layout!.named.has(s.name)) layout!.named.set(s.name, i);
  });
  layouts.set(config, layout);
  return layout;
}

/** `next` has `base`'s sections in the same order with the same headers (only bodies edited): it shares the defaults layout. */
export function sameSectionLayout(next: HaproxyConfig, base: HaproxyConfig): void {
  const layout = layouts.get(base);
  if (layout && next.sections.length === base.sections.length) layouts.set(next, layout);
}

/** The index of a section of `config`, found by its offset (sections are in text order). */
function indexOfSection(config: HaproxyConfig, section: Section): number {
  const { sections } = config;
  let lo = 0;
  let hi = sections.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = sections[mid]!;
    if (at === section) return mid;
    if (at.offset < section.offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return sections.indexOf(section);
}

/** The last defaults position before section `index`, if any. */
function defaultsBefore(positions: readonly number[], index: number): number | undefined {
  let lo = 0;
  let hi = positions.length - 1;
  let found: number | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (positions[mid]! < index) {
      found = positions[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * The defaults sections a section inherits from, outermost first. A proxy
 * takes the defaults section its header names with `from`, otherwise the last
 * defaults section before it; a defaults section only inherits through `from`
 * (each one starts afresh otherwise).
 */
export function defaultsChain(config: HaproxyConfig, section: Section): Section[] {
  const { named, positions } = layoutOf(config);
  const byIndex = (i: number | undefined) => (i === undefined ? undefined : config.sections[i]);
  const from = fromName(section);
  let current = from !== undefined ? byIndex(named.get(from)) : section.type !== 'defaults' ? byIndex(defaultsBefore(positions, indexOfSection(config, section))) : undefined;
  const chain: Section[] = [];
  while (current && !chain.includes(current)) {
    chain.unshift(current);
    const parent = fromName(current);
    current = parent === undefined ? undefined : byIndex(named.get(parent));
  }
  return chain;
}

/** The last line with a keyword in the section, else in the nearest defaults section that has one. */
export function effectiveLine(config: HaproxyConfig, section: Section, keyword: string): ConfigLine | undefined {
  for (const s of [section, ...defaultsChain(config, section).reverse()]) {
    const found = s.lines.findLast((l) => l.keyword === keyword);
    if (found) return found;
  }
  return undefined;
}

const HASHING = /^(source|uri|url_param|hdr\(.*\)|rdp-cookie(\(.*\))?|hash)$/;
const DYNAMIC = /^(roundrobin|leastconn|first|random(\(\d+\))?)$/;

export interface Balance {
  algorithm: string;
  /** Whether haproxy accepts `add server` and arbitrary `set weight` for it. */
  dynamic: boolean;
  description: string;
}

/**
 * The load-balancing algorithm of a backend. haproxy 2.6 refuses dynamic
 * servers ("Backend must use a dynamic load balancing") and weight changes
 * other than 0%/100% with static-rr and with hashing on a map-based table
 * (the default hash-type); consistent hashing and the others are dynamic.
 */
export function balanceOf(config: HaproxyConfig, section: Section): Balance {
  const balance = effectiveLine(config, section, 'balance');
  const algorithm = balance?.args[0] ?? 'roundrobin';
  const description = balance ? `balance ${balance.args.join(' ')}` : 'balance roundrobin';
  if (HASHING.test(algorithm)) {
    const hashType = effectiveLine(config, section, 'hash-type')?.args[0] ?? 'map-based';
    return { algorithm, dynamic: hashType === 'consistent', description: `${description} with hash-type ${hashType}` };
  }
  return { algorithm, dynamic: DYNAMIC.test(algorithm), description };
}

/** An IP literal server address with an optional port, as haproxy reads it. */
export interface IpAddress {
  host: string;
  port: number | undefined;
}

/**
 * Reads `1.2.3.4`, `1.2.3.4:80`, `[::1]:80`, `::1:80` (haproxy takes the part
 * after the last colon as the port) and the `ipv4@`/`ipv6@` prefixed forms.
 * Names, port offsets or ranges, and socket addresses give undefined.
 */
export function parseIpAddress(address: string): IpAddress | undefined {
  const bare = address.replace(/^ipv[46]@/, '');
  const withPort = /^(.*):(\d{1,5})$/.exec(bare);
  if (withPort) {
    const host = withPort[1]!.replace(/^\[(.*)\]$/, '$1');
    const port = Number(withPort[2]);
    if ((isIPv4(host) || isIPv6(host)) && port >= 1 && port <= 65535) return { host, port };
    return undefined;
  }
  const host = bare.replace(/^\[(.*)\]$/, '$1');
  if (isIPv4(host) || (bare.startsWith('[') && isIPv6(host))) return { host, port: undefined };
  return undefined;
}

/**
 * Human-readable differences between two line sequences, e.g.
 * `backend be: line "timeout server 5s" changed to "timeout server 9s"`.
 */
export function diffLines(label: string, before: readonly ConfigLine[], after: readonly ConfigLine[]): string[] {
  const keysBefore = before.map(lineKey);
  const keysAfter = after.map(lineKey);
  let start = 0;
  while (start < before.length && start < after.length && keysBefore[start] === keysAfter[start]) start++;
  let endB = before.length;
  let endA = after.length;
  while (endB > start && endA > start && keysBefore[endB - 1] === keysAfter[endA - 1]) {
    endB--;
    endA--;
  }
  const a = before.slice(start, endB);
  const b = after.slice(start, endA);
  const ka = keysBefore.slice(start, endB);
  const kb = keysAfter.slice(start, endA);
  if (a.length === 0 && b.length === 0) return [];
  // A table this large would not help a reader anyway.
  if (a.length * b.length > 1_000_000) return [`${label}: ${Math.max(a.length, b.length)} lines changed`];
  // Longest common subsequence, then walk it into removed/added runs.
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] = ka[i] === kb[j] ? table[(i + 1) * width + j + 1]! + 1 : Math.max(table[(i + 1) * width + j]!, table[i * width + j + 1]!);
    }
  }
  const reasons: string[] = [];
  let removed: ConfigLine[] = [];
  let added: ConfigLine[] = [];
  const flush = () => {
    const pairs = Math.min(removed.length, added.length);
    for (let k = 0; k < pairs; k++) reasons.push(`${label}: line "${removed[k]!.text}" changed to "${added[k]!.text}"`);
    for (const l of removed.slice(pairs)) reasons.push(`${label}: line "${l.text}" removed`);
    for (const l of added.slice(pairs)) reasons.push(`${label}: line "${l.text}" added`);
    removed = [];
    added = [];
  };
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && ka[i] === kb[j]) {
      flush();
      i++;
      j++;
    } else if (j >= b.length || (i < a.length && table[(i + 1) * width + j]! >= table[i * width + j + 1]!)) {
      removed.push(a[i++]!);
    } else {
      added.push(b[j++]!);
    }
  }
  flush();
  return reasons;
}
