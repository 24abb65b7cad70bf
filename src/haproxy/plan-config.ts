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

/** Each section's defaults chain, found in one pass over a configuration's sections. */
const chains = new WeakMap<HaproxyConfig, Map<Section, Section[]>>();

function chainsOf(config: HaproxyConfig): Map<Section, Section[]> {
  let found = chains.get(config);
  if (found) return found;
  found = new Map();
  const named = new Map<string, Section>();
  for (const s of config.sections) if (s.type === 'defaults' && !named.has(s.name)) named.set(s.name, s);
  let lastDefaults: Section | undefined;
  for (const section of config.sections) {
    const chain: Section[] = [];
    const from = fromName(section);
    let current = from !== undefined ? named.get(from) : section.type !== 'defaults' ? lastDefaults : undefined;
    while (current && !chain.includes(current)) {
      chain.unshift(current);
      const parent = fromName(current);
      current = parent === undefined ? undefined : named.get(parent);
    }
    found.set(section, chain);
    if (section.type === 'defaults') lastDefaults = section;
  }
  chains.set(config, found);
  return found;
}

/**
 * The defaults sections a section inherits from, outermost first. A proxy
 * takes the defaults section its header names with `from`, otherwise the last
 * defaults section before it; a defaults section only inherits through `from`
 * (each one starts afresh otherwise). Found for every section at once, so a
 * plan over many backends stays linear.
 */
export function defaultsChain(config: HaproxyConfig, section: Section): Section[] {
  return chainsOf(config).get(section) ?? [];
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
