/**
 * Knowledge of haproxy 2.6 `server` / `default-server` settings needed to tell
 * whether a server can be created at runtime with `add server`, and with
 * which words, so that it ends up configured exactly as a fresh start would
 * configure it.
 */

/** Settings that are a single word. */
const FLAG_KEYWORDS = [
  'agent-check', 'allow-0rtt', 'backup', 'check', 'check-send-proxy', 'check-ssl', 'check-via-socks4',
  'disabled', 'enabled', 'force-sslv3', 'force-tlsv10', 'force-tlsv11', 'force-tlsv12', 'force-tlsv13',
  'no-agent-check', 'no-backup', 'no-check', 'no-check-ssl', 'no-send-proxy', 'no-send-proxy-v2',
  'no-send-proxy-v2-ssl', 'no-send-proxy-v2-ssl-cn', 'no-ssl', 'no-ssl-reuse', 'no-sslv3', 'no-tls-tickets',
  'no-tlsv10', 'no-tlsv11', 'no-tlsv12', 'no-tlsv13', 'no-tfo', 'non-stick', 'send-proxy', 'send-proxy-v2',
  'send-proxy-v2-ssl', 'send-proxy-v2-ssl-cn', 'ssl', 'ssl-reuse', 'stick', 'tfo', 'tls-tickets',
] as const;

/** Settings followed by exactly one value. */
const VALUE_KEYWORDS = [
  'addr', 'agent-addr', 'agent-inter', 'agent-port', 'agent-send', 'alpn', 'ca-file', 'check-alpn', 'check-proto',
  'check-sni', 'ciphers', 'ciphersuites', 'cookie', 'crl-file', 'crt', 'downinter', 'error-limit', 'fall',
  'fastinter', 'id', 'init-addr', 'inter', 'log-proto', 'max-reuse', 'maxconn', 'maxqueue', 'minconn', 'namespace',
  'npn', 'observe', 'on-error', 'on-marked-down', 'on-marked-up', 'pool-low-conn', 'pool-max-conn',
  'pool-purge-delay', 'port', 'proto', 'proxy-v2-options', 'redir', 'resolve-net', 'resolve-opts',
  'resolve-prefer', 'resolvers', 'rise', 'slowstart', 'sni', 'socks4', 'ssl-max-ver', 'ssl-min-ver', 'tcp-ut',
  'track', 'verify', 'verifyhost', 'weight', 'ws',
] as const;

const FLAGS: ReadonlySet<string> = new Set(FLAG_KEYWORDS);
const VALUES: ReadonlySet<string> = new Set(VALUE_KEYWORDS);

/** Every setting the plan understands; anything else makes a server opaque to it. */
export const SERVER_KEYWORDS: readonly string[] = [...FLAG_KEYWORDS, ...VALUE_KEYWORDS, 'source'].sort();

/**
 * Settings that haproxy 2.6.12 accepts on `add server` (checked against the
 * binary: every other setting of SERVER_KEYWORDS is refused with "not accepted
 * for dynamic server" or "unknown keyword"). `track` is accepted by haproxy but
 * left out on purpose: it fails when the tracked server was itself added at
 * runtime, which the plan cannot know. `disabled`/`enabled` and `weight` are
 * handled as state and weight, not passed through.
 */
export const RUNTIME_SERVER_KEYWORDS: ReadonlySet<string> = new Set([
  'addr', 'agent-addr', 'agent-check', 'agent-inter', 'agent-port', 'agent-send', 'allow-0rtt', 'alpn', 'backup',
  'ca-file', 'check', 'check-alpn', 'check-proto', 'check-send-proxy', 'check-sni', 'check-ssl', 'check-via-socks4',
  'ciphers', 'ciphersuites', 'crl-file', 'crt', 'downinter', 'error-limit', 'fall', 'fastinter', 'force-sslv3',
  'force-tlsv10', 'force-tlsv11', 'force-tlsv12', 'force-tlsv13', 'id', 'inter', 'maxconn', 'maxqueue', 'minconn',
  'no-backup', 'no-send-proxy', 'no-send-proxy-v2', 'no-ssl-reuse', 'no-sslv3', 'no-tfo', 'no-tls-tickets',
  'no-tlsv10', 'no-tlsv11', 'no-tlsv12', 'no-tlsv13', 'npn', 'observe', 'on-error', 'on-marked-down',
  'on-marked-up', 'pool-low-conn', 'pool-max-conn', 'pool-purge-delay', 'port', 'proto', 'proxy-v2-options', 'rise',
  'send-proxy', 'send-proxy-v2', 'send-proxy-v2-ssl', 'send-proxy-v2-ssl-cn', 'slowstart', 'sni', 'source', 'ssl',
  'ssl-max-ver', 'ssl-min-ver', 'tfo', 'tls-tickets', 'verify', 'verifyhost', 'weight', 'ws',
]);

/**
 * Settings that read a file at parse time. At runtime haproxy 2.6 only finds
 * such a file if the running configuration already loaded it under the same
 * path (it refuses anything else with "unable to load"/"unable to stat").
 */
export const PRELOADED_FILE_KEYWORDS: ReadonlySet<string> = new Set(['ca-file', 'crl-file', 'crt']);

/** Settings that only steer name resolution, which an IP literal never undergoes. */
const RESOLUTION_KEYWORDS: ReadonlySet<string> = new Set([
  'init-addr', 'resolvers', 'resolve-prefer', 'resolve-net', 'resolve-opts',
]);

/** `no-X` forms that merely undo an earlier `X` (from a default-server line). */
const UNDOES: ReadonlyMap<string, string> = new Map([
  ['no-check', 'check'],
  ['no-agent-check', 'agent-check'],
]);

/** One setting with its values, e.g. `['inter', '2s']`. */
export type OptionGroup = readonly string[];

/** Splits setting words into settings; fails on a word it cannot place. */
export function groupOptions(words: readonly string[]): { groups: OptionGroup[] } | { error: string } {
  const groups: OptionGroup[] = [];
  let i = 0;
  while (i < words.length) {
    const keyword = words[i]!;
    if (FLAGS.has(keyword)) {
      groups.push([keyword]);
      i += 1;
    } else if (VALUES.has(keyword)) {
      if (i + 1 >= words.length) return { error: `"${keyword}" lacks its value` };
      groups.push([keyword, words[i + 1]!]);
      i += 2;
    } else if (keyword === 'source') {
      if (i + 1 >= words.length) return { error: '"source" lacks its address' };
      const group = ['source', words[i + 1]!];
      i += 2;
      // `source` swallows its own `usesrc` and `interface` sub-settings.
      while ((words[i] === 'usesrc' || words[i] === 'interface') && i + 1 < words.length) {
        group.push(words[i]!, words[i + 1]!);
        i += 2;
      }
      groups.push(group);
    } else {
      return { error: `unknown setting "${keyword}"` };
    }
  }
  return { groups };
}

export type ServerState = 'ready' | 'maint' | 'drain';

export interface EffectiveServer {
  /** Admin state from `disabled`/`enabled`; drain is decided by the caller. */
  disabled: boolean;
  /** Effective weight; haproxy's default is 1. */
  weight: string;
  /** Settings other than state and weight, in the order haproxy would apply them. */
  settings: OptionGroup[];
}

/**
 * The settings a server really gets: the default-server settings in force
 * where it is declared followed by its own. `add server` parses its words in
 * order the same way, so keeping this order reproduces the overrides; only
 * state, weight and pure undo forms (which `add server` refuses) are resolved
 * here, and resolution-only settings are dropped for IP literals.
 */
export function effectiveServer(groups: readonly OptionGroup[], ipLiteral: boolean): EffectiveServer {
  let disabled = false;
  let weight = '1';
  let settings: OptionGroup[] = [];
  for (const group of groups) {
    const keyword = group[0]!;
    const undone = UNDOES.get(keyword);
    if (keyword === 'disabled') disabled = true;
    else if (keyword === 'enabled') disabled = false;
    else if (keyword === 'weight') weight = group[1]!;
    else if (undone !== undefined) settings = settings.filter((g) => g[0] !== undone);
    else if (ipLiteral && RESOLUTION_KEYWORDS.has(keyword)) continue;
    else settings.push(group);
  }
  return { disabled, weight, settings };
}
