/**
 * `haprx test TEMPLATES_DIR`: runs a template library's own fixture tests.
 *
 * A fixture is a YAML file in TEMPLATES_DIR/tests/ (files starting with `_`
 * are shared manifests, not fixtures):
 *
 *   name: what the fixture shows
 *   values: { ... }            # optional, on top of haprx.yaml's values
 *   include: [_common.yaml]    # optional manifest files (multi-document), relative to tests/
 *   resources: [ ... ]         # the cluster objects, as in a folder of manifests
 *   assert:
 *     - valid: true            # haproxy -c accepts the render (false: it refuses it)
 *     - contains: "text"       # in haproxy.cfg, or in `file: maps/exact.map`
 *       file: maps/exact.map
 *     - notContains: "text"
 *     - warning: "regex"       # a warning "<object>: <message>" matches
 *     - noWarnings: true
 *     - objectStatus: "regex"  # a line of the declared status (as `haprx status` prints it) matches
 *     - request: { host, path, method, headers, tls, sni, listener, websocket }
 *       backend: be_x          # the backend that answers (status, location,
 *       status: 200            #   headers, requestHeaders, uri, certificate,
 *       ...                    #   reply may be checked too; see docs/templates.md)
 *     - grpc: { listener, host, service, method, message, metadata }
 *       grpcStatus: 0
 *     - tcp: { listener, send, sni }
 *       reply: "v1 hello"
 *   servers:                   # optional: real servers behind Services
 *     - { name: v1, protocol: http, service: shop/web, port: http }
 *
 * Static assertions check the render with the fixture's values. Requests run
 * against a second render on free 127.0.0.1 ports (httpPort, httpsPort, and a
 * portOffset for Gateway listeners), started with the real haproxy. A backend
 * with no fixture server behind it ends with an `http-request return` naming
 * itself, so a request shows where the configuration sent it, and what it did
 * to the request on the way, without any server; a fixture server
 * (fixture-servers.ts) answers for real, for what needs one (timeouts,
 * retries, HTTP/2, WebSocket, gRPC, TLS, TCP).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile, readdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { type Counts, type GrpcExchange, type HttpExchange, type Reply, type TcpExchange, countAnswers, outOfBounds, sendGrpc, sendHttp, sendTcp, sendWebSocket, whileInFlight } from './fixture-clients.ts';
import { type AuthBehaviour, type RunningServer, SERVER_PROTOCOLS, type ServerProtocol, startServer } from './fixture-servers.ts';
import { readTemplateDir } from '../config/template-dir.ts';
import { statusLines } from '../status/print.ts';
import { parseConfig } from '../haproxy/config.ts';
import { Validator, couldNotRun } from '../haproxy/validate.ts';
import type { KubeObject } from '../k8s/resource.ts';
import { Store } from '../k8s/store.ts';
import { compileWatches } from '../local/manifests.ts';
import { writeStateFiles } from '../local/state-files.ts';
import { type RenderWarning, renderTemplates } from '../templating/engine.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { type LoadedConfig, loadControllerConfig } from './load-config.ts';
import type { Command } from './main.ts';
import { printable } from '../printable.ts';

/**
 * An assertion's request: the HTTP exchange as fixture-clients.ts sends it, to the
 * HTTP port, to the HTTPS port with `tls`, or to a listener's port; a client
 * certificate comes from a Secret of the fixture.
 */
export interface FixtureRequest extends Omit<HttpExchange, 'client'> {
  /** A Gateway listener port to connect to (plus the run's portOffset) instead of httpPort/httpsPort. */
  listener?: number;
  /** Upgrade to WebSocket and send this text message; `reply` is the answer. */
  websocket?: string;
  /** Over TLS, show the client certificate of this Secret (`namespace/name`, tls.crt and tls.key). */
  clientCertificate?: string;
}

const REQUEST_KEYS = new Set(['host', 'path', 'method', 'headers', 'tls', 'sni', 'listener', 'websocket', 'clientCertificate', 'body']);

/**
 * A fixture server behind a Service port: the runner adds an EndpointSlice for it. A
 * server with neither service nor port is reached through `${port:<name>}` in the
 * fixture's resources (an annotation's URL, say), as any server may be.
 */
export interface FixtureServer {
  name: string;
  protocol: ServerProtocol;
  /** `namespace/name` of the Service. */
  service?: string;
  /** The Service port, by name or number. */
  port?: string | number;
  /** For https and h2: `namespace/name` of a Secret with tls.crt and tls.key. */
  certificate?: string;
  /** For https and h2: `namespace/name` of a Secret whose ca.crt must have signed the client's certificate. */
  clientCa?: string;
  /** For http and https: answer as an external authentication service (fixture-servers.ts). */
  auth?: AuthBehaviour;
}

export interface Assertion {
  /** With request: send it this many times (at most 2,000), one after the other; `backends`, `statuses`, `servers` and `sameServer` count the answers. */
  repeat?: number;
  /** With request: first send this many copies, and send this one while a fixture server still answers them (a slow one: `?delay=`). */
  inFlight?: number;
  /** With repeat: how many answers came from each backend, as [least, most]. */
  backends?: Record<string, [number, number]>;
  /** With repeat: how many answers had each status, as [least, most]. */
  statuses?: Record<string, [number, number]>;
  /** With repeat: how many answers came from each fixture server, as [least, most]. */
  servers?: Record<string, [number, number]>;
  /** With repeat: every answer came from the same fixture server (which one is not said). */
  sameServer?: boolean;
  /** Response headers that match these regexes. */
  headersMatch?: Record<string, string>;
  /** Request headers (as the backend saw them) that match these regexes. */
  requestHeadersMatch?: Record<string, string>;
  valid?: boolean;
  contains?: string;
  notContains?: string;
  file?: string;
  warning?: string;
  noWarnings?: boolean;
  objectStatus?: string;
  request?: FixtureRequest;
  grpc?: GrpcExchange & { listener?: number };
  tcp?: TcpExchange & { listener: number };
  backend?: string | null;
  status?: number;
  location?: string | null;
  headers?: Record<string, string | null>;
  requestHeaders?: Record<string, string | null>;
  uri?: string;
  certificate?: string;
  /** What came back over a WebSocket, a gRPC call or a TCP connection. */
  reply?: string;
  grpcStatus?: number;
}

export interface Fixture {
  file: string;
  name: string;
  values: Record<string, unknown>;
  resources: KubeObject[];
  servers: FixtureServer[];
  assert: Assertion[];
}

export interface AssertionResult {
  assertion: string;
  ok: boolean;
  message?: string;
}

export interface FixtureResult {
  file: string;
  name: string;
  ok: boolean;
  results: AssertionResult[];
  warnings: RenderWarning[];
  /** Set when the fixture could not run at all (unreadable, render failed). */
  error?: string;
  durationMs: number;
}

export interface RunOptions {
  haproxyBin?: string;
  /** Only fixtures whose file name or name contains this text. */
  match?: string;
}

const STUB_HEADER = 'x-haprx-backend';
const URI_HEADER = 'x-haprx-uri';

/** Reads every fixture of TEMPLATES_DIR/tests; a file that cannot be read is an error result, not an exception. */
export async function loadFixtures(templatesDir: string): Promise<{ fixtures: Fixture[]; errors: FixtureResult[] }> {
  const dir = join(templatesDir, 'tests');
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => /\.ya?ml$/.test(n) && !n.startsWith('_')).sort();
  const fixtures: Fixture[] = [];
  const errors: FixtureResult[] = [];
  for (const name of names) {
    const file = join(dir, name);
    try {
      fixtures.push(await readFixture(dir, file));
    } catch (err) {
      errors.push({ file: name, name, ok: false, results: [], warnings: [], error: errorText(err), durationMs: 0 });
    }
  }
  return { fixtures, errors };
}

async function readFixture(dir: string, file: string): Promise<Fixture> {
  const doc: unknown = parse(await readFile(file, 'utf8'));
  if (!isRecord(doc)) throw new Error('a fixture must be a mapping');
  const name = typeof doc.name === 'string' ? doc.name : file;
  const values = doc.values === undefined ? {} : doc.values;
  if (!isRecord(values)) throw new Error('values must be a mapping');
  const resources: KubeObject[] = [];
  for (const included of (doc.include ?? []) as unknown[]) {
    if (typeof included !== 'string' || included.includes('..')) throw new Error(`include: ${JSON.stringify(included)} is not a file in tests/`);
    for (const d of parseAllDocuments(await readFile(join(dir, included), 'utf8'))) {
      if (d.errors.length > 0) throw new Error(`${included}: ${d.errors[0]!.message.split('\n')[0]}`);
      const value: unknown = d.toJS();
      if (value !== null && value !== undefined) resources.push(value as KubeObject);
    }
  }
  if (doc.resources !== undefined && !Array.isArray(doc.resources)) throw new Error('resources must be a list of objects');
  resources.push(...((doc.resources ?? []) as KubeObject[]));
  for (const [i, r] of resources.entries()) {
    if (!isRecord(r) || typeof r.apiVersion !== 'string' || typeof r.kind !== 'string' || !isRecord(r.metadata) || typeof r.metadata.name !== 'string') {
      throw new Error(`resource ${i + 1} needs apiVersion, kind and metadata.name`);
    }
  }
  if (!Array.isArray(doc.assert) || doc.assert.length === 0) throw new Error('assert must be a non-empty list');
  for (const [i, a] of (doc.assert as unknown[]).entries()) {
    if (!isRecord(a)) throw new Error(`assert[${i}] must be a mapping`);
    const kinds = ASSERTION_KINDS.filter((k) => a[k] !== undefined);
    if (kinds.length !== 1) throw new Error(`assert[${i}] must have exactly one of ${ASSERTION_KINDS.join(', ')}`);
    // A misspelt key would make an assertion check nothing.
    const unknown = Object.keys(a).filter((k) => !ASSERTION_KEYS.has(k));
    if (unknown.length > 0) throw new Error(`assert[${i}]: unknown ${unknown.join(', ')}`);
    if (a.request !== undefined) {
      if (!isRecord(a.request)) throw new Error(`assert[${i}].request must be a mapping`);
      const odd = Object.keys(a.request).filter((k) => !REQUEST_KEYS.has(k));
      if (odd.length > 0) throw new Error(`assert[${i}].request: unknown ${odd.join(', ')}`);
    }
  }
  return { file: file.slice(dir.length + 1), name, values, resources, servers: readServers(doc.servers, resources), assert: doc.assert as Assertion[] };
}

const ASSERTION_KINDS = ['valid', 'contains', 'notContains', 'warning', 'noWarnings', 'objectStatus', 'request', 'grpc', 'tcp'];
const ASSERTION_KEYS = new Set([
  ...ASSERTION_KINDS, 'file', 'repeat', 'inFlight', 'backend', 'status', 'location', 'headers', 'headersMatch', 'requestHeaders', 'requestHeadersMatch',
  'uri', 'certificate', 'reply', 'grpcStatus', 'backends', 'statuses', 'servers', 'sameServer',
]);
const REQUEST_KINDS = ['request', 'grpc', 'tcp'] as const;

function readServers(raw: unknown, resources: KubeObject[]): FixtureServer[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new Error('servers must be a list');
  const names = new Set<string>();
  return raw.map((s: unknown, i) => {
    const at = `servers[${i}]`;
    if (!isRecord(s) || typeof s.name !== 'string' || !/^[a-z0-9-]{1,40}$/.test(s.name)) throw new Error(`${at}.name must be a short name (a-z, 0-9, -)`);
    if (names.has(s.name)) throw new Error(`${at}: server ${s.name} is declared twice`);
    names.add(s.name);
    if (!SERVER_PROTOCOLS.includes(s.protocol as ServerProtocol)) throw new Error(`${at}.protocol must be one of ${SERVER_PROTOCOLS.join(', ')}`);
    const behind = s.service !== undefined || s.port !== undefined;
    if (behind && (typeof s.service !== 'string' || !serviceOf(resources, s.service))) throw new Error(`${at}.service ${JSON.stringify(s.service)} is not a Service of the fixture (namespace/name)`);
    if (behind && typeof s.port !== 'string' && typeof s.port !== 'number') throw new Error(`${at}.port must name a port of the Service`);
    if ((s.protocol === 'https' || s.protocol === 'h2') && typeof s.certificate !== 'string') throw new Error(`${at}.certificate must name a Secret (namespace/name) for an ${s.protocol} server`);
    if (s.clientCa !== undefined && typeof s.clientCa !== 'string') throw new Error(`${at}.clientCa must name a Secret (namespace/name)`);
    if (s.auth !== undefined && (!isRecord(s.auth) || (s.protocol !== 'http' && s.protocol !== 'https'))) throw new Error(`${at}.auth must be a mapping, on an http or https server`);
    return {
      name: s.name,
      protocol: s.protocol as ServerProtocol,
      ...(behind && { service: s.service as string, port: s.port as string | number }),
      ...(typeof s.certificate === 'string' && { certificate: s.certificate }),
      ...(typeof s.clientCa === 'string' && { clientCa: s.clientCa }),
      ...(isRecord(s.auth) && { auth: s.auth as AuthBehaviour }),
    };
  });
}

const serviceOf = (resources: KubeObject[], ref: string) => {
  const [ns, name] = ref.split('/');
  return resources.find((r) => r.kind === 'Service' && r.metadata.namespace === ns && r.metadata.name === name);
};

/**
 * An EndpointSlice for each fixture server: 127.0.0.1 and its port, under the
 * name of the Service port it serves (so that the templates find it as they
 * would a pod's).
 */
function serverSlices(resources: KubeObject[], servers: FixtureServer[], ports: ReadonlyMap<string, number>): KubeObject[] {
  return servers.filter((server) => server.service !== undefined).map((server) => {
    const [namespace, service] = server.service!.split('/');
    const svcPorts = ((serviceOf(resources, server.service!)?.spec as { ports?: { name?: string; port?: number; appProtocol?: string }[] } | undefined)?.ports ?? []);
    const svcPort = svcPorts.find((p) => (typeof server.port === 'number' ? p.port === server.port : p.name === server.port));
    return {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `haprx-test-${server.name}`, namespace, labels: { 'kubernetes.io/service-name': service! } },
      addressType: 'IPv4',
      ports: [{ ...(svcPort?.name && { name: svcPort.name }), port: ports.get(server.name) ?? 1, ...(svcPort?.appProtocol && { appProtocol: svcPort.appProtocol }) }],
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
    } as KubeObject;
  });
}

/** Renders a fixture's resources with the library; never throws. */
export function renderFixture(
  loaded: LoadedConfig,
  fixture: Pick<Fixture, 'resources' | 'values'> & Partial<Pick<Fixture, 'servers'>>,
  extra: Record<string, unknown> = {},
  serverPorts: ReadonlyMap<string, number> = new Map(),
): ReturnType<typeof renderTemplates> | { ok: false; error: { template: string; message: string } } {
  const watches = compileWatches(loaded.config.watch);
  if (!watches.ok) return { ok: false, error: { template: 'haprx.yaml', message: watches.message } };
  const stores = new Map(loaded.config.watch.map((w) => [w.name, new Store(w.name, w)]));
  // `${port:<name>}` is the server's port; before the servers start (the static render) a stand-in.
  const ports = new Map([...(fixture.servers ?? []).map((s) => [s.name, 1] as const), ...serverPorts]);
  for (const object of [...withPorts(fixture.resources, ports), ...serverSlices(fixture.resources, fixture.servers ?? [], serverPorts)]) {
    // A copy each time: stores keep what they are given, and fixtures are rendered twice.
    const copy = structuredClone(object);
    for (const w of watches.watches) if (w.matches(copy)) stores.get(w.name)!.apply({ type: 'upsert', resource: w.name, object: copy });
  }
  return renderTemplates(loaded.templates, { resources: Object.fromEntries(stores), values: { ...loaded.config.values, ...fixture.values, ...extra } });
}

export async function runFixtures(templatesDir: string, options: RunOptions = {}): Promise<FixtureResult[]> {
  const raw = await readTemplateDir(templatesDir);
  if (!raw.ok) throw new Error(`${raw.path}: ${raw.message}`);
  const loaded = loadControllerConfig(raw.raw);
  if (!loaded.ok) throw new Error(`${loaded.path}: ${loaded.message}`);
  const { fixtures, errors } = await loadFixtures(templatesDir);
  const selected = fixtures.filter((f) => !options.match || f.file.includes(options.match) || f.name.includes(options.match));
  const validator = new Validator({ haproxyBin: options.haproxyBin ?? 'haproxy', cacheSize: 0 });
  const results = errors.filter((e) => !options.match || e.file.includes(options.match));
  for (const fixture of selected) results.push(await runFixture(loaded.config, fixture, validator, options.haproxyBin ?? 'haproxy'));
  return results.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

async function runFixture(loaded: LoadedConfig, fixture: Fixture, validator: Validator, haproxyBin: string): Promise<FixtureResult> {
  const started = performance.now();
  const done = (partial: Omit<FixtureResult, 'file' | 'name' | 'durationMs' | 'ok'> & { ok?: boolean }): FixtureResult => ({
    file: fixture.file,
    name: fixture.name,
    ok: partial.ok ?? (partial.error === undefined && partial.results.every((r) => r.ok)),
    ...partial,
    durationMs: performance.now() - started,
  });
  const rendered = renderFixture(loaded, fixture);
  if (!rendered.ok) return done({ results: [], warnings: [], error: `render failed: ${rendered.error.template}: ${rendered.error.message}` });
  const { config, warnings } = rendered;
  const warningTexts = warnings.map((w) => (w.object ? `${w.object}: ${w.message}` : w.message));
  const lines = statusLines(rendered.statuses, { pendingNote: true });
  const results: AssertionResult[] = [];
  const requests: Assertion[] = [];
  for (const a of fixture.assert) {
    if (REQUEST_KINDS.some((k) => a[k] !== undefined)) {
      requests.push(a);
      continue;
    }
    if (a.valid !== undefined) {
      const verdict = await validator.validate(config);
      const problems = verdict.ok ? '' : verdict.problems.map((p) => `${p.file}${p.line ? `:${p.line}` : ''}: ${p.message}`).join('; ');
      // A check that could not run is no verdict: it fails either assertion.
      const noVerdict = !verdict.ok && couldNotRun(verdict.phase);
      results.push({ assertion: `valid: ${a.valid}`, ok: !noVerdict && verdict.ok === a.valid, message: verdict.ok ? 'haproxy -c accepted it' : noVerdict ? `haproxy -c could not run: ${problems}` : problems });
    } else if (a.contains !== undefined || a.notContains !== undefined) {
      const text = fileText(config, a.file ?? 'haproxy.cfg');
      const needle = (a.contains ?? a.notContains)!;
      const found = text !== undefined && text.includes(needle);
      const label = `${a.contains !== undefined ? 'contains' : 'notContains'} ${JSON.stringify(needle)} in ${a.file ?? 'haproxy.cfg'}`;
      results.push({ assertion: label, ok: text !== undefined && (a.contains !== undefined ? found : !found), message: text === undefined ? `no file ${a.file}` : undefined });
    } else if (a.warning !== undefined) {
      const pattern = new RegExp(a.warning);
      results.push({ assertion: `warning /${a.warning}/`, ok: warningTexts.some((w) => pattern.test(w)), message: `warnings: ${JSON.stringify(warningTexts)}` });
    } else if (a.noWarnings) {
      results.push({ assertion: 'noWarnings', ok: warnings.length === 0, message: `warnings: ${JSON.stringify(warningTexts)}` });
    } else if (a.objectStatus !== undefined) {
      const pattern = new RegExp(a.objectStatus);
      results.push({ assertion: `objectStatus /${a.objectStatus}/`, ok: lines.some((l) => pattern.test(l)), message: `status: ${JSON.stringify(lines)}` });
    }
  }
  if (requests.length > 0) {
    try {
      results.push(...(await runRequests(loaded, fixture, requests, haproxyBin)));
    } catch (err) {
      results.push({ assertion: 'requests', ok: false, message: errorText(err) });
    }
  }
  return done({ results, warnings });
}

function fileText(config: RenderedConfig, file: string): string | undefined {
  if (file === 'haproxy.cfg') return config.main;
  const [dir, name] = file.split('/', 2);
  const kind = dir === 'maps' ? 'maps' : dir === 'general' ? 'files' : dir === 'ssl' ? 'certs' : undefined;
  return kind && name ? config[kind][name] : undefined;
}

/**
 * The render as the fixture runner starts it: every backend ends with a
 * `return` that echoes the request it got (so no server is needed), and every
 * frontend names the backend that answered in a response header (be_name: the
 * frontend's own name when the frontend answered, e.g. with a redirect).
 * Backends with a server at one of `real` (`127.0.0.1:port` of the fixture
 * servers) are left to answer for real, and TCP sections are left alone.
 */
export function stubBackends(main: string, real: ReadonlySet<string> = new Set()): string {
  const config = parseConfig(main);
  const lines = main.split('\n');
  const after = new Map<number, string>();
  for (const section of config.sections) {
    if (section.lines.some((l) => l.keyword === 'mode' && l.args[0] === 'tcp')) continue;
    const last = section.lines.at(-1)?.line ?? section.header.line;
    const served = section.lines.some((l) => l.keyword === 'server' && real.has(l.args[1] ?? ''));
    if (section.type === 'backend' && !served) after.set(last, `  http-request return status 200 content-type text/plain hdr ${URI_HEADER} "%[pathq]" lf-string "%[req.hdrs]"`);
    if (section.type === 'frontend') after.set(last, `  http-after-response set-header ${STUB_HEADER} "%[be_name]"`);
  }
  return lines.flatMap((line, i) => (after.has(i + 1) ? [line, after.get(i + 1)!] : [line])).join('\n');
}

const listenerPortsOf = (resources: KubeObject[]) => [
  ...new Set(
    resources
      .filter((r) => r.kind === 'Gateway')
      .flatMap((g) => ((g.spec as { listeners?: { port?: unknown }[] } | undefined)?.listeners ?? []).map((l) => Number(l.port)).filter((p) => Number.isInteger(p) && p > 0 && p < 65536)),
  ),
];

/** A Secret's data among the fixture's resources, decoded; a missing Secret throws, naming who wanted it. */
function secretData(resources: readonly KubeObject[], ref: string, who: string): Record<string, string> {
  const [ns, name] = ref.split('/');
  const secret = resources.find((r) => r.kind === 'Secret' && r.metadata.namespace === ns && r.metadata.name === name) as { data?: Record<string, unknown> } | undefined;
  if (!secret) throw new Error(`${who}: no Secret ${ref} in the fixture`);
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64').toString('utf8')]));
}

/** The fixture's objects with every `${port:<name>}` replaced: a whole string by the number, inside a string by its digits. */
function withPorts<T>(value: T, ports: ReadonlyMap<string, number>): T {
  const swap = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = /^\$\{port:([a-z0-9-]+)\}$/.exec(v);
      if (whole && ports.has(whole[1]!)) return ports.get(whole[1]!);
      return v.replace(/\$\{port:([a-z0-9-]+)\}/g, (all, name: string) => String(ports.get(name) ?? all));
    }
    if (Array.isArray(v)) return v.map(swap);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, swap(x)]));
    return v;
  };
  return swap(value) as T;
}

/** The fixture servers, started; a Secret a server needs that is missing fails the start with its name. */
async function startServers(fixture: Fixture): Promise<RunningServer[]> {
  const started: RunningServer[] = [];
  try {
    for (const s of fixture.servers) {
      let tls: { cert: string; key: string } | undefined;
      if (s.certificate !== undefined) {
        const data = secretData(fixture.resources, s.certificate, `server ${s.name}`);
        tls = { cert: data['tls.crt'] ?? '', key: data['tls.key'] ?? '' };
      }
      const clientCa = s.clientCa === undefined ? undefined : (secretData(fixture.resources, s.clientCa, `server ${s.name}`)['ca.crt'] ?? '');
      started.push(await startServer({ name: s.name, protocol: s.protocol, tls, ...(clientCa !== undefined && { clientCa }), ...(s.auth && { auth: s.auth }) }));
    }
    return started;
  } catch (err) {
    await Promise.all(started.map((s) => s.close()));
    throw err;
  }
}

async function runRequests(loaded: LoadedConfig, fixture: Fixture, requests: Assertion[], haproxyBin: string): Promise<AssertionResult[]> {
  const listenerPorts = listenerPortsOf(fixture.resources);
  const httpPort = await freePort();
  const httpsPort = await freePort();
  const portOffset = await freeOffset(listenerPorts, [httpPort, httpsPort]);
  const label = (a: Assertion) => REQUEST_KINDS.filter((k) => a[k] !== undefined).map((k) => `${k} ${JSON.stringify(a[k])}`).join('');
  const servers = await startServers(fixture);
  const dir = await mkdtemp(join(tmpdir(), 'haprx-test-'));
  let child: ChildProcess | undefined;
  try {
    const serverPorts = new Map(servers.map((s) => [s.name, s.port]));
    const live = renderFixture(loaded, fixture, { bindAddress: '127.0.0.1', httpPort, httpsPort, portOffset }, serverPorts);
    if (!live.ok) return requests.map((a) => ({ assertion: label(a), ok: false, message: `render failed: ${live.error.message}` }));
    const real = new Set(servers.map((s) => `127.0.0.1:${s.port}`));
    await writeStateFiles(dir, { ...live.config, main: stubBackends(live.config.main, real) });
    let stderr = '';
    child = spawn(haproxyBin, ['-db', '-f', 'haproxy.cfg'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    let gone = false;
    child.once('exit', () => (gone = true));
    // A binary that cannot be started is an outcome, not a crash.
    child.once('error', (err) => {
      stderr += err.message;
      gone = true;
    });
    const ports = [httpPort, ...(live.config.main.includes(`:${httpsPort}`) ? [httpsPort] : []), ...listenerPorts.map((p) => p + portOffset)];
    const ready = await waitForPorts(ports.filter((p) => live.config.main.includes(`:${p}`)), 5_000, () => gone);
    if (!ready) return requests.map((a) => ({ assertion: label(a), ok: false, message: `haproxy did not start: ${stderr.trim().split('\n').slice(-3).join(' | ')}` }));
    const results: AssertionResult[] = [];
    const busy = () => servers.reduce((n, s) => n + s.busy(), 0);
    for (const a of requests) {
      try {
        const once = async () => exchange(a, { httpPort, httpsPort, portOffset }, fixture.resources);
        if (a.repeat !== undefined) results.push(counted(a, label(a), await countAnswers(a.repeat, once, STUB_HEADER)));
        else if (a.inFlight !== undefined) results.push(await whileInFlight(a.inFlight, once, busy, async () => check(a, label(a), await once())));
        else results.push(check(a, label(a), await once()));
      } catch (err) {
        results.push({ assertion: label(a), ok: false, message: errorText(err) });
      }
    }
    return results;
  } finally {
    if (child && child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
    await Promise.all(servers.map((s) => s.close()));
    await rm(dir, { recursive: true, force: true });
  }
}

/** The answers of a repeated request against the assertion's bounds. */
function counted(a: Assertion, label: string, counts: Counts): AssertionResult {
  const problems = [...outOfBounds('backend', counts.backends, a.backends), ...outOfBounds('status', counts.statuses, a.statuses), ...outOfBounds('server', counts.servers, a.servers)];
  if (a.sameServer === true && (counts.servers.size !== 1 || counts.servers.has('(none)'))) problems.push('the answers came from more than one server, or from none');
  const seen = JSON.stringify({ backends: Object.fromEntries(counts.backends), statuses: Object.fromEntries(counts.statuses), servers: Object.fromEntries(counts.servers) });
  return { assertion: `${label} ×${a.repeat}`, ok: problems.length === 0, message: problems.length > 0 ? `${problems.join('; ')} (${seen})` : seen };
}

/** Sends what the assertion describes to the port it names. */
function exchange(a: Assertion, at: { httpPort: number; httpsPort: number; portOffset: number }, resources: readonly KubeObject[]): Promise<Reply> {
  if (a.grpc) return sendGrpc(a.grpc.listener !== undefined ? a.grpc.listener + at.portOffset : a.grpc.tls ? at.httpsPort : at.httpPort, a.grpc);
  if (a.tcp) return sendTcp(a.tcp.listener + at.portOffset, a.tcp);
  const req = a.request!;
  const port = req.listener !== undefined ? req.listener + at.portOffset : req.tls ? at.httpsPort : at.httpPort;
  if (req.websocket !== undefined) return sendWebSocket(port, req, req.websocket);
  const client = req.clientCertificate === undefined ? undefined : secretData(resources, req.clientCertificate, 'request.clientCertificate');
  return sendHttp(port, { ...req, ...(client && { client: { cert: client['tls.crt'] ?? '', key: client['tls.key'] ?? '' } }) });
}

/**
 * Request headers as the backend saw them, names lower-cased, repeats joined
 * with ", ": lines `name: value` separated by an encoded CRLF (`%0D%0A`), as
 * the stub's log-format string writes them and the fixture servers copy; a
 * gRPC echo carries them in its JSON reply.
 */
function seenHeaders(reply: Reply): Map<string, string> {
  const seen = new Map<string, string>();
  if (reply.reply?.startsWith('{')) {
    const headers = (JSON.parse(reply.reply) as { headers?: Record<string, string> }).headers ?? {};
    for (const [name, value] of Object.entries(headers)) seen.set(name.toLowerCase(), value);
    return seen;
  }
  for (const line of reply.body.split('%0D%0A')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    seen.set(name, seen.has(name) ? `${seen.get(name)}, ${value}` : value);
  }
  return seen;
}

function check(a: Assertion, label: string, reply: Reply & { grpcStatus?: number }): AssertionResult {
  const problems: string[] = [];
  const expect = (what: string, actual: unknown, wanted: unknown) => {
    if (actual !== wanted) problems.push(`${what} is ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}`);
  };
  const backend = reply.headers[STUB_HEADER];
  if (a.backend !== undefined) expect('backend', backend ?? null, a.backend);
  if (a.status !== undefined) expect('status', reply.status, a.status);
  if (a.location !== undefined) expect('location', reply.headers.location ?? null, a.location);
  if (a.uri !== undefined) expect('uri', reply.headers[URI_HEADER], a.uri);
  if (a.certificate !== undefined) expect('certificate', reply.certificate, a.certificate);
  if (a.grpcStatus !== undefined) expect('grpc-status', reply.grpcStatus, a.grpcStatus);
  if (a.reply !== undefined) {
    // A gRPC echo wraps the message in JSON; compare the message itself.
    const text = reply.reply?.startsWith('{') ? (JSON.parse(reply.reply) as { message?: string }).message : reply.reply;
    expect('reply', text, a.reply);
  }
  for (const [name, value] of Object.entries(a.headers ?? {})) {
    const actual = reply.headers[name.toLowerCase()];
    expect(`response header ${name}`, Array.isArray(actual) ? actual.join(', ') : (actual ?? null), value);
  }
  for (const [name, pattern] of Object.entries(a.headersMatch ?? {})) {
    const actual = reply.headers[name.toLowerCase()];
    const text = Array.isArray(actual) ? actual.join(', ') : actual;
    if (text === undefined || !new RegExp(pattern).test(text)) problems.push(`response header ${name} is ${JSON.stringify(text ?? null)}, expected to match /${pattern}/`);
  }
  if (a.requestHeaders || a.requestHeadersMatch) {
    const answered = backend !== undefined || reply.reply !== undefined;
    const seen = answered ? seenHeaders(reply) : new Map<string, string>();
    if (!answered) problems.push('no backend answered, so the request headers are unknown');
    for (const [name, value] of Object.entries(a.requestHeaders ?? {})) expect(`request header ${name}`, seen.get(name.toLowerCase()) ?? null, value);
    for (const [name, pattern] of Object.entries(a.requestHeadersMatch ?? {})) {
      const actual = seen.get(name.toLowerCase());
      if (actual === undefined || !new RegExp(pattern).test(actual)) problems.push(`request header ${name} is ${JSON.stringify(actual ?? null)}, expected to match /${pattern}/`);
    }
  }
  const summary = { status: reply.status, backend: backend ?? null, location: reply.headers.location, ...(reply.reply !== undefined && { reply: reply.reply.slice(0, 200) }), ...(reply.grpcStatus !== undefined && { grpcStatus: reply.grpcStatus }) };
  return { assertion: label, ok: problems.length === 0, message: problems.length > 0 ? `${problems.join('; ')} (got ${JSON.stringify(summary)})` : undefined };
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
}

/** An offset that moves every listener port to a free unprivileged port. */
async function freeOffset(listenerPorts: number[], taken: number[]): Promise<number> {
  if (listenerPorts.length === 0) return 0;
  for (let attempt = 0; attempt < 50; attempt++) {
    const offset = 20_000 + Math.floor(Math.random() * 30_000);
    const moved = listenerPorts.map((p) => p + offset);
    if (moved.some((p) => p > 65535 || taken.includes(p))) continue;
    if ((await Promise.all(moved.map(portIsFree))).every(Boolean)) return offset;
  }
  throw new Error('no free ports for the Gateway listeners');
}

/** Whether every port accepts connections within `ms`; gives up as soon as `stopped()` (haproxy exited). */
async function waitForPorts(ports: number[], ms: number, stopped: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (const port of ports) {
    for (;;) {
      if (stopped()) return false;
      const open = await new Promise<boolean>((r) => {
        const socket = connect(port, '127.0.0.1');
        socket.once('connect', () => (socket.destroy(), r(true)));
        socket.once('error', () => r(false));
      });
      if (open) break;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return true;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export const testCommand: Command = {
  summary: "run a template library's fixture tests",
  usage: `Usage: haprx test TEMPLATES_DIR [--haproxy-bin PATH] [--match TEXT]

Runs the fixtures in TEMPLATES_DIR/tests/*.yaml: each renders its Kubernetes
objects with the templates and checks its assertions (contains, notContains,
warning, noWarnings, valid with haproxy -c, and requests sent through a real
haproxy to the backend the configuration picks). Exits 0 when every fixture
passes. The format is described in docs/templates.md.

Options:
  --haproxy-bin PATH  the haproxy binary (default: haproxy on the PATH)
  --match TEXT        only fixtures whose file or name contains TEXT
`,
  async run(argv) {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: { 'haproxy-bin': { type: 'string' }, match: { type: 'string' } }, allowPositionals: true, strict: true });
    } catch (err) {
      process.stderr.write(`haprx: ${errorText(err)}\n\n${this.usage}`);
      return 2;
    }
    if (parsed.positionals.length !== 1) {
      process.stderr.write(`haprx: expected one template folder\n\n${this.usage}`);
      return 2;
    }
    const dir = resolve(parsed.positionals[0]!);
    let results: FixtureResult[];
    try {
      results = await runFixtures(dir, { haproxyBin: parsed.values['haproxy-bin'], match: parsed.values.match });
    } catch (err) {
      process.stderr.write(`haprx: ${errorText(err)}\n`);
      return 1;
    }
    if (results.length === 0) {
      process.stderr.write(`haprx: no fixtures in ${join(dir, 'tests')}\n`);
      return 1;
    }
    for (const r of results) {
      process.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'} ${r.file}: ${r.name} (${Math.round(r.durationMs)} ms)\n`);
      if (r.error) process.stdout.write(`     ${printable(r.error)}\n`);
      for (const a of r.results) if (!a.ok) process.stdout.write(`     - ${printable(a.assertion)}: ${printable(a.message ?? 'failed')}\n`);
    }
    const failed = results.filter((r) => !r.ok).length;
    process.stdout.write(`${results.length - failed} passed, ${failed} failed\n`);
    return failed === 0 ? 0 : 1;
  },
};
