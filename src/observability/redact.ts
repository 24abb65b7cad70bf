import type { KubeObject } from '../k8s/resource.ts';
import { HeldValues, MIN_LENGTH } from './held-values.ts';

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

/** Values held at most by default: some 14k TLS Secrets with 2048-bit keys, under 40 MiB. */
const MAX_SECRETS = 400_000;
/**
 * Values one Secret may have held: a 4096-bit key is some 50 lines. A Secret of a
 * megabyte of short lines would otherwise take a sixth of the limit, and a few such
 * Secrets all of it, leaving the others' values unguarded.
 */
const MAX_PER_SECRET = 1_024;

export interface SecretScrubberOptions {
  /** At most this many values are held; default 400,000. */
  maxValues?: number;
  /** At most this many of one Secret, its whole values first; default 1,024. */
  maxPerSecret?: number;
  /**
   * Told once each time a limit is first reached, the scrubber's or a Secret's (naming
   * it): values beyond it are not blanked out.
   */
  onLimit?: (message: string) => void;
}

/**
 * Remembers the values of the Secrets the controller watches and blanks them out of
 * any text bound for a log, a trace or debug output. A second line of defence: the
 * first is that those outputs never carry object contents.
 *
 * Values are held per Secret (its owner: the watched set and the object's key), so a
 * Secret that changes or goes away takes its old values with it; what is held is
 * what the watched Secrets hold now, not everything they ever held. They are held as
 * hashes (held-values.ts), so a text is searched in one pass whatever their number,
 * and a value costs the same few dozen bytes whatever its length.
 */
export class SecretScrubber {
  private readonly values = new HeldValues();
  /** Owner → the values it holds, and the generation (graph) that last taught them. */
  private readonly owners = new Map<string, { values: Int32Array; generation: number }>();
  private readonly max: number;
  private readonly maxPerSecret: number;
  /** Owners told about for holding more than maxPerSecret values, until they hold fewer. */
  private readonly capped = new Set<string>();
  private readonly onLimit: ((message: string) => void) | undefined;
  private generation = 0;
  private atLimit = false;
  /** Values left out because the limit was reached, since it was last reported. */
  skipped = 0;

  constructor(options: SecretScrubberOptions = {}) {
    this.max = options.maxValues ?? MAX_SECRETS;
    this.maxPerSecret = options.maxPerSecret ?? MAX_PER_SECRET;
    this.onLimit = options.onLimit;
  }

  /**
   * Learns the values of a Secret (data, base64, and stringData), replacing what
   * `owner` held before; other kinds are ignored. The owner defaults to the object's
   * namespace/name.
   */
  learn(object: KubeObject, owner = `${object.metadata.namespace ?? ''}/${object.metadata.name}`): void {
    if (object.kind !== 'Secret') return;
    const wholes = new Set<string>();
    const lines = new Set<string>();
    for (const field of ['data', 'stringData'] as const) {
      const entries = object[field];
      if (entries === null || typeof entries !== 'object') continue;
      for (const raw of Object.values(entries as Record<string, unknown>)) {
        if (typeof raw !== 'string') continue;
        if (field === 'stringData') {
          valuesOf(raw, wholes, lines);
          continue;
        }
        const decoded = Buffer.from(raw, 'base64').toString('utf8');
        // A field that holds certificates and nothing else is public, in base64 too.
        if (onlyCertificates(decoded)) continue;
        valuesOf(raw, wholes, lines);
        valuesOf(decoded, wholes, lines);
      }
    }
    const found = [...new Set([...wholes, ...lines])];
    if (found.length <= this.maxPerSecret) this.capped.delete(owner);
    else if (!this.capped.has(owner)) {
      this.capped.add(owner);
      this.onLimit?.(`Secret ${owner} has ${found.length} values to blank out of logs and traces, more than the ${this.maxPerSecret} one Secret may have held: the first ${this.maxPerSecret} are, whole values before the lines of multi-line ones`);
    }
    const previous = this.owners.get(owner);
    if (previous) this.release(previous.values);
    const held: number[] = [];
    for (const value of found.slice(0, this.maxPerSecret)) {
      const id = this.values.add(value);
      if (id < 0) continue;
      // A value new to the table past the limit goes again; one held already costs nothing more.
      if (this.values.size > this.max) {
        this.values.release(id);
        this.skipped++;
        continue;
      }
      held.push(id);
    }
    this.owners.set(owner, { values: Int32Array.from(held), generation: this.generation });
    if (this.skipped > 0 && !this.atLimit) {
      this.atLimit = true;
      this.onLimit?.(`the Secret scrubber holds its limit of ${this.max} values: values of further watched Secrets are not blanked out of logs and traces`);
    } else if (this.values.size < this.max) this.atLimit = false;
  }

  /** Forgets what an owner held (its Secret was deleted, or left the watched set). */
  forget(owner: string): void {
    const previous = this.owners.get(owner);
    if (!previous) return;
    this.owners.delete(owner);
    this.capped.delete(owner);
    this.release(previous.values);
  }

  /** Owners whose key starts with `prefix` (e.g. one watched set's). */
  ownersWith(prefix: string): string[] {
    return [...this.owners.keys()].filter((o) => o.startsWith(prefix));
  }

  /**
   * A new graph starts and teaches its Secrets again: what the previous graph taught
   * and the new one does not by the next call (a set the new configuration dropped)
   * is forgotten then.
   */
  retire(): void {
    for (const [owner, entry] of [...this.owners]) if (entry.generation < this.generation) this.forget(owner);
    this.generation++;
  }

  /** Values held, each once however many Secrets hold it. */
  get size(): number {
    return this.values.size;
  }

  scrub(text: string): string {
    const stretches = this.values.find(text);
    if (stretches.length === 0) return text;
    let out = '';
    let from = 0;
    for (const [start, end] of stretches) {
      out += text.slice(from, start) + REDACTED;
      from = end;
    }
    return out + text.slice(from);
  }

  /** The same, through every string of a JSON-like value. */
  scrubDeep<T>(value: T): T {
    if (this.values.size === 0) return value;
    return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? this.scrub(v) : v))) as T;
  }

  private release(values: Int32Array): void {
    for (const id of values) this.values.release(id);
    if (this.values.size < this.max) {
      this.atLimit = false;
      this.skipped = 0;
    }
  }
}

/** Whether a text is PEM certificates and nothing else. */
function onlyCertificates(text: string): boolean {
  return text.includes('-----BEGIN CERTIFICATE-----') && text.replace(PEM_CERT, '').trim() === '';
}

/** The values worth blanking out of one Secret field: the whole value, and the lines of a multi-line one. */
function valuesOf(value: string, wholes: Set<string>, lines: Set<string>): void {
  // Certificates are public, and showing them helps; a key beside them is still learned.
  const trimmed = value.replace(PEM_CERT, '\n').trim();
  if (trimmed.length >= MIN_LENGTH) wholes.add(trimmed);
  // A line of a multi-line secret (a PEM body) can turn up on its own in a message.
  if (trimmed.includes('\n')) for (const line of trimmed.split('\n')) if (line.trim().length >= 16 && !line.startsWith('-----')) lines.add(line.trim());
}
