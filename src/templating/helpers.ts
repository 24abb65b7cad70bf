import { X509Certificate, createHash, createPrivateKey, hash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import type { ObjectRef, RenderWarning } from '../events.ts';
import { type AuxKind, auxPath } from './rendered.ts';
import type { ReuseFrames } from './reuse-frames.ts';
import type { CaughtSkip, OnceJournal } from './once-journal.ts';
import { deepFreeze } from './deep-freeze.ts';
import { abort, abortRender, describeValue } from './abort.ts';
import { haproxyWord, isFileName, lfText, mapKey, regexEscape } from './escape.ts';
import { fileName } from './file-name.ts';
import { type Located, ObjectSkip } from './locate.ts';
import { compareCodeUnits } from './readonly.ts';
import { type Declaration, declare } from './status-declarations.ts';
import type { SystematicFaults, Thrown } from './systematic-faults.ts';

export type { RenderWarning } from '../events.ts';

/**
 * The helpers templates see as `h`. Each is pure and deterministic: output
 * depends on the arguments only, and anything that iterates keys sorts them.
 * Misuse aborts the render with a message, reported at the calling line.
 * Two helpers record into the render instead of returning data: `warn` (a
 * warning the render result carries) and `certFile` (a certificate file the
 * render writes); both work only while rendering.
 *
 * The validators (`is…`) are how templates keep cluster data out of
 * configuration syntax: a value that fails one is skipped with `h.warn`,
 * never written, so one bad object cannot break the whole configuration.
 * Each accepts only what haproxy 2.6 reads back as the same single value.
 */
export interface Helpers {
  /** `maps/<name>`, relative to haproxy.cfg's directory; the map template must exist. */
  mapPath(name: string): string;
  /** `general/<name>`; the general file template must exist. */
  filePath(name: string): string;
  /** `ssl/<name>`; the certificate template must exist. */
  certPath(name: string): string;
  /** One haproxy.cfg word, exactly as `<%= %>` writes it there; emit it with `<%- %>`. */
  word(value: unknown): string;
  /** A map file key: non-empty, no whitespace or control characters, no leading `#`. */
  mapKey(value: unknown): string;
  /** A haproxy name ([A-Za-z0-9_.:-]) that is distinct for distinct parts. */
  identifier(...parts: unknown[]): string;
  /** A sorted copy; stable, keys compared by type then value, missing keys last. */
  sortBy<T>(list: Iterable<T>, key: Key<T>): T[];
  /** The first item of each distinct key (the item itself without a key), in list order. */
  uniq<T>(list: Iterable<T>, key?: Key<T>): T[];
  /** `[key, items]` pairs sorted by key; items keep list order. */
  groupBy<T>(list: Iterable<T>, key: Key<T>): [SortKey, T[]][];
  /** Own enumerable keys sorted by code unit; [] for null or undefined. */
  keys(object: unknown): string[];
  /** `[key, value]` pairs sorted by key; [] for null or undefined. */
  entries(object: unknown): [string, unknown][];
  /** Decodes standard base64 (Secret data) to UTF-8 text; aborts on anything else. */
  b64decode(data: unknown): string;
  /** A DNS hostname (RFC 1123 labels), optionally with a leading `*.` wildcard label. */
  isHostname(value: unknown): boolean;
  /** An absolute URL path made of RFC 3986 path characters, without query or fragment. */
  isPath(value: unknown): boolean;
  /** Aborts the render with this message, reported at the calling line; also inside h.isolate. */
  fail(message: unknown): never;
  /** The value at a dotted path (or a list of segments, for keys with dots), or `fallback` when absent or null. */
  get(object: unknown, path: string | readonly (string | number)[], fallback?: unknown): unknown;

  /**
   * Records a warning about `subject` (a Kubernetes object, named as
   * `Kind namespace/name`, or a string) that the render result carries, with
   * the template and line that raised it, and `details.field`, the field at
   * fault; repeats of the same warning are kept once. Returns '' so that it can
   * sit in `<%- %>` as well as in `<% %>`.
   */
  warn(subject: unknown, message: unknown, details?: { field?: unknown; reason?: unknown }): string;
  /**
   * Runs `fn` for one object in isolation and returns its result. If it throws
   * (a wrong-typed field, an h.skip, a helper refusing a value), the object is
   * skipped: a warning names it, the template and line, and the certificate
   * files `fn` added are taken back, and `options.fallback` is returned. With
   * `options.part` (e.g. `spec.tls[0]`) only that part of the object is
   * skipped. Text must leave `fn` as its result (or through include()), never
   * be written by `<%= %>` inside it, so that a failure leaves nothing behind.
   * Faults of the templates themselves (h.fail, an unknown snippet or name, a
   * write to read-only data) still fail the render, and so does a line that
   * throws a TypeError for every object of a site (systematic-faults.ts).
   */
  isolate<T>(subject: unknown, fn: () => T, options?: { part?: unknown; fallback?: T }): T | undefined;
  /** h.isolate for each item of the list, the item being the subject: the results of the items that did not fail, in order. */
  each<T, R>(list: Iterable<T>, fn: (item: T, index: number) => R): R[];
  /**
   * Skips the object of the innermost h.isolate, naming the field at fault and, as
   * `reason`, why in the words of a status condition (e.g. UnsupportedValue);
   * outside h.isolate it fails the render.
   */
  skip(message: unknown, field?: unknown, reason?: unknown): never;
  /**
   * The skip of this object (or of its `part`) in this render so far, as
   * `{ message, field, reason }`, or undefined: how a template declares the status
   * of an object it refused, with the skip's own words.
   */
  skipped(subject: unknown, part?: unknown): { message: string; field?: string; reason?: string } | undefined;
  /**
   * Declares what the render makes of `subject`, for its status: `conditions`
   * (`{ type, status, reason, message, live }`), `served`, other `fields`; with
   * `listener: name`, or `parentRef`/`ancestorRef` and `controllerName`, for that
   * entry of the status list. Repeated calls merge; a call inside an h.isolate that
   * fails is taken back with the rest of what the object added. Returns ''.
   */
  status(subject: unknown, declaration: unknown): string;
  /** The value if it is a list, [] if it is absent or null; anything else skips the object (h.skip) naming `field`. */
  list(value: unknown, field: unknown): readonly unknown[];
  /**
   * A plain file name for these parts (without extension), distinct for
   * distinct parts, whatever they hold: `a-z0-9-_` only, at most 113 characters.
   * For files named after cluster objects: `h.certFile(h.fileName(ns, name) + '.pem', pem)`.
   */
  fileName(...parts: unknown[]): string;
  /**
   * Computes a value once per render and returns the same value to every later
   * call with that key, from any template: a model that several templates share
   * (routes for haproxy.cfg and the maps) is built once.
   *
   * With `{ keep: true }` the value is frozen through, and the next render reuses it
   * while everything computing it read returns the same objects (a model of the
   * Ingresses, after only an EndpointSlice changed), saying again the warnings,
   * statuses and skips computing it made. `compute` promises to be a function of
   * what it reads inside itself (resources, values, other h.once values: a value taken
   * from around the call ties it to nothing) and to change nothing it did not create;
   * a computation that adds a certificate, marks a file, reads h.skipped, writes server
   * lines or gives more than plain data is computed again in every render.
   */
  once(key: unknown, compute: unknown, options?: unknown): unknown;
  /**
   * The server lines of `backend`, as snippet `snippet` renders them with `args`: write
   * it with `<%- h.servers(name, 'servers', { ns, service }) %>` in haproxy.cfg where the
   * backend's `server` lines go. The controller records the call, and the lookups the
   * snippet makes, so that when only what those lookups read changes (an EndpointSlice),
   * it renders that snippet alone and applies the new servers at runtime at once, ahead
   * of the full render. The snippet must write only `server` lines from its arguments
   * (plain data: they are copied as JSON) and lookups; the full render still follows and
   * wins where they differ.
   */
  servers(backend: unknown, snippet: unknown, args?: unknown): string;
  /**
   * What one object of watched set `set` adds to map files, as snippet `snippet` renders
   * it with `locals.object` and `args` (plain data, copied as JSON, the same for every
   * object of the set): the snippet writes JSON `{ maps: { '<map file>': [[key, value]] },
   * mapsOnly }`; the call returns what the snippet gave with h.result, if anything. The
   * template builds its maps with the same code the snippet runs (so that both agree).
   * The controller records each call, so that a new or changed object whose snippet says
   * `mapsOnly` and whose keys nothing else holds has its entries added at runtime at
   * once, ahead of the full render (see map-entries.ts).
   */
  mapEntries(set: unknown, object: unknown, snippet: unknown, args?: unknown): unknown;
  /**
   * In a mapEntries snippet: the value its h.mapEntries call returns (frozen). A snippet
   * that gives one promises to be a function of its object, arguments, lookups and
   * h.once values, changing none of them: the next render then reuses the call (its
   * entries and value) for the same object while its lookups return the same objects.
   */
  result(value: unknown): string;
  /**
   * Adds a certificate file `ssl/<name>` with this content to the render and
   * returns its path. Registering the same name again with the same content
   * is a no-op; with other content, or a name a certificate template has, it
   * aborts. For files whose number depends on the cluster (one per Secret).
   */
  certFile(name: unknown, content: unknown): string;
  /**
   * Marks the file being rendered (a map, general or certificate file) as one
   * that names other rendered files as `maps/<name>`, `general/<name>` or
   * `ssl/<name>`: where those files live elsewhere (a Data Plane API instance's
   * storage), the names are rewritten as haproxy.cfg's are. Crt-lists need no
   * mark. Returns ''.
   */
  referencesFiles(): string;
  /** 12 hex digits of a SHA-256 over the parts: a short, stable name for a combination of values. */
  digest(...parts: unknown[]): string;
  /** Text for a log-format argument (set-header values, redirect locations): `%` doubled, so it stays literal. */
  lfText(value: unknown): string;
  /** The text with every PCRE metacharacter escaped, for building a regex from a literal. */
  regexEscape(value: unknown): string;
  /** An IPv4 address in dotted-quad form, or an IPv6 address without a zone. */
  isIP(value: unknown): boolean;
  /** An IP address or a network `address/prefix`. */
  isCidr(value: unknown): boolean;
  /** A TCP port number: an integer from 1 to 65535 (a number, or its decimal text). */
  isPort(value: unknown): boolean;
  /** A haproxy duration: digits with an optional unit us, ms, s, m, h or d, at most 24 days. */
  isDuration(value: unknown): boolean;
  /** An HTTP header (or query parameter) name: an RFC 9110 token without quotes, `%` or backslash. */
  isHeaderName(value: unknown): boolean;
  /** An HTTP header value: printable ASCII, spaces inside only. */
  isHeaderValue(value: unknown): boolean;
  /** A regular expression that haproxy's PCRE and JavaScript read alike: a conservative subset. */
  isRegex(value: unknown): boolean;
  /**
   * A certificate chain and its private key (PEM text, as in a kubernetes.io/tls
   * Secret) as one PEM bundle for haproxy, or undefined when either does not
   * parse or the key does not belong to the certificate.
   */
  tlsBundle(certificate: unknown, key: unknown): string | undefined;
  /**
   * One or more CA certificates (PEM text, as in a Secret's `ca.crt`) rebuilt from
   * their parsed blocks, or undefined when anything in the text is not a certificate.
   */
  caBundle(certificates: unknown): string | undefined;
  /**
   * The entries of an htpasswd file whose user name and crypt(3) hash haproxy
   * can use; `invalid` lists the 1-based numbers of the other non-empty lines.
   */
  htpasswd(text: unknown): { users: { name: string; hash: string }[]; invalid: number[] };
}

/** What one render collects besides its output; the engine opens one per render. */
export interface RenderSession {
  warnings: Map<string, RenderWarning>;
  certs: Map<string, string>;
  /** The file being rendered, e.g. `general/x.lua` or `haproxy.cfg`. */
  file: string;
  /** Files marked by referencesFiles(). */
  referencing: Set<string>;
  /** Values computed once per render and shared by its templates (h.once). */
  once: Map<string, unknown>;
  /** The certificate files added inside each running h.isolate, innermost last: what a failure takes back. */
  added: string[][];
  /** Where a throw (or a new Error, for h.warn) happened in the templates, and whether they are at fault. */
  locate(thrown: unknown): Located;
  /** h.status calls in order; a failed h.isolate cuts the list back to where it began. */
  declarations: Declaration[];
  /** Skips so far, by object key and part (`''` for the whole object): what h.skipped reads. */
  skips: Map<string, { message: string; field?: string; reason?: string }>;
  /** The template running now (a snippet while it is included): where an h.isolate runs. */
  running(): string;
  /** Every isolation and each unexpected error it caught: how a template fault is told from objects at fault. */
  faults: SystematicFaults;
  /**
   * Calls that touched render state other than the text (warn, status, certFile, once,
   * skipped, referencesFiles, a caught throw): an h.servers call that made none can be
   * reused by a later render (server-cache.ts).
   */
  effects: number;
  /** h.servers, as the running render implements it. */
  servers?(backend: unknown, snippet: unknown, args: unknown): string;
  /** h.mapEntries, as the running render implements it. */
  mapEntries?(set: unknown, object: unknown, snippet: unknown, args: unknown): unknown;
  /** h.result, while a mapEntries snippet runs. */
  give?(value: unknown): void;
  /** What reusable calls read and touched, when the render reuses calls. */
  reuse?: ReuseFrames;
  /** The journal of the innermost kept h.once value being computed, if any. */
  journal?: OnceJournal;
  /** h.once with keep, as the running render implements it: reused from the last render where it can be. */
  keepOnce?(key: string, compute: () => unknown): unknown;
}

/** A property path (as for get) or a function of the item. */
export type Key<T> = string | readonly (string | number)[] | ((item: T) => unknown);
export type SortKey = string | number | bigint | boolean | null | undefined;

export interface KnownFiles {
  maps: ReadonlySet<string>;
  files: ReadonlySet<string>;
  certs: ReadonlySet<string>;
}

/** The longest warning message kept, in UTF-16 code units. */
const MAX_MESSAGE = 500;
// A status condition's reason (metav1.Condition).
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

function checkReason(helper: string, reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  if (typeof reason !== 'string' || reason.length > 1024 || !REASON.test(reason)) abortRender(`${helper}(): the reason must be CamelCase, as a status condition's (e.g. UnsupportedValue), got ${describeValue(reason)}`);
  return reason;
}

const skipKey = (subject: unknown, part: unknown) => {
  const ref = describeSubject(subject).ref;
  return ref ? `${ref.kind ?? ''}\u0000${ref.namespace ?? ''}\u0000${ref.name}\u0000${typeof part === 'string' ? part : ''}` : undefined;
};

/** h.once's options: `{ keep: true }` or nothing. */
function keepOption(options: unknown): boolean {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object' || Object.keys(options).some((k) => k !== 'keep')) abortRender(`once(): options must be { keep: true } or left out, got ${describeValue(options)}`);
  const keep = (options as { keep?: unknown }).keep;
  if (keep !== undefined && typeof keep !== 'boolean') abortRender(`once(): options.keep must be true or false, got ${describeValue(keep)}`);
  return keep === true;
}

/** A warning said (once per render: the first of the same object and message stands), and noted by a kept h.once being computed. */
export function sayWarning(open: RenderSession, key: string, warning: RenderWarning): void {
  open.journal?.note({ kind: 'warning', key, warning });
  if (!open.warnings.has(key)) open.warnings.set(key, warning);
}

/** A skip an h.isolate caught, as h.skipped reads it (the first stands), noted by a kept h.once being computed. */
export function catchSkip(open: RenderSession, key: string, skip: CaughtSkip): void {
  open.journal?.note({ kind: 'skip', key, skip });
  if (!open.skips.has(key)) open.skips.set(key, skip);
}

/** An unexpected error an h.isolate caught, counted towards a template fault, and noted by a kept h.once being computed. */
export function failedAt(open: RenderSession, site: string, subject: unknown, name: string, thrown: Thrown): void {
  open.journal?.note({ kind: 'failed', site, subject, name, thrown });
  open.faults.failed(site, subject, name, thrown);
}

/** Render state other than the text was touched: no call running can be reused by a later render. */
function touched(open: RenderSession): void {
  open.effects++;
  open.reuse?.touch();
}

export function createHelpers(known: KnownFiles, session: () => RenderSession | undefined = () => undefined): Helpers {
  const pathTo = (kind: AuxKind, helper: string) => (name: unknown) => {
    if (typeof name !== 'string' || !isFileName(name)) abortRender(`${helper}(): ${describeValue(name)} is not a valid file name`);
    if (!known[kind].has(name)) {
      const names = [...known[kind]].sort(compareCodeUnits).join(', ') || 'none';
      abortRender(`${helper}(): no ${kind} template named ${JSON.stringify(name)} (defined: ${names})`);
    }
    return auxPath(kind, name);
  };
  const record = (open: RenderSession, warning: RenderWarning) => {
    const key = JSON.stringify([warning.object ?? '', warning.message]);
    // A huge value quoted in a message must not make a huge log line.
    if (warning.message.length > MAX_MESSAGE) warning.message = `${warning.message.slice(0, MAX_MESSAGE)}…`;
    sayWarning(open, key, warning);
  };
  const isolate = <T>(subject: unknown, fn: () => T, options: { part?: unknown; fallback?: T } = {}): T | undefined => {
    const open = session() ?? abortRender('isolate() runs within a render, and no render is running');
    if (typeof fn !== 'function') abortRender(`isolate(): expected a function to run, got ${describeValue(fn)}`);
    if (options === null || typeof options !== 'object') abortRender(`isolate(): options must be an object, got ${describeValue(options)}`);
    const part = options.part;
    if (part !== undefined && typeof part !== 'string') abortRender(`isolate(): options.part must be a field path, got ${describeValue(part)}`);
    const site = open.faults.enter(open.running(), subject, part);
    const added: string[] = [];
    open.added.push(added);
    const declared = open.declarations.length;
    try {
      const result = fn();
      open.added.pop();
      open.added.at(-1)?.push(...added);
      return result;
    } catch (thrown) {
      touched(open);
      open.added.pop();
      // Nothing the object added stays in the configuration, nor what was said about its status.
      for (const name of added) open.certs.delete(name);
      open.declarations.length = declared;
      const where = open.locate(thrown);
      if (where.fatal) throw thrown;
      const described = describeSubject(subject);
      if (where.unexpected && site !== undefined && described.ref) {
        const { namespace, name } = described.ref;
        failedAt(open, site, subject, namespace === undefined ? name : `${namespace}/${name}`, { template: where.template, ...(where.line !== undefined && { line: where.line }), message: where.message });
      }
      const at = where.field ?? part;
      const skipped = part === undefined ? 'skipped' : `${part} skipped`;
      // An h.skip explains itself; anything else is shown with the template line that failed on the object.
      const place = `${where.template}${where.line !== undefined ? `:${where.line}` : ''}`;
      const message = thrown instanceof ObjectSkip || where.field !== undefined ? `${skipped}: ${where.message}` : `${skipped}: ${where.message} (at ${place})`;
      record(open, {
        ...described,
        message,
        ...(at !== undefined && { field: at }),
        template: where.template,
        ...(where.line !== undefined && { line: where.line }),
        ...(part === undefined && { skipped: true }),
        ...(where.statusReason !== undefined && { reason: where.statusReason }),
      });
      const key = skipKey(subject, part);
      if (key !== undefined) catchSkip(open, key, { message: where.message, ...(at !== undefined && { field: at }), ...(where.statusReason !== undefined && { reason: where.statusReason }) });
      return options.fallback;
    }
  };
  const helpers: Helpers = {
    mapPath: pathTo('maps', 'mapPath'),
    filePath: pathTo('files', 'filePath'),
    certPath: pathTo('certs', 'certPath'),
    word: haproxyWord,
    mapKey,
    identifier,
    sortBy,
    uniq,
    groupBy,
    keys: sortedKeys,
    entries: (object) => sortedKeys(object).map((k) => [k, (object as Record<string, unknown>)[k]]),
    b64decode,
    isHostname,
    isPath,
    fail: (message) => abortRender(typeof message === 'string' ? message : describeValue(message)),
    get,
    warn: (subject, message, details) => {
      const open = session() ?? abortRender('warn() records into a render, and no render is running');
      touched(open);
      const field = details?.field;
      if (field !== undefined && typeof field !== 'string') abortRender(`warn(): details.field must be a field path, got ${describeValue(field)}`);
      const reason = checkReason('warn', details?.reason);
      const warning: RenderWarning = { ...describeSubject(subject), message: typeof message === 'string' ? message : describeValue(message), ...(field !== undefined && { field }), ...(reason !== undefined && { reason }) };
      const key = JSON.stringify([warning.object ?? '', warning.message]);
      // Said already in this render; a kept h.once value being computed notes it all the same.
      if (open.warnings.has(key) && !open.journal) return '';
      const where = open.locate(new Error());
      record(open, { ...warning, template: where.template, ...(where.line !== undefined && { line: where.line }) });
      return '';
    },
    isolate,
    each: <T, R>(list: Iterable<T>, fn: (item: T, index: number) => R): R[] => {
      if (typeof fn !== 'function') abortRender(`each(): expected a function to run for each item, got ${describeValue(fn)}`);
      const results: R[] = [];
      const failed = Symbol('failed');
      toArray(list, 'each').forEach((item, i) => {
        const result = isolate<R | typeof failed>(item, () => fn(item, i), { fallback: failed });
        if (result !== failed) results.push(result as R);
      });
      return results;
    },
    skip: (message, field, reason) => {
      if (field !== undefined && field !== null && typeof field !== 'string') abortRender(`skip(): the field must be a field path, got ${describeValue(field)}`);
      throw new ObjectSkip(typeof message === 'string' ? message : describeValue(message), field ?? undefined, checkReason('skip', reason));
    },
    skipped: (subject, part) => {
      const open = session() ?? abortRender('skipped() reads the current render, and no render is running');
      touched(open);
      open.journal?.spoil('it reads h.skipped');
      if (part !== undefined && typeof part !== 'string') abortRender(`skipped(): the part must be a field path, got ${describeValue(part)}`);
      const key = skipKey(subject, part);
      const skip = key === undefined ? undefined : open.skips.get(key);
      return skip && { ...skip };
    },
    status: (subject, declaration) => {
      const open = session() ?? abortRender('status() declares into a render, and no render is running');
      touched(open);
      open.declarations.push(declare(subject, declaration, describeSubject));
      return '';
    },
    list: (value, field) => {
      if (typeof field !== 'string') abortRender(`list(): the field must be a field path, got ${describeValue(field)}`);
      if (value === undefined || value === null) return [];
      if (Array.isArray(value)) return value as readonly unknown[];
      throw new ObjectSkip(`${field} must be a list, not ${describeValue(value)}`, field);
    },
    fileName,
    once: (key, compute, options) => {
      const open = session() ?? abortRender('once() caches within a render, and no render is running');
      // Not reusable by the server-line cache; a reusable mapEntries call reads what computing it read.
      open.effects++;
      if (typeof key !== 'string') abortRender(`once(): the key must be a string, got ${describeValue(key)}`);
      if (typeof compute !== 'function') abortRender(`once(): expected a function to compute ${JSON.stringify(key)}`);
      const keep = keepOption(options);
      if (open.once.has(key)) open.reuse?.readOnce(key);
      else if (keep && open.keepOnce) open.once.set(key, open.keepOnce(key, compute as () => unknown));
      else {
        const value = open.reuse ? open.reuse.computeOnce(key, compute as () => unknown) : (compute as () => unknown)();
        // Frozen with or without a cache to keep it in, so that a template never works only without one.
        open.once.set(key, keep ? deepFreeze(value) : value);
      }
      return open.once.get(key);
    },
    servers: (backend, snippet, args) => {
      const open = session() ?? abortRender('servers() renders within a render, and no render is running');
      if (!open.servers) abortRender('servers() is not available in this render');
      return open.servers(backend, snippet, args);
    },
    mapEntries: (set, object, snippet, args) => {
      const open = session() ?? abortRender('mapEntries() renders within a render, and no render is running');
      if (!open.mapEntries) abortRender('mapEntries() is not available in this render');
      return open.mapEntries(set, object, snippet, args);
    },
    result: (value) => {
      const open = session() ?? abortRender('result() gives the value of a mapEntries call, and no render is running');
      if (!open.give) abortRender('result() gives the value of an h.mapEntries call, from its snippet only');
      open.give(value);
      return '';
    },
    certFile: (name, content) => {
      const open = session() ?? abortRender('certFile() adds to a render, and no render is running');
      touched(open);
      open.journal?.spoil('it adds a certificate');
      if (typeof name !== 'string' || !isFileName(name)) abort(`certFile(): ${describeValue(name)} is not a valid file name`);
      if (typeof content !== 'string') abort(`certFile(): the content must be a string, got ${describeValue(content)}`);
      if (known.certs.has(name)) abortRender(`certFile(): ${JSON.stringify(name)} is the name of a certificate template`);
      const existing = open.certs.get(name);
      if (existing !== undefined && existing !== content) abort(`certFile(): ${JSON.stringify(name)} was already added with other content`);
      if (existing === undefined) open.added.at(-1)?.push(name);
      open.certs.set(name, content);
      return auxPath('certs', name);
    },
    referencesFiles: () => {
      const open = session() ?? abortRender('referencesFiles() marks a file of a render, and no render is running');
      touched(open);
      open.journal?.spoil('it marks a file');
      if (open.file === 'haproxy.cfg') abortRender('referencesFiles(): haproxy.cfg needs no mark, its file references are always known');
      open.referencing.add(open.file);
      return '';
    },
    digest,
    lfText,
    regexEscape,
    isIP,
    isCidr,
    isPort,
    isDuration,
    isHeaderName,
    isHeaderValue,
    isRegex,
    tlsBundle,
    caBundle,
    htpasswd,
  };
  return Object.freeze(helpers);
}

/** A warning's subject: a Kubernetes object (named `Kind namespace/name`, and as a reference), a text, or nothing. */
function describeSubject(subject: unknown): Pick<RenderWarning, 'object' | 'ref'> {
  if (typeof subject === 'string') return { object: subject };
  if (subject !== null && typeof subject === 'object') {
    const apiVersion = get(subject, 'apiVersion');
    const kind = get(subject, 'kind');
    const ns = get(subject, 'metadata.namespace');
    const name = get(subject, 'metadata.name');
    const uid = get(subject, 'metadata.uid');
    if (typeof name === 'string') {
      const ref: ObjectRef = {
        ...(typeof apiVersion === 'string' && { apiVersion }),
        ...(typeof kind === 'string' && { kind }),
        ...(typeof ns === 'string' && ns !== '' && { namespace: ns }),
        name,
        ...(typeof uid === 'string' && { uid }),
      };
      const prefix = typeof kind === 'string' ? `${kind} ` : '';
      return { object: `${prefix}${typeof ns === 'string' ? `${ns}/` : ''}${name}`, ref };
    }
  }
  return {};
}

function digest(...parts: unknown[]): string {
  const texts = parts.map((part, i) => {
    if (typeof part === 'string' || typeof part === 'bigint' || typeof part === 'boolean' || (typeof part === 'number' && Number.isFinite(part))) return String(part);
    return abort(`digest(): part ${i + 1} is ${describeValue(part)}, expected a string, number or boolean`);
  });
  return createHash('sha256').update(JSON.stringify(texts)).digest('hex').slice(0, 12);
}

const VERBATIM_PART = /^[A-Za-z0-9.-]+$/;

/**
 * Parts made only of [A-Za-z0-9.-] are joined with `_` unchanged, which is
 * unambiguous because no part contains `_`. Any other input is sanitized for
 * readability and suffixed with `:` and 16 hex digits of a SHA-256 over the
 * exact parts; verbatim results never contain `:`, so the two forms cannot
 * collide, and distinct inputs collide only if the hashes do.
 */
export function identifier(...parts: unknown[]): string {
  if (parts.length === 0) abort('identifier() needs at least one part');
  const texts = parts.map((part, i) => {
    if (typeof part === 'string' || typeof part === 'bigint' || (typeof part === 'number' && Number.isFinite(part))) return String(part);
    return abort(`identifier(): part ${i + 1} is ${describeValue(part)}, expected a string or number`);
  });
  if (texts.every((t) => VERBATIM_PART.test(t))) return texts.join('_');
  const readable = texts
    .map((t) => t.replace(/[^A-Za-z0-9.-]/g, '_'))
    .join('_')
    .slice(0, 100);
  const digest = createHash('sha256').update(JSON.stringify(texts)).digest('hex').slice(0, 16);
  return `${readable}:${digest}`;
}

function toArray<T>(list: Iterable<T>, helper: string): T[] {
  if (Array.isArray(list)) return [...(list as T[])];
  if (list !== null && typeof list === 'object' && typeof (list as Partial<Iterable<T>>)[Symbol.iterator] === 'function') return [...list];
  return abort(`${helper}(): expected a list, got ${describeValue(list)}`);
}

function keyOf<T>(key: Key<T>, helper: string): (item: T) => unknown {
  if (typeof key === 'function') return key;
  if (typeof key === 'string' || Array.isArray(key)) return (item) => get(item, key);
  return abort(`${helper}(): the key must be a property path or a function, got ${describeValue(key)}`);
}

function sortKey(value: unknown, helper: string): SortKey {
  if (value === null || value === undefined || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint') return value;
  if (typeof value === 'number' && !Number.isNaN(value)) return value;
  return abort(`${helper}(): keys must be strings, numbers or booleans, got ${describeValue(value)}`);
}

function rank(value: SortKey): number {
  if (typeof value === 'number' || typeof value === 'bigint') return 0;
  if (typeof value === 'string') return 1;
  if (typeof value === 'boolean') return 2;
  return 3;
}

/** Numbers, then strings (by code unit, never locale), then booleans, then missing. */
export function compareKeys(a: SortKey, b: SortKey): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 3) return 0;
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

function sortBy<T>(list: Iterable<T>, key: Key<T>): T[] {
  const select = keyOf(key, 'sortBy');
  return toArray(list, 'sortBy')
    .map((item) => ({ item, key: sortKey(select(item), 'sortBy') }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map(({ item }) => item);
}

function uniq<T>(list: Iterable<T>, key?: Key<T>): T[] {
  const select = key === undefined ? (item: T) => item : keyOf(key, 'uniq');
  const seen = new Set<unknown>();
  return toArray(list, 'uniq').filter((item) => {
    const k = select(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function groupBy<T>(list: Iterable<T>, key: Key<T>): [SortKey, T[]][] {
  const select = keyOf(key, 'groupBy');
  const groups = new Map<SortKey, T[]>();
  for (const item of toArray(list, 'groupBy')) {
    const k = sortKey(select(item), 'groupBy');
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.entries()].sort(([a], [b]) => compareKeys(a, b));
}

function sortedKeys(object: unknown): string[] {
  if (object === null || object === undefined) return [];
  if (typeof object !== 'object') return abort(`keys(): expected an object, got ${describeValue(object)}`);
  const keys = Object.keys(object);
  return Array.isArray(object) ? keys : keys.sort(compareCodeUnits);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function b64decode(data: unknown): string {
  if (typeof data !== 'string' || !BASE64.test(data)) abort(`b64decode(): ${describeValue(data)} is not standard base64`);
  try {
    return utf8.decode(Buffer.from(data, 'base64'));
  } catch {
    return abort('b64decode(): the decoded data is not UTF-8 text');
  }
}

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

function isHostname(value: unknown): boolean {
  if (typeof value !== 'string' || value.length === 0 || value.length > 253) return false;
  const labels = value.split('.');
  return labels.every((label, i) => LABEL.test(label) || (i === 0 && label === '*' && labels.length > 1));
}

const PATH = /^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

function isPath(value: unknown): boolean {
  return typeof value === 'string' && PATH.test(value);
}

function isIP(value: unknown): boolean {
  // A zone (`%eth0`) is not an address haproxy reads in a server line.
  return typeof value === 'string' && value.length <= 45 && (isIPv4(value) || (isIPv6(value) && !value.includes('%')));
}

function isCidr(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const slash = value.indexOf('/');
  if (slash < 0) return isIP(value);
  const address = value.slice(0, slash);
  const prefix = value.slice(slash + 1);
  if (!/^(?:0|[1-9][0-9]{0,2})$/.test(prefix) || !isIP(address)) return false;
  return Number(prefix) <= (isIPv4(address) ? 32 : 128);
}

function isPort(value: unknown): boolean {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^[1-9][0-9]{0,4}$/.test(value) ? Number(value) : NaN;
  return Number.isInteger(n) && n >= 1 && n <= 65535;
}

const DURATION = /^([0-9]{1,10})(us|ms|s|m|h|d)?$/;
const UNIT_MS: Readonly<Record<string, number>> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function isDuration(value: unknown): boolean {
  const m = typeof value === 'string' ? DURATION.exec(value) : null;
  // haproxy keeps timeouts in signed 32-bit milliseconds.
  return m !== null && Number(m[1]) * UNIT_MS[m[2] ?? 'ms']! <= 2_147_483_647;
}

const HEADER_NAME = /^[A-Za-z0-9!#$&*+.^_`|~-]{1,256}$/;

function isHeaderName(value: unknown): boolean {
  return typeof value === 'string' && HEADER_NAME.test(value);
}

const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]{0,4094}[\x21-\x7e])?$/;

function isHeaderValue(value: unknown): boolean {
  return typeof value === 'string' && HEADER_VALUE.test(value);
}

/**
 * Escapes allowed in isRegex: classes, anchors and escaped metacharacters mean
 * the same in PCRE and JavaScript; others (\u, \k, \p, \c, digits) do not.
 */
const REGEX_ESCAPES = new Set([...'dDwWsSbBtnr.\\/-[](){}*+?|^$']);

function isRegex(value: unknown): boolean {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024) return false;
  if (!/^[\x20-\x7e]+$/.test(value)) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\') {
      const next = value[i + 1];
      if (next === 'x' && /^[0-9A-Fa-f]{2}$/.test(value.slice(i + 2, i + 4))) i += 3;
      else if (next !== undefined && REGEX_ESCAPES.has(next)) i++;
      else return false;
    } else if (c === '(' && value[i + 1] === '?' && value[i + 2] !== ':') {
      // Lookarounds and named groups differ between the dialects.
      return false;
    }
  }
  // An empty class is valid JavaScript but an unterminated class to PCRE.
  if (value.includes('[]') || value.includes('[^]')) return false;
  try {
    // Unicode mode is the stricter parser: no lone brackets or braces, no odd ranges.
    new RegExp(value, 'u');
    return true;
  } catch {
    return false;
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END \1-----/g;
const KEY_LABELS = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY']);

/** The PEM blocks of a text, re-wrapped canonically; undefined if anything else is in it. */
function pemBlocks(text: string): { label: string; pem: string }[] | undefined {
  const blocks: { label: string; pem: string }[] = [];
  let rest = text;
  for (const m of text.matchAll(PEM_BLOCK)) {
    const body = m[2]!.replace(/[\r\n]/g, '');
    if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(body) || body.length === 0) return undefined;
    const lines = body.match(/.{1,64}/g)!.join('\n');
    blocks.push({ label: m[1]!, pem: `-----BEGIN ${m[1]!}-----\n${lines}\n-----END ${m[1]!}-----\n` });
    rest = rest.replace(m[0], '');
  }
  return rest.trim() === '' ? blocks : undefined;
}

function tlsBundle(certificate: unknown, key: unknown): string | undefined {
  if (typeof certificate !== 'string' || typeof key !== 'string') return undefined;
  const certs = pemBlocks(certificate);
  const keys = pemBlocks(key);
  if (!certs || !keys || certs.length === 0 || keys.length !== 1) return undefined;
  if (!certs.every((b) => b.label === 'CERTIFICATE') || !KEY_LABELS.has(keys[0]!.label)) return undefined;
  const bundle = certs.map((b) => b.pem).join('') + keys[0]!.pem;
  const digest = hash('sha256', bundle, 'base64');
  let usable = checkedBundles.get(digest);
  if (usable === undefined) {
    usable = isUsableBundle(certs, keys[0]!);
    if (checkedBundles.size >= CHECKED_BUNDLES_KEPT) checkedBundles.delete(checkedBundles.keys().next().value!);
    checkedBundles.set(digest, usable);
  }
  return usable ? bundle : undefined;
}

/**
 * Whether each bundle checked so far was usable, by the digest of its canonical text:
 * parsing the certificates and the key and matching them took 50–90 µs a Secret, in
 * every render (a second of each render at 10k TLS Ingresses), for Secrets that
 * rarely change. The oldest go first past the limit, a few MiB.
 */
const checkedBundles = new Map<string, boolean>();
const CHECKED_BUNDLES_KEPT = 50_000;

function isUsableBundle(certs: readonly { pem: string }[], key: { pem: string }): boolean {
  try {
    const leaf = new X509Certificate(certs[0]!.pem);
    for (const c of certs.slice(1)) new X509Certificate(c.pem);
    return leaf.checkPrivateKey(createPrivateKey(key.pem));
  } catch {
    return false;
  }
}

function caBundle(certificates: unknown): string | undefined {
  if (typeof certificates !== 'string') return undefined;
  const certs = pemBlocks(certificates);
  if (!certs || certs.length === 0 || !certs.every((b) => b.label === 'CERTIFICATE')) return undefined;
  try {
    for (const c of certs) new X509Certificate(c.pem);
  } catch {
    return undefined;
  }
  return certs.map((b) => b.pem).join('');
}

const HTPASSWD_USER = /^[A-Za-z0-9._@-]{1,64}$/;
// crypt(3) hashes of the families glibc/libxcrypt verify: MD5 ($1$), SHA-256 ($5$), SHA-512 ($6$), bcrypt ($2?$), yescrypt ($y$).
const CRYPT_HASH = /^\$(?:1|5|6|2[aby]|y)\$[A-Za-z0-9./$=]{1,200}$/;

function htpasswd(text: unknown): { users: { name: string; hash: string }[]; invalid: number[] } {
  const users: { name: string; hash: string }[] = [];
  const invalid: number[] = [];
  if (typeof text !== 'string') return { users, invalid: [0] };
  const seen = new Set<string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    const hash = line.slice(colon + 1);
    if (colon < 0 || !HTPASSWD_USER.test(name) || !CRYPT_HASH.test(hash) || seen.has(name)) invalid.push(i + 1);
    else {
      seen.add(name);
      users.push({ name, hash });
    }
  });
  return { users, invalid };
}

function get(object: unknown, path: string | readonly (string | number)[], fallback?: unknown): unknown {
  let segments: readonly (string | number)[];
  if (typeof path === 'string') segments = path === '' ? [] : path.split('.');
  else if (Array.isArray(path)) segments = path;
  else return abort(`get(): the path must be a string or a list of segments, got ${describeValue(path)}`);
  let current: unknown = object;
  for (const segment of segments) {
    // Own properties only: a path must not reach into prototypes (constructor, __proto__).
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, segment)) return fallback;
    current = (current as Record<string, unknown>)[segment];
  }
  return current ?? fallback;
}
