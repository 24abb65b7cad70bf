import type { KubeObject } from '../k8s/resource.ts';

export const REDACTED = '[redacted]';

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;
const PEM_KEY = /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g;

/** Replaces every PEM private key block; certificates stay readable. */
export function redactPem(text: string): string {
  return text.replace(PEM_KEY, (_block, kind: string) => `-----BEGIN ${kind}PRIVATE KEY-----\n${REDACTED}\n-----END ${kind}PRIVATE KEY-----`);
}

/** haproxy.cfg directives whose arguments are credentials. */
const CFG_SECRETS: readonly RegExp[] = [
  // userlist: user <name> password|insecure-password <secret>
  /^(\s*user\s+\S+\s+(?:password|insecure-password)\s+)\S+/,
  /^(\s*stats\s+auth\s+[^:\s]+:)\S+/,
  // e.g. http-request set-header Authorization "Basic ...", or a server's proxy credentials
  /^(.*\b(?:set-header|add-header)\s+(?:Authorization|Proxy-Authorization|X-Api-Key)\s+).+$/i,
  /^(.*\b(?:password|secret|token)\s+)\S+/i,
];

/** A haproxy.cfg with credentials replaced, for debug output. */
export function redactHaproxyConfig(text: string): string {
  return redactPem(
    text
      .split('\n')
      .map((line) => {
        for (const pattern of CFG_SECRETS) if (pattern.test(line)) return line.replace(pattern, `$1${REDACTED}`);
        return line;
      })
      .join('\n'),
  );
}

const SECRET_NAME = /pass(word|wd)?|secret|token|credential|private|api[-_]?key|^key$|auth/i;

/** A copy of a value tree with every field whose name suggests a credential replaced. */
export function redactFields(value: unknown, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactFields(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_NAME.test(k) && v !== null && typeof v !== 'object' ? REDACTED : redactFields(v, depth + 1)]),
    );
  }
  return typeof value === 'string' ? redactPem(value) : value;
}

/** The host and path of a URL, without user information or query (which may carry tokens). */
export function safeAddress(address: string): string {
  try {
    const url = new URL(address);
    if (!url.host) return address;
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return address.replace(/\/\/[^/@\s]*@/, '//');
  }
}

const MIN_SECRET = 8;
const MAX_SECRETS = 20_000;

/**
 * Remembers the values of the Secrets the controller watches and blanks them out of
 * any text bound for a log, a trace or debug output. A second line of defence: the
 * first is that those outputs never carry object contents.
 */
export class SecretScrubber {
  private readonly values = new Set<string>();

  /** Learns the values of a Secret (data, base64, and stringData). Other kinds are ignored. */
  learn(object: KubeObject): void {
    if (object.kind !== 'Secret') return;
    for (const field of ['data', 'stringData'] as const) {
      const entries = object[field];
      if (entries === null || typeof entries !== 'object') continue;
      for (const raw of Object.values(entries as Record<string, unknown>)) {
        if (typeof raw !== 'string') continue;
        this.add(raw);
        if (field === 'data') this.add(Buffer.from(raw, 'base64').toString('utf8'));
      }
    }
  }

  get size(): number {
    return this.values.size;
  }

  scrub(text: string): string {
    if (this.values.size === 0 || text.length < MIN_SECRET) return text;
    let out = text;
    for (const value of this.values) if (out.includes(value)) out = out.replaceAll(value, REDACTED);
    return out;
  }

  /** The same, through every string of a JSON-like value. */
  scrubDeep<T>(value: T): T {
    if (this.values.size === 0) return value;
    return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? this.scrub(v) : v))) as T;
  }

  private add(value: string): void {
    if (this.values.size >= MAX_SECRETS) return;
    // Certificates are public, and showing them helps; a key beside them is still learned.
    const trimmed = value.replace(PEM_CERT, '\n').trim();
    if (trimmed.length >= MIN_SECRET) this.values.add(trimmed);
    // A line of a multi-line secret (a PEM body) can turn up on its own in a message.
    if (trimmed.includes('\n')) for (const line of trimmed.split('\n')) if (line.trim().length >= 16 && !line.startsWith('-----')) this.values.add(line.trim());
  }
}
