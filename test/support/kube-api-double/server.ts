/**
 * A test double of the Kubernetes API server: a node:http server that speaks the
 * list/watch protocol the way kube-apiserver does, so that the real
 * @kubernetes/client-node can be tested against it. No real API server can run here.
 *
 * What it reproduces, because clients depend on it:
 * - one resourceVersion counter for everything (as etcd's revision), bumped by every
 *   write; a write that changes nothing is a no-op that keeps the resourceVersion
 *   and sends no watch event;
 * - lists carry the collection's resourceVersion, page with `limit`/`continue` over a
 *   consistent snapshot, and omit `kind`/`apiVersion` on their items;
 * - watches are NDJSON streams of `{type, object}` held open until `timeoutSeconds`
 *   (or a test closes them); a watch from a resourceVersion replays what happened
 *   after it; without one it starts with synthetic ADDED events for what exists;
 * - only a watch with `allowWatchBookmarks=true` gets BOOKMARK events (with the
 *   current resourceVersion), as kube-apiserver's watch cache sends them: about once
 *   a minute, and once more 2 s before the watch's timeout; `timeScale` runs this
 *   clock (cadence and timeouts) faster for tests, keeping their relation;
 * - after `compact()`, a watch from an older resourceVersion gets an ERROR event with
 *   a 410 Status (or an HTTP 410, see `watchGoneAs`), and so does a stale `continue`;
 * - label selectors and `metadata.name`/`metadata.namespace` field selectors, on
 *   lists and watches; an object that stops matching a watch's selector arrives as
 *   DELETED, one that starts matching as ADDED;
 * - create (name or generateName, 409 AlreadyExists), update with optimistic
 *   concurrency (409 Conflict on a stale resourceVersion; Leases refuse updates that
 *   name none), merge patch, delete, and the `/status` subresource (the main
 *   resource ignores status, `/status` ignores everything else);
 * - validation of events.k8s.io/v1 Events and Leases (MicroTime fields, required
 *   reporting fields), answered with 422 Invalid;
 * - bearer-token authentication (401 without the token).
 *
 * Faults for tests: end watches cleanly, drop their connections, stall them (held
 * open, silent, as a dead TCP connection), compact the history, fail the next
 * matching requests with a status, stop answering altogether.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { BUILT_IN, type ResourceType, apiVersionOf, qualifiedName } from './resources.ts';
import { type Matcher, parseFieldSelector, parseLabelSelector } from './selectors.ts';

export interface Meta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [field: string]: unknown;
}
export type Obj = { apiVersion?: string; kind?: string; metadata: Meta; [field: string]: unknown };

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';
interface HistoryEntry {
  rv: number;
  type: EventType;
  object: Obj;
  previous?: Obj;
}

interface Watcher {
  table: Table;
  namespace?: string;
  labels: Matcher;
  fields: Matcher;
  res: ServerResponse;
  stalled: boolean;
  timers: NodeJS.Timeout[];
}

interface Table {
  type: ResourceType;
  objects: Map<string, Obj>;
  history: HistoryEntry[];
  watchers: Set<Watcher>;
}

export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  watch: boolean;
  at: number;
}

export interface Fault {
  method?: string;
  /** Matched against the URL path. */
  path?: RegExp;
  /** Only watch requests (true) or only the others (false); both when undefined. */
  watch?: boolean;
  status: number;
  /** How many matching requests fail; 1 when undefined (Infinity: until cleared). */
  times?: number;
  /** Only requests with this bearer token: one client of several, e.g. a partitioned replica. */
  token?: string;
}

export interface KubeApiDoubleOptions {
  /** Requests must carry `Authorization: Bearer <token>`. */
  token?: string;
  /** Further accepted tokens, so that several clients can be told apart. */
  tokens?: string[];
  /** How often watches that allow bookmarks get one, in server time (default 60 s, the real cadence); 0 sends none. */
  bookmarkIntervalMs?: number;
  /**
   * How fast the server's clock runs: the bookmark cadence and `timeoutSeconds` are
   * multiplied by it (default 1). 0.01 turns the minute between bookmarks into
   * 600 ms and a 300 s watch timeout into 3 s.
   */
  timeScale?: number;
  /** How a watch from a compacted resourceVersion is refused: an ERROR event in a 200 stream (as kube-apiserver does) or an HTTP 410. */
  watchGoneAs?: 'event' | 'http';
  /** Serve HTTPS with this certificate, as a real API server does. */
  tls?: { cert: string; key: string };
}

const key = (namespace: string | undefined, name: string) => (namespace ? `${namespace}/${name}` : name);
const clone = <T>(value: T): T => structuredClone(value);

function status(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code, ...(details && { details }) };
}

const REASONS: Record<number, string> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 410: 'Expired', 422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable' };

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete result[k];
    else result[k] = mergePatch(result[k], v);
  }
  return result;
}

/** Equal apart from the fields every write sets. */
function sameContent(a: Obj, b: Obj): boolean {
  const strip = (o: Obj) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined, generation: undefined } });
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

export class KubeApiDouble {
  readonly requests: RequestRecord[] = [];
  private readonly server: Server;
  private readonly tables = new Map<string, Table>();
  private readonly faults: Required<Fault>[] = [];
  private readonly snapshots = new Map<string, { rv: number; items: Obj[] }>();
  private readonly options: Required<Omit<KubeApiDoubleOptions, 'tls'>>;
  private readonly scheme: 'http' | 'https';
  private rv = 1;
  /** BOOKMARK events written so far, to every watch. */
  bookmarksSent = 0;
  private compactedRv = 0;
  private listeningPort = 0;
  private hanging = false;
  private readonly held: ServerResponse[] = [];

  private constructor(options: KubeApiDoubleOptions) {
    const { tls, ...rest } = options;
    this.options = { token: '', tokens: [], bookmarkIntervalMs: 60_000, timeScale: 1, watchGoneAs: 'event', ...rest };
    for (const t of BUILT_IN) this.addResource(t);
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.send(res, 500, status(500, 'InternalError', String(err)));
      });
    };
    this.scheme = tls ? 'https' : 'http';
    this.server = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, handler) : createServer(handler);
  }

  static async start(options: KubeApiDoubleOptions = {}): Promise<KubeApiDouble> {
    const double = new KubeApiDouble(options);
    await new Promise<void>((resolve) => double.server.listen(0, '127.0.0.1', resolve));
    double.listeningPort = (double.server.address() as AddressInfo).port;
    return double;
  }

  get port(): number {
    return this.listeningPort;
  }

  get url(): string {
    return `${this.scheme}://127.0.0.1:${this.listeningPort}`;
  }

  /** The newest resourceVersion handed out. */
  get resourceVersion(): string {
    return String(this.rv);
  }

  async stop(): Promise<void> {
    for (const table of this.tables.values()) for (const w of table.watchers) this.closeWatcher(w, 'end');
    for (const res of this.held.splice(0)) res.socket?.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Serves another type, e.g. a CRD. */
  addResource(type: Pick<ResourceType, 'group' | 'version' | 'resource' | 'kind'> & Partial<ResourceType>): void {
    const full: ResourceType = { namespaced: true, statusSubresource: false, unconditionalUpdate: true, ...type };
    this.tables.set(this.tableKey(apiVersionOf(full), full.resource), { type: full, objects: new Map(), history: [], watchers: new Set() });
  }

  // ---- direct access for tests: what another client (kubectl, the kubelet) would do

  create(apiVersion: string, resource: string, object: Obj): Obj {
    const table = this.table(apiVersion, resource);
    const result = this.doCreate(table, clone(object), object.metadata.namespace, false);
    if (!result.ok) throw new Error(result.body.message);
    return result.object;
  }

  /** Replaces an object as it is (status included), or creates it. */
  apply(apiVersion: string, resource: string, object: Obj): Obj {
    const table = this.table(apiVersion, resource);
    const current = table.objects.get(key(object.metadata.namespace, object.metadata.name));
    if (!current) return this.create(apiVersion, resource, object);
    const next = clone(object);
    next.metadata = { ...current.metadata, ...next.metadata, resourceVersion: current.metadata.resourceVersion, uid: current.metadata.uid, creationTimestamp: current.metadata.creationTimestamp };
    return this.store(table, current, next);
  }

  remove(apiVersion: string, resource: string, namespace: string | undefined, name: string): void {
    const table = this.table(apiVersion, resource);
    const current = table.objects.get(key(namespace, name));
    if (current) this.doDelete(table, current);
  }

  get(apiVersion: string, resource: string, namespace: string | undefined, name: string): Obj | undefined {
    const object = this.table(apiVersion, resource).objects.get(key(namespace, name));
    return object && clone(object);
  }

  list(apiVersion: string, resource: string, namespace?: string): Obj[] {
    return [...this.table(apiVersion, resource).objects.values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace).map(clone);
  }

  // ---- faults

  /** Ends open watches cleanly, as the API server does at their timeout. */
  endWatches(resource?: string): number {
    return this.eachWatcher(resource, (w) => this.closeWatcher(w, 'end'));
  }

  /** Drops the connections of open watches, as a restarted API server or a broken network does. */
  dropWatches(resource?: string): number {
    return this.eachWatcher(resource, (w) => this.closeWatcher(w, 'destroy'));
  }

  /** Open watches stay open but nothing more arrives on them, not even their end: a dead TCP connection. */
  stallWatches(resource?: string): number {
    return this.eachWatcher(resource, (w) => {
      w.stalled = true;
      for (const t of w.timers) clearTimeout(t);
    });
  }

  /** Forgets the history up to now: watches and continue tokens from before get 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    for (const table of this.tables.values()) table.history = table.history.filter((h) => h.rv > this.compactedRv);
  }

  /** Fails the next matching request(s) with a status. */
  failNext(fault: Fault): void {
    this.faults.push({ method: '', path: /.*/, watch: undefined as unknown as boolean, times: 1, token: '', ...fault });
  }

  /** From now on no request is answered, and open watches go silent: an API server that hangs. */
  hang(): void {
    this.hanging = true;
    this.stallWatches();
  }

  /** Forgets the faults not yet used up. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Open, unstalled watches, optionally of one resource (its plural). */
  openWatches(resource?: string): number {
    let n = 0;
    for (const table of this.tables.values()) for (const w of table.watchers) if (!w.stalled && (resource === undefined || table.type.resource === resource)) n++;
    return n;
  }

  /** Requests so far, optionally only those of one resource (its plural). */
  requestsFor(resource: string, filter: Partial<Pick<RequestRecord, 'method' | 'watch'>> = {}): RequestRecord[] {
    const segment = new RegExp(`/${resource}(/|$)`);
    return this.requests.filter((r) => segment.test(r.path) && (filter.method === undefined || r.method === filter.method) && (filter.watch === undefined || r.watch === filter.watch));
  }

  // ---- HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    const query = Object.fromEntries(url.searchParams);
    const watch = query.watch === 'true' || query.watch === '1';
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: url.pathname, query, watch, at: Date.now() });
    if (this.hanging) {
      this.held.push(res);
      return;
    }

    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (this.options.token && !(token === this.options.token || (token !== undefined && this.options.tokens.includes(token)))) {
      return this.send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    }
    const fault = this.faults.find(
      (f) => f.times > 0 && (!f.method || f.method === method) && f.path.test(url.pathname) && (f.watch === undefined || f.watch === watch) && (f.token === '' || f.token === token),
    );
    if (fault) {
      fault.times--;
      return this.send(res, fault.status, status(fault.status, REASONS[fault.status] ?? 'Unknown', `injected fault: ${fault.status}`));
    }

    const route = this.route(url.pathname);
    if (!route) return this.send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    const { table, namespace, name, subresource } = route;
    if (subresource && (subresource !== 'status' || !table.type.statusSubresource)) return this.send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));

    if (method === 'GET' && name === undefined) {
      const labels = parseLabelSelector(url.searchParams.get('labelSelector'));
      const fields = parseFieldSelector(url.searchParams.get('fieldSelector'));
      if (!labels.ok) return this.send(res, 400, status(400, 'BadRequest', labels.message));
      if (!fields.ok) return this.send(res, 400, status(400, 'BadRequest', fields.message));
      return watch ? this.watch(res, table, namespace, labels.matches, fields.matches, url.searchParams) : this.listPage(res, table, namespace, labels.matches, fields.matches, url.searchParams);
    }
    if (method === 'GET') {
      const object = table.objects.get(key(namespace, name!));
      return object ? this.send(res, 200, object) : this.send(res, 404, this.notFound(table, name!));
    }
    if (method === 'DELETE' && name !== undefined) {
      const object = table.objects.get(key(namespace, name));
      if (!object) return this.send(res, 404, this.notFound(table, name));
      return this.send(res, 200, this.doDelete(table, object));
    }

    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return this.send(res, 400, status(400, 'BadRequest', `the body of the request could not be decoded: ${(err as Error).message}`));
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return this.send(res, 400, status(400, 'BadRequest', 'the body must be an object'));

    if (method === 'POST' && name === undefined) {
      if (table.type.namespaced && !namespace) return this.send(res, 405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'));
      const result = this.doCreate(table, body as Obj, namespace, true);
      return result.ok ? this.send(res, 201, result.object) : this.send(res, result.body.code, result.body);
    }
    if (name !== undefined && (method === 'PUT' || method === 'PATCH')) {
      const current = table.objects.get(key(namespace, name));
      if (!current) return this.send(res, 404, this.notFound(table, name));
      let incoming: Obj;
      if (method === 'PATCH') {
        const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        if (type !== 'application/merge-patch+json') {
          return this.send(res, 415, status(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json (got ${type})`));
        }
        const patchRv = (body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
        if (patchRv !== undefined && patchRv !== current.metadata.resourceVersion) return this.send(res, 409, this.conflict(table, name));
        incoming = mergePatch(clone(current), body) as Obj;
      } else {
        incoming = body as Obj;
        if (incoming.metadata?.name !== name) {
          return this.send(res, 400, status(400, 'BadRequest', `the name of the object (${String(incoming.metadata?.name)}) does not match the name on the URL (${name})`));
        }
        const rv = incoming.metadata.resourceVersion;
        if (rv === undefined || rv === '') {
          if (!table.type.unconditionalUpdate) return this.send(res, 422, this.invalid(table, name, ['metadata.resourceVersion: Invalid value: 0x0: must be specified for an update']));
        } else if (rv !== current.metadata.resourceVersion) {
          return this.send(res, 409, this.conflict(table, name));
        }
      }
      const next = this.merge(table, current, incoming, subresource === 'status');
      const problems = table.type.validate?.(next) ?? [];
      if (problems.length > 0) return this.send(res, 422, this.invalid(table, name, problems));
      return this.send(res, 200, this.store(table, current, next));
    }
    return this.send(res, 405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'));
  }

  private route(pathname: string): { table: Table; namespace?: string; name?: string; subresource?: string } | undefined {
    const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    let apiVersion: string;
    let rest: string[];
    if (parts[0] === 'api' && parts[1] === 'v1') {
      apiVersion = 'v1';
      rest = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 3) {
      apiVersion = `${parts[1]}/${parts[2]}`;
      rest = parts.slice(3);
    } else return undefined;
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const [resource, name, subresource, ...extra] = rest;
    if (resource === undefined || extra.length > 0) return undefined;
    const table = this.tables.get(this.tableKey(apiVersion, resource));
    if (!table) return undefined;
    if (namespace !== undefined && !table.type.namespaced) return undefined;
    if (table.type.namespaced && namespace === undefined && name !== undefined) return undefined;
    return { table, ...(namespace !== undefined && { namespace }), ...(name !== undefined && { name }), ...(subresource !== undefined && { subresource }) };
  }

  private listPage(res: ServerResponse, table: Table, namespace: string | undefined, labels: Matcher, fields: Matcher, params: URLSearchParams): void {
    const limit = Number(params.get('limit') ?? 0);
    const token = params.get('continue');
    let snapshot: { rv: number; items: Obj[] };
    let offset = 0;
    if (token) {
      let decoded: { id: string; offset: number } | undefined;
      try {
        decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { id: string; offset: number };
      } catch {
        decoded = undefined;
      }
      const stored = decoded && this.snapshots.get(decoded.id);
      if (!decoded || !stored) return this.send(res, 400, status(400, 'BadRequest', 'continue key is not valid'));
      if (stored.rv < this.compactedRv) {
        return this.send(res, 410, status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.'));
      }
      snapshot = stored;
      offset = decoded.offset;
    } else {
      const items = [...table.objects.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, o]) => o)
        .filter((o) => (namespace === undefined || o.metadata.namespace === namespace) && labels(o) && fields(o))
        // List items carry no kind or apiVersion: the list does.
        .map(({ kind: _k, apiVersion: _a, ...rest }) => clone(rest) as Obj);
      snapshot = { rv: this.rv, items };
    }
    const end = limit > 0 ? Math.min(snapshot.items.length, offset + limit) : snapshot.items.length;
    const metadata: Record<string, unknown> = { resourceVersion: String(snapshot.rv) };
    if (end < snapshot.items.length) {
      const id = randomUUID();
      this.snapshots.set(id, snapshot);
      metadata.continue = Buffer.from(JSON.stringify({ id, offset: end })).toString('base64url');
      metadata.remainingItemCount = snapshot.items.length - end;
    }
    this.send(res, 200, { kind: `${table.type.kind}List`, apiVersion: apiVersionOf(table.type), metadata, items: snapshot.items.slice(offset, end) });
  }

  private watch(res: ServerResponse, table: Table, namespace: string | undefined, labels: Matcher, fields: Matcher, params: URLSearchParams): void {
    const rvParam = params.get('resourceVersion') ?? '';
    const from = rvParam === '' || rvParam === '0' ? undefined : Number(rvParam);
    if (from !== undefined && !Number.isInteger(from)) return this.send(res, 400, status(400, 'BadRequest', `invalid resource version: ${rvParam}`));
    const gone = from !== undefined && from < this.compactedRv;
    const goneStatus = status(410, 'Expired', `too old resource version: ${from} (${this.compactedRv})`);
    if (gone && this.options.watchGoneAs === 'http') return this.send(res, 410, goneStatus);

    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    if (gone) {
      res.end(`${JSON.stringify({ type: 'ERROR', object: goneStatus })}\n`);
      return;
    }
    const watcher: Watcher = { table, labels, fields, res, stalled: false, timers: [], ...(namespace !== undefined && { namespace }) };
    table.watchers.add(watcher);
    res.on('close', () => {
      for (const t of watcher.timers) clearTimeout(t);
      table.watchers.delete(watcher);
    });
    if (from === undefined) {
      const current = [...table.objects.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
      for (const object of current) this.deliver(watcher, { rv: Number(object.metadata.resourceVersion), type: 'ADDED', object });
    } else {
      for (const entry of table.history) if (entry.rv > from) this.deliver(watcher, entry);
    }
    const scale = this.options.timeScale;
    const timeoutMs = Number(params.get('timeoutSeconds') ?? 0) * 1000 * scale;
    const started = Date.now();
    if (timeoutMs > 0) watcher.timers.push(setTimeout(() => this.closeWatcher(watcher, 'end'), timeoutMs));
    if (params.get('allowWatchBookmarks') === 'true' && this.options.bookmarkIntervalMs > 0) {
      const cadence = this.options.bookmarkIntervalMs * scale;
      // As the watch cache does: the next bookmark a cadence after the last, or 2 s before the deadline if sooner.
      const schedule = () => {
        const now = Date.now();
        let next = now + cadence;
        if (timeoutMs > 0) next = Math.min(next, started + timeoutMs - 2_000 * scale);
        if (next <= now) return;
        // One bookmark timer per watch, beside its timeout: replace the one that fired.
        watcher.timers = watcher.timers.filter((t) => t !== bookmarkTimer);
        bookmarkTimer = setTimeout(tick, next - now);
        watcher.timers.push(bookmarkTimer);
      };
      let bookmarkTimer: NodeJS.Timeout | undefined;
      const tick = () => {
        this.write(watcher, { type: 'BOOKMARK', object: { kind: table.type.kind, apiVersion: apiVersionOf(table.type), metadata: { resourceVersion: String(this.rv) } } });
        this.bookmarksSent++;
        schedule();
      };
      schedule();
    }
  }

  /** Sends one history entry to a watcher, as its selectors see it. */
  private deliver(w: Watcher, entry: HistoryEntry): void {
    const passes = (o: Obj | undefined) => o !== undefined && (w.namespace === undefined || o.metadata.namespace === w.namespace) && w.labels(o) && w.fields(o);
    const now = passes(entry.object);
    let type: EventType | undefined;
    if (entry.type === 'MODIFIED') {
      const before = passes(entry.previous);
      type = before && now ? 'MODIFIED' : !before && now ? 'ADDED' : before && !now ? 'DELETED' : undefined;
    } else if (now) type = entry.type;
    if (type) this.write(w, { type, object: entry.object });
  }

  private write(w: Watcher, event: unknown): void {
    if (w.stalled || w.res.writableEnded || w.res.destroyed) return;
    w.res.write(`${JSON.stringify(event)}\n`);
  }

  private closeWatcher(w: Watcher, how: 'end' | 'destroy'): void {
    for (const t of w.timers) clearTimeout(t);
    w.table.watchers.delete(w);
    if (how === 'end') w.res.end();
    else w.res.socket?.destroy();
  }

  private eachWatcher(resource: string | undefined, fn: (w: Watcher) => void): number {
    let n = 0;
    for (const table of this.tables.values()) {
      if (resource !== undefined && table.type.resource !== resource) continue;
      for (const w of [...table.watchers]) {
        if (w.stalled) continue;
        fn(w);
        n++;
      }
    }
    return n;
  }

  // ---- storage

  private doCreate(table: Table, object: Obj, pathNamespace: string | undefined, viaApi: boolean): { ok: true; object: Obj } | { ok: false; body: ReturnType<typeof status> } {
    const metadata = { ...(object.metadata ?? {}) } as Meta;
    if (!metadata.name && metadata.generateName) metadata.name = `${metadata.generateName}${randomUUID().slice(0, 5)}`;
    if (!metadata.name) return { ok: false, body: status(422, 'Invalid', 'metadata.name: Required value: name or generateName is required') };
    if (table.type.namespaced) {
      if (metadata.namespace && pathNamespace && metadata.namespace !== pathNamespace) {
        return { ok: false, body: status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request') };
      }
      metadata.namespace = metadata.namespace ?? pathNamespace;
      if (!metadata.namespace) return { ok: false, body: status(422, 'Invalid', 'metadata.namespace: Required value') };
    } else delete metadata.namespace;
    const k = key(metadata.namespace, metadata.name);
    if (table.objects.has(k)) return { ok: false, body: status(409, 'AlreadyExists', `${qualifiedName(table.type)} "${metadata.name}" already exists`, { name: metadata.name, kind: table.type.resource }) };
    const stored: Obj = { ...object, apiVersion: apiVersionOf(table.type), kind: table.type.kind, metadata };
    // Creating through the API resets status where a status subresource owns it.
    if (viaApi && table.type.statusSubresource) delete stored.status;
    const problems = table.type.validate?.(stored) ?? [];
    if (problems.length > 0) return { ok: false, body: this.invalid(table, metadata.name, problems) };
    metadata.uid = randomUUID();
    metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    metadata.generation = 1;
    metadata.resourceVersion = String(++this.rv);
    table.objects.set(k, stored);
    this.record(table, { rv: this.rv, type: 'ADDED', object: clone(stored) });
    return { ok: true, object: clone(stored) };
  }

  /** The object an update leaves: server-owned metadata kept, status or the rest per subresource. */
  private merge(table: Table, current: Obj, incoming: Obj, statusWrite: boolean): Obj {
    const { uid, creationTimestamp, namespace, name, generation } = current.metadata;
    if (statusWrite) return { ...clone(current), status: clone(incoming.status) };
    const next: Obj = { ...clone(incoming), apiVersion: current.apiVersion, kind: current.kind, metadata: { ...clone(incoming.metadata), uid, creationTimestamp, name, generation } };
    if (namespace !== undefined) next.metadata.namespace = namespace;
    if (table.type.statusSubresource) {
      if (current.status === undefined) delete next.status;
      else next.status = clone(current.status);
    }
    return next;
  }

  /** Stores an update unless it changes nothing; returns what is stored. */
  private store(table: Table, current: Obj, next: Obj): Obj {
    next.metadata.resourceVersion = current.metadata.resourceVersion;
    if (sameContent(current, next)) return clone(current);
    if (JSON.stringify(next.spec) !== JSON.stringify(current.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    else next.metadata.generation = current.metadata.generation;
    next.metadata.resourceVersion = String(++this.rv);
    table.objects.set(key(next.metadata.namespace, next.metadata.name), next);
    this.record(table, { rv: this.rv, type: 'MODIFIED', object: clone(next), previous: clone(current) });
    return clone(next);
  }

  private doDelete(table: Table, current: Obj): Obj {
    table.objects.delete(key(current.metadata.namespace, current.metadata.name));
    const deleted = clone(current);
    deleted.metadata.resourceVersion = String(++this.rv);
    this.record(table, { rv: this.rv, type: 'DELETED', object: deleted });
    return clone(deleted);
  }

  private record(table: Table, entry: HistoryEntry): void {
    table.history.push(entry);
    for (const w of table.watchers) this.deliver(w, entry);
  }

  private table(apiVersion: string, resource: string): Table {
    const table = this.tables.get(this.tableKey(apiVersion, resource));
    if (!table) throw new Error(`the double does not serve ${resource} in ${apiVersion}`);
    return table;
  }

  private tableKey(apiVersion: string, resource: string): string {
    return `${apiVersion} ${resource}`;
  }

  private notFound(table: Table, name: string) {
    return status(404, 'NotFound', `${qualifiedName(table.type)} "${name}" not found`, { name, kind: table.type.resource });
  }

  private conflict(table: Table, name: string) {
    return status(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedName(table.type)} "${name}": the object has been modified; please apply your changes to the latest version and try again`, {
      name,
      kind: table.type.resource,
    });
  }

  private invalid(table: Table, name: string, problems: string[]) {
    return status(422, 'Invalid', `${table.type.kind} "${name}" is invalid: ${problems.join(', ')}`, {
      name,
      kind: table.type.kind,
      causes: problems.map((p) => ({ reason: 'FieldValueInvalid', message: p, field: p.split(':')[0] })),
    });
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
