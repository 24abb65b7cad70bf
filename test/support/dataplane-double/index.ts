/**
 * DATA PLANE API DOUBLE — a test double of the HAProxy Data Plane API v3, not the
 * real thing. It speaks the calls haprx makes, with the real API's paths, status
 * codes, headers (Configuration-Version on every answer, Reload-Id on reloads)
 * and `{code, message}` error bodies, over HTTP or HTTPS (with client
 * certificate checking when given a CA), and it is backed by a real haproxy in
 * master-worker mode:
 * - a raw configuration becomes the configuration file, after `haproxy -c`,
 *   with the `# _version=N` line the API keeps; a reload goes through the master
 *   socket and its outcome is read from `show proc`;
 * - runtime endpoints become runtime API commands sent to the worker;
 * - storage endpoints become files in storage directories.
 * Faults can be injected: 5xx answers, slow answers, dropped connections,
 * configuration writes that lose a race against another client (409), reloads
 * that fail (as when haproxy cannot start the new configuration: the agent puts
 * the last good file back), and an API that refuses connections (not listening).
 *
 * Where it simplifies (documented in docs/dataplane.md): no transactions, no
 * fine-grained configuration endpoints, no runtime certificate updates (ssl
 * uploads without skip_reload schedule a reload), the stored configuration is
 * the posted text (the real API re-serialises it through its parser).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { type IncomingMessage, type Server, type ServerResponse, createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { HaproxyProcess } from '../../../src/local/haproxy-process.ts';
import { ReloadAgent } from './reload-agent.ts';

const execFileP = promisify(execFile);

export interface DataplaneDoubleOptions {
  username?: string;
  password?: string;
  /** Serve HTTPS with this certificate; with `ca`, require client certificates signed by it (and, like the real API, skip Basic auth). */
  tls?: { cert: string; key: string; ca?: string };
  /** What GET /v3/info reports; decides version-dependent behaviour (weight/address on runtime server PUT from 3.3.1, JSON error bodies on raw from 3.4). */
  apiVersion?: string;
  /** The real API's reload_delay, in milliseconds (it defaults to 5 s). */
  reloadDelayMs?: number;
  haproxyBin?: string;
  /** Extra text for the initial configuration (after global and defaults). */
  initialConfig?: string;
}

type Matcher = { method?: string; path?: string | RegExp };

interface Fault {
  match: Matcher;
  times: number;
  kind: 'status' | 'slow' | 'drop';
  status?: number;
  ms?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  status: number | 'dropped';
}

export interface DataplaneDouble {
  /** e.g. http://127.0.0.1:41234 (no /v3). */
  url: string;
  root: string;
  configFile: string;
  storageDirs: { maps: string; general: string; ssl: string };
  haproxy: HaproxyProcess;
  /** Every call, in order. */
  requests: RecordedRequest[];
  faults: {
    /** The next `times` matching calls answer `status` with a `{code, message}` body. */
    status(status: number, match?: Matcher, times?: number): void;
    /** Matching calls wait `ms` before being handled. */
    slow(ms: number, match?: Matcher, times?: number): void;
    /** The next `times` matching calls get their connection closed with no answer. */
    drop(match?: Matcher, times?: number): void;
    /** The next `times` versioned configuration writes lose a race: another client commits first. */
    conflict(times?: number): void;
    /** The next `times` reloads fail: the reload reports `failed` and the last good configuration file is put back. */
    failReloads(times?: number): void;
    /** Stops listening: connections are refused until `accept()` (haproxy itself goes on serving). */
    refuse(): Promise<void>;
    /** Listens again, on the same port. */
    accept(): Promise<void>;
    /** Clears every fault above, and listens again if it was refusing. */
    clear(): Promise<void>;
  };
  /** Reloads and failed reloads as the master's `show proc` counts them. */
  reloadCounts(): Promise<{ reloads: number; failed: number }>;
  /** The configuration version on disk. */
  version(): Promise<number>;
  /** Another client changes the configuration (version bump, `extra` appended) and, unless told not to, reloads. */
  foreignChange(extra: string, reload?: boolean): Promise<void>;
  /** Resolves when no reload is pending or running. */
  reloadsSettled(): Promise<void>;
  stop(): Promise<void>;
}

const INITIAL = ['global', '  maxconn 1000', 'defaults', '  mode http', '  timeout connect 5s', '  timeout client 30s', '  timeout server 30s'];

/** The storage's name for an uploaded file: letters, digits, `_` and `-`, plus the extension. */
export function storageName(name: string): string {
  const dot = name.lastIndexOf('.');
  let stem = dot >= 0 ? name.slice(0, dot) : name;
  let ext = dot >= 0 ? name.slice(dot + 1) : '';
  const clean = (s: string) => s.replace(/[^a-zA-Z0-9_\\-]+/g, '_');
  stem = stem === '' ? '' : clean(stem);
  if (dot < 0) return stem;
  ext = clean(ext);
  return stem === '' ? `_${ext}` : `${stem}.${ext}`;
}

function versionOf(text: string): number {
  const m = /^# _version=(\d+)\s*$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

function dropVersionLines(text: string): string {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.filter((l) => !l.startsWith('# _version=')).map((l) => `${l}\n`).join('');
}

function atLeast(version: string, major: number, minor: number, patch: number): boolean {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(version);
  if (!m) return true;
  const v = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  const want = [major, minor, patch];
  for (let i = 0; i < 3; i++) if (v[i] !== want[i]) return v[i]! > want[i]!;
  return true;
}

class Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
  constructor(status: number, body = '', headers: Record<string, string> = {}) {
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
  static json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
    return new Reply(status, `${JSON.stringify(value)}\n`, { 'content-type': 'application/json', ...headers });
  }
  static error(status: number, message: string, contentType = 'application/json'): Reply {
    return new Reply(status, `${JSON.stringify({ code: status, message })}\n`, { 'content-type': contentType });
  }
  static text(status: number, text: string, headers: Record<string, string> = {}): Reply {
    return new Reply(status, text, { 'content-type': 'text/plain', ...headers });
  }
}

interface Call {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

type Route = { method: string; pattern: RegExp; handle: (call: Call) => Promise<Reply> };

interface ServerRow {
  backend: string;
  id: string;
  name: string;
  address: string;
  port: number;
  opState: string;
  admin: number;
  weight: number;
}

function parseServersState(text: string): ServerRow[] {
  const lines = text.split('\n');
  const header = lines.find((l) => l.startsWith('# be_id'));
  if (!header) return [];
  const columns = header.slice(2).split(' ');
  const col = (cells: string[], name: string) => cells[columns.indexOf(name)] ?? '';
  return lines
    .filter((l) => l !== '' && !l.startsWith('#') && l.includes(' '))
    .map((l) => {
      const cells = l.split(' ');
      return {
        backend: col(cells, 'be_name'),
        id: col(cells, 'srv_id'),
        name: col(cells, 'srv_name'),
        address: col(cells, 'srv_addr'),
        port: Number(col(cells, 'srv_port')),
        opState: col(cells, 'srv_op_state'),
        admin: Number.parseInt(col(cells, 'srv_admin_state'), 16),
        weight: Number(col(cells, 'srv_uweight')),
      };
    });
}

function runtimeServer(row: ServerRow): Record<string, unknown> {
  const admin = row.admin & 0x23 ? 'maint' : row.admin & 0x18 ? 'drain' : 'ready';
  const op = row.opState === '0' ? 'down' : row.opState === '3' ? 'stopping' : 'up';
  return { id: row.id, name: row.name, address: row.address, port: row.port, admin_state: admin, operational_state: op, weight: row.weight };
}

// The RuntimeAddServer fields the double turns into `add server` words (a subset of the real model).
const ADD_SERVER_FLAGS: Readonly<Record<string, string>> = {
  backup: 'backup', check: 'check', ssl: 'ssl', send_proxy: 'send-proxy', 'send-proxy': 'send-proxy', 'send-proxy-v2': 'send-proxy-v2', agent_check: 'agent-check', 'agent-check': 'agent-check',
};
const ADD_SERVER_VALUES: Readonly<Record<string, string>> = {
  maxconn: 'maxconn', maxqueue: 'maxqueue', minconn: 'minconn', inter: 'inter', fastinter: 'fastinter', downinter: 'downinter', rise: 'rise', fall: 'fall',
  slowstart: 'slowstart', id: 'id', verify: 'verify', sni: 'sni', alpn: 'alpn', ssl_cafile: 'ca-file', crl_file: 'crl-file', ssl_certificate: 'crt',
  health_check_port: 'port', health_check_address: 'addr', proto: 'proto', observe: 'observe', 'on-error': 'on-error', error_limit: 'error-limit',
  pool_max_conn: 'pool-max-conn', pool_low_conn: 'pool-low-conn', pool_purge_delay: 'pool-purge-delay', weight: 'weight',
};
const INT_FIELDS = new Set(['maxconn', 'maxqueue', 'minconn', 'inter', 'fastinter', 'downinter', 'rise', 'fall', 'slowstart', 'health_check_port', 'error_limit', 'pool_max_conn', 'pool_low_conn', 'pool_purge_delay', 'weight', 'port']);

function addServerWords(body: Record<string, unknown>): string | Reply {
  for (const [field, value] of Object.entries(body)) {
    if (INT_FIELDS.has(field) && (typeof value !== 'number' || !Number.isInteger(value) || value < 0)) return Reply.error(422, `${field} in body must be of type integer`);
  }
  if (typeof body['address'] !== 'string' || /\s/.test(body['address']) || body['address'] === '') return Reply.error(422, 'address in body should match \'^[^\\s]+$\'');
  const port = body['port'];
  if (port !== undefined && (typeof port !== 'number' || port < 1 || port > 65535)) return Reply.error(422, 'port in body should be between 1 and 65535');
  const words = [port === undefined ? body['address'] : `${body['address']}:${port}`];
  // A fixed order, whatever the order of the body: the real API serialises field by field.
  for (const field of Object.keys(ADD_SERVER_FLAGS).sort()) if (body[field] === 'enabled') words.push(ADD_SERVER_FLAGS[field]!);
  for (const field of Object.keys(ADD_SERVER_VALUES).sort()) {
    const value = body[field];
    if (value !== undefined && value !== '') words.push(ADD_SERVER_VALUES[field]!, String(value));
  }
  if (body['maintenance'] === 'enabled') words.push('disabled');
  return words.join(' ');
}

function pemParts(text: string): { certs: number; keys: number } {
  return { certs: (text.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length, keys: (text.match(/-----BEGIN [A-Z ]*PRIVATE KEY-----/g) ?? []).length };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function matches(match: Matcher, method: string, path: string): boolean {
  if (match.method && match.method.toUpperCase() !== method) return false;
  if (match.path === undefined) return true;
  return typeof match.path === 'string' ? path === match.path || path === `/v3${match.path}` : match.path.test(path);
}

export async function startDataplaneDouble(options: DataplaneDoubleOptions = {}): Promise<DataplaneDouble> {
  const username = options.username ?? 'admin';
  const password = options.password ?? 'adminpwd';
  const apiVersion = options.apiVersion ?? 'v3.4.0 haprx-double';
  const bin = options.haproxyBin ?? 'haproxy';
  const root = await mkdtemp(join(tmpdir(), 'haprx-dpapi-double-'));
  const confDir = join(root, 'conf');
  const configFile = join(confDir, 'haproxy.cfg');
  const storageDirs = { maps: join(root, 'storage', 'maps'), general: join(root, 'storage', 'general'), ssl: join(root, 'storage', 'ssl') };
  for (const dir of [confDir, join(root, 'tx'), ...Object.values(storageDirs)]) await mkdir(dir, { recursive: true });
  const initial = `# _version=1\n${[...INITIAL, ...(options.initialConfig ? [options.initialConfig] : [])].join('\n')}\n`;
  await writeFile(configFile, initial);

  const haproxy = new HaproxyProcess({ bin, stateDir: confDir });
  await haproxy.start();
  let failingReloads = 0;
  const reload = async () => {
    if (failingReloads <= 0) return haproxy.reload();
    failingReloads--;
    return { ok: false as const, message: '[ALERT] (1) : injected fault: the new haproxy process could not start' };
  };
  const agent = new ReloadAgent({ configFile, delayMs: options.reloadDelayMs ?? 100, reload }, initial);

  const faults: Fault[] = [];
  let conflicts = 0;
  const requests: RecordedRequest[] = [];
  let writeLock: Promise<unknown> = Promise.resolve();
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const result = writeLock.then(fn);
    writeLock = result.catch(() => undefined);
    return result;
  };
  const legacyRawErrors = !atLeast(apiVersion, 3, 4, 0);
  const runtimeServerFields = atLeast(apiVersion, 3, 3, 1);

  const currentConfig = () => readFile(configFile, 'utf8');
  const runtime = async (command: string) => (await haproxy.runtime(command)).trim();

  async function check(text: string): Promise<string | undefined> {
    const file = join(root, 'tx', `${randomUUID()}.cfg`);
    await writeFile(file, text);
    try {
      await execFileP(bin, ['-c', '-f', file], { cwd: confDir });
      return undefined;
    } catch (err) {
      const { stderr = '', code = 1 } = err as { stderr?: string; code?: number };
      const lines = stderr
        .split('\n')
        .filter((l) => l.includes('[ALERT]') && !/fatal errors found|error\(s\) found in configuration file/i.test(l))
        .map((l) => {
          const at = / : parsing \[[^\]]*:(\d+)\] : (.*)$/.exec(l);
          if (at) return `line=${at[1]} msg="${at[2]!.trim()}"`;
          return `msg="${l.replace(/^\[ALERT\]\s+\(\d+\)\s*:\s*/, '').trim()}"`;
        });
      return `validation error: exit status ${code}: err transactionId=${basename(file, '.cfg')} \n${lines.join('\n')}`;
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }

  async function writeConfig(text: string): Promise<void> {
    const tmp = `${configFile}.tmp`;
    await writeFile(tmp, text);
    await rename(tmp, configFile);
  }

  async function simulateForeignCommit(extra: string): Promise<void> {
    const text = await currentConfig();
    await writeConfig(`# _version=${versionOf(text) + 1}\n${dropVersionLines(text)}${extra}\n`);
  }

  // ----- handlers -----

  async function postRaw(call: Call): Promise<Reply> {
    const ct = call.headers['content-type'] ?? '';
    const rawError = (status: number, message: string) => Reply.error(status, message, legacyRawErrors ? 'text/plain' : 'application/json');
    if (!ct.startsWith('text/plain')) return Reply.error(415, `unsupported content type ${ct || '(none)'}: text/plain expected`);
    const data = call.body.toString('utf8');
    if (data.length > 0 && !data.includes('\n')) return rawError(400, 'invalid configuration: no newline character found');
    const q = call.query;
    const flag = (name: string) => q.get(name) === 'true' || q.get(name) === '1';
    if (q.get('transaction_id')) return rawError(400, 'transactions are not supported by this double');
    if (flag('only_validate')) {
      const problem = await check(data);
      return problem ? rawError(400, problem) : Reply.text(202, data);
    }
    return serialized(async () => {
      const skipVersion = flag('skip_version');
      const given = Number(q.get('version') ?? 0);
      if (!skipVersion && conflicts > 0) {
        conflicts--;
        await simulateForeignCommit('# a change made by another client');
      }
      const current = versionOf(await currentConfig());
      if (!skipVersion) {
        if (!given) return rawError(400, 'version or transaction not specified: version or transaction not specified, specify only one');
        if (given !== current) return rawError(409, `version mismatch: version in configuration file is ${current}, given version is ${given}`);
      }
      const text = skipVersion ? data : `# _version=${given + 1}\n${dropVersionLines(data)}`;
      const problem = await check(text);
      if (problem) return rawError(400, problem);
      await writeConfig(text);
      if (flag('skip_reload')) {
        const actions = call.headers['x-runtime-actions'];
        if (typeof actions === 'string' && actions !== '') {
          const failure = await runtimeActions(actions);
          if (failure) return rawError(500, failure);
        }
        return Reply.text(201, text);
      }
      if (flag('force_reload')) {
        const result = await agent.force();
        return result.ok ? Reply.text(201, text) : rawError(400, `Reload failed: ${result.message}`);
      }
      return Reply.text(202, text, { 'reload-id': agent.schedule() });
    });
  }

  async function runtimeActions(list: string): Promise<string | undefined> {
    for (const action of list.split(';')) {
      const p = action.split(' ');
      const name = p[0];
      if (!name) continue;
      let command: string | undefined;
      if (name === 'SetServerAddr' && p.length > 4) command = `set server ${p[1]}/${p[2]} addr ${p[3]} port ${p[4]}`;
      else if (name === 'SetServerWeight' && p.length > 3) command = `set server ${p[1]}/${p[2]} weight ${p[3]}`;
      else if (name === 'SetServerState' && p.length > 3) command = `set server ${p[1]}/${p[2]} state ${p[3]}`;
      else if (['SetServerAddr', 'SetServerWeight', 'SetServerState'].includes(name)) return `cannot execute ${name}: not enough parameters`;
      if (!command) continue;
      const reply = await runtime(command);
      if (reply !== '' && !/^(IP changed from|no need to change|port changed from)/.test(reply)) return `cannot execute ${name}: ${reply}`;
    }
    return undefined;
  }

  async function serverRows(backend: string): Promise<ServerRow[] | undefined> {
    const text = await haproxy.runtime(`show servers state ${backend}`);
    if (/Can't find backend/i.test(text)) return undefined;
    return parseServersState(text);
  }

  async function findServer(backend: string, name: string): Promise<ServerRow | Reply> {
    const rows = await serverRows(backend);
    if (!rows) return Reply.error(404, `backend ${backend}: No such backend`);
    const row = rows.find((r) => r.name === name);
    return row ?? Reply.error(404, `Runtime server ${name} not found in backend ${backend}`);
  }

  function jsonBody(call: Call): Record<string, unknown> | Reply {
    try {
      const value: unknown = JSON.parse(call.body.toString('utf8') || 'null');
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return Reply.error(400, 'request body has an error: a JSON object is expected');
      return value as Record<string, unknown>;
    } catch {
      return Reply.error(400, 'request body has an error: failed to decode request body');
    }
  }

  async function addServer(call: Call): Promise<Reply> {
    const body = jsonBody(call);
    if (body instanceof Reply) return body;
    if (typeof body['name'] !== 'string' || body['name'] === '') return Reply.error(400, 'the new server must have a name');
    const words = addServerWords(body);
    if (words instanceof Reply) return words;
    const command = `add server ${call.params['backend']}/${body['name']} ${words}`;
    if (command.includes(';')) return Reply.error(500, 'invalid character found in runtime command');
    const reply = await runtime(command);
    if (reply === 'New server registered.') return Reply.json(201, body);
    if (/No such backend/i.test(reply)) return Reply.error(404, reply);
    if (/Already exists/i.test(reply)) return Reply.error(409, reply);
    return Reply.error(500, `[3] ${reply} [${command}]`);
  }

  async function replaceServer(call: Call): Promise<Reply> {
    const body = jsonBody(call);
    if (body instanceof Reply) return body;
    const { backend = '', name = '' } = call.params;
    const row = await findServer(backend, name);
    if (row instanceof Reply) return row;
    const fail = (reply: string) => Reply.error(500, reply);
    const state = runtimeServer(row);
    const op = body['operational_state'];
    if (typeof op === 'string' && op !== state['operational_state']) {
      const reply = await runtime(`set server ${backend}/${name} health ${op}`);
      if (reply) return fail(reply);
    }
    const admin = body['admin_state'];
    if (typeof admin === 'string' && admin !== state['admin_state']) {
      if (!['ready', 'drain', 'maint'].includes(admin)) return Reply.error(422, `admin_state in body should be one of [ready maint drain]`);
      const reply = await runtime(`set server ${backend}/${name} state ${admin}`);
      if (reply) return fail(reply);
    }
    // Weight and address/port are applied from API 3.3.1 on; older versions ignore them.
    if (runtimeServerFields) {
      const weight = body['weight'];
      if (typeof weight === 'number' && weight !== row.weight) {
        const reply = await runtime(`set server ${backend}/${name} weight ${weight}`);
        if (reply) return fail(reply);
      }
      const address = typeof body['address'] === 'string' && body['address'] !== '' ? body['address'] : undefined;
      const port = typeof body['port'] === 'number' ? body['port'] : undefined;
      if ((address !== undefined && address !== row.address) || (port !== undefined && port !== row.port)) {
        const reply = await runtime(`set server ${backend}/${name} addr ${address ?? row.address} port ${port ?? row.port}`);
        if (!/^(IP changed from|no need to change|port changed from)/.test(reply)) return fail(reply);
      }
    }
    const after = await findServer(backend, name);
    return after instanceof Reply ? after : Reply.json(200, runtimeServer(after));
  }

  async function deleteServer(call: Call): Promise<Reply> {
    const { backend = '', name = '' } = call.params;
    const row = await findServer(backend, name);
    if (row instanceof Reply) return row;
    if (runtimeServer(row)['admin_state'] !== 'maint') {
      const reply = await runtime(`set server ${backend}/${name} state maint`);
      if (reply) return Reply.error(500, reply);
    }
    const reply = await runtime(`del server ${backend}/${name}`);
    if (reply === 'Server deleted.') return new Reply(204);
    return Reply.error(500, `[3] ${reply} [del server ${backend}/${name}]`);
  }

  /** The map file a runtime map name stands for, as the real API resolves it with a maps directory. */
  function mapPath(name: string): string {
    let file = storageName(name);
    if (!file.endsWith('.map')) file += '.map';
    return join(storageDirs.maps, file);
  }

  async function mapEntries(path: string): Promise<{ id: string; key: string; value: string }[] | undefined> {
    const text = await haproxy.runtime(`show map ${path}`);
    if (/Unknown map identifier/i.test(text)) return undefined;
    return text
      .split('\n')
      .filter((l) => l.startsWith('0x'))
      .map((l) => {
        const [id = '', key = '', ...value] = l.split(' ');
        return { id, key, value: value.join(' ') };
      });
  }

  async function mapCommand(command: string, okStatus: number, body: unknown, failStatus: number): Promise<Reply> {
    if (command.includes(';')) return Reply.error(failStatus, 'invalid character found in runtime command');
    const reply = await runtime(command);
    if (reply !== '') return Reply.error(failStatus, `[3] ${reply} [${command}]`);
    return body === undefined ? new Reply(okStatus) : Reply.json(okStatus, body);
  }

  async function storageList(kind: keyof typeof storageDirs): Promise<Reply> {
    const dir = storageDirs[kind];
    const out = [];
    for (const name of (await readdir(dir)).sort()) {
      const file = join(dir, name);
      const description = kind === 'maps' ? 'managed map file' : kind === 'general' ? 'managed general use file' : 'managed SSL file';
      out.push({ description, file, storage_name: name, size: (await stat(file)).size });
    }
    return Reply.json(200, out);
  }

  async function multipartFile(call: Call): Promise<{ name: string; content: string } | Reply> {
    const ct = call.headers['content-type'] ?? '';
    if (!ct.startsWith('multipart/form-data')) return Reply.error(400, 'request Content-Type isn\'t multipart/form-data');
    try {
      const form = await new Request('http://double/', { method: 'POST', headers: { 'content-type': ct }, body: new Uint8Array(call.body) }).formData();
      const file = form.get('file_upload');
      if (!file || typeof file === 'string') return Reply.error(400, 'http: no such file');
      return { name: file.name, content: await file.text() };
    } catch (err) {
      return Reply.error(400, (err as Error).message);
    }
  }

  async function storageCreate(kind: keyof typeof storageDirs, call: Call): Promise<Reply> {
    const upload = await multipartFile(call);
    if (upload instanceof Reply) return upload;
    let name = storageName(upload.name);
    if (kind === 'maps' && !name.endsWith('.map')) name += '.map';
    const file = join(storageDirs[kind], name);
    if (await stat(file).then(() => true, () => false)) return Reply.error(409, `object already exists: file ${file} already exists`);
    if (kind === 'ssl') {
      const parts = pemParts(upload.content);
      if (parts.certs === 0) return Reply.error(500, 'failed to parse certificate');
      if (parts.keys === 0) return Reply.error(500, 'file should contain both certificate and private key');
    }
    await writeFile(file, upload.content, { mode: 0o644 });
    const description = kind === 'maps' ? 'managed but not loaded map file (no runtime ID)' : kind === 'general' ? 'managed general use file' : 'managed SSL file';
    const entry = { description, file, storage_name: name, size: Buffer.byteLength(upload.content) };
    if (kind === 'ssl' && call.query.get('skip_reload') !== 'true') return Reply.json(202, entry, { 'reload-id': agent.schedule() });
    return Reply.json(201, entry);
  }

  async function storageFile(kind: keyof typeof storageDirs, name: string): Promise<string | Reply> {
    const file = join(storageDirs[kind], storageName(name));
    return (await stat(file).then(() => true, () => false)) ? file : Reply.error(404, `missing object: file ${storageName(name)} doesn't exist in dir: ${storageDirs[kind]}`);
  }

  async function storageGet(kind: keyof typeof storageDirs, call: Call): Promise<Reply> {
    const file = await storageFile(kind, call.params['name'] ?? '');
    if (file instanceof Reply) return file;
    if (kind === 'ssl') return Reply.json(200, { file, storage_name: basename(file), description: 'managed SSL file' });
    return new Reply(200, await readFile(file, 'utf8'), { 'content-type': 'application/octet-stream' });
  }

  async function storageReplace(kind: keyof typeof storageDirs, call: Call): Promise<Reply> {
    const file = await storageFile(kind, call.params['name'] ?? '');
    if (file instanceof Reply) return file;
    let content: string;
    if (kind === 'general') {
      const upload = await multipartFile(call);
      if (upload instanceof Reply) return upload;
      content = upload.content;
    } else {
      content = call.body.toString('utf8');
    }
    if (kind === 'ssl') {
      const parts = pemParts(content);
      if (parts.certs === 0 || parts.keys === 0) return Reply.error(500, 'file should contain both certificate and private key');
    }
    await writeFile(`${file}.tmp`, content, { mode: 0o644 });
    await rename(`${file}.tmp`, file);
    const skip = call.query.get('skip_reload') === 'true';
    const entry = { file, storage_name: basename(file), description: 'managed SSL file' };
    if (skip) return kind === 'ssl' ? Reply.json(200, entry) : new Reply(204);
    if (call.query.get('force_reload') === 'true') {
      const result = await agent.force();
      if (!result.ok) return Reply.error(400, `Reload failed: ${result.message}`);
      return kind === 'ssl' ? Reply.json(200, entry) : new Reply(204);
    }
    const id = agent.schedule();
    return kind === 'ssl' ? Reply.json(202, entry, { 'reload-id': id }) : new Reply(202, '', { 'reload-id': id });
  }

  async function storageDelete(kind: keyof typeof storageDirs, call: Call): Promise<Reply> {
    const file = await storageFile(kind, call.params['name'] ?? '');
    if (file instanceof Reply) return file;
    const lines = (await currentConfig()).split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!.trim();
      if (line.includes(file) && !line.startsWith('#')) {
        return Reply.error(409, `rejecting attempt to delete file ${file} referenced in haproxy conf at line ${i - 1}: ${line}`);
      }
    }
    await unlink(file);
    return new Reply(204);
  }

  const S = '/v3/services/haproxy';
  const routes: Route[] = [
    { method: 'GET', pattern: /^\/v3\/info$/, handle: async () => Reply.json(200, { api: { version: apiVersion, build_date: '2026-01-01T00:00:00.000Z' }, system: {} }) },
    { method: 'GET', pattern: /^\/v3\/health$/, handle: async () => Reply.json(200, { haproxy: haproxy.running ? 'up' : 'down' }) },
    { method: 'GET', pattern: new RegExp(`^${S}/configuration/version$`), handle: async () => Reply.json(200, versionOf(await currentConfig())) },
    { method: 'GET', pattern: new RegExp(`^${S}/configuration/raw$`), handle: async () => Reply.text(200, await currentConfig()) },
    { method: 'POST', pattern: new RegExp(`^${S}/configuration/raw$`), handle: postRaw },
    { method: 'GET', pattern: new RegExp(`^${S}/reloads$`), handle: async () => Reply.json(200, agent.list()) },
    {
      method: 'GET',
      pattern: new RegExp(`^${S}/reloads/(?<id>[^/]+)$`),
      handle: async (c) => {
        const record = agent.get(c.params['id']!);
        return record ? Reply.json(200, record) : Reply.error(404, `Reload with ID ${c.params['id']} does not exist`);
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^${S}/runtime/backends/(?<backend>[^/]+)/servers$`),
      handle: async (c) => {
        const rows = await serverRows(c.params['backend']!);
        return rows ? Reply.json(200, rows.map(runtimeServer)) : Reply.error(404, `backend ${c.params['backend']}: No such backend`);
      },
    },
    { method: 'POST', pattern: new RegExp(`^${S}/runtime/backends/(?<backend>[^/]+)/servers$`), handle: addServer },
    {
      method: 'GET',
      pattern: new RegExp(`^${S}/runtime/backends/(?<backend>[^/]+)/servers/(?<name>[^/]+)$`),
      handle: async (c) => {
        const row = await findServer(c.params['backend']!, c.params['name']!);
        return row instanceof Reply ? row : Reply.json(200, runtimeServer(row));
      },
    },
    { method: 'PUT', pattern: new RegExp(`^${S}/runtime/backends/(?<backend>[^/]+)/servers/(?<name>[^/]+)$`), handle: replaceServer },
    { method: 'DELETE', pattern: new RegExp(`^${S}/runtime/backends/(?<backend>[^/]+)/servers/(?<name>[^/]+)$`), handle: deleteServer },
    {
      method: 'GET',
      pattern: new RegExp(`^${S}/runtime/maps$`),
      handle: async () => {
        const text = await haproxy.runtime('show map');
        const maps = [...text.matchAll(/^(\d+) \((.*)\) /gm)].map((m) => ({ id: m[1], file: m[2], storage_name: m[2]!.startsWith(`${storageDirs.maps}/`) ? basename(m[2]!) : undefined }));
        return Reply.json(200, maps.filter((m) => m.storage_name !== undefined));
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^${S}/runtime/maps/(?<name>[^/]+)/entries$`),
      handle: async (c) => {
        const entries = await mapEntries(mapPath(c.params['name']!));
        return entries ? Reply.json(200, entries) : Reply.error(404, `map ${c.params['name']} not found`);
      },
    },
    {
      method: 'POST',
      pattern: new RegExp(`^${S}/runtime/maps/(?<name>[^/]+)/entries$`),
      handle: async (c) => {
        const body = jsonBody(c);
        if (body instanceof Reply) return body;
        const { key, value } = body;
        if (typeof key !== 'string' || typeof value !== 'string') return Reply.error(422, 'key and value in body are required');
        const path = mapPath(c.params['name']!);
        const entries = await mapEntries(path);
        if (!entries) return Reply.error(404, `map ${c.params['name']} not found`);
        if (entries.some((e) => e.key === key)) return Reply.error(409, 'object already exists');
        return mapCommand(`add map ${path} ${key} ${value}`, 201, { key, value }, 400);
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^${S}/runtime/maps/(?<name>[^/]+)/entries/(?<id>[^/]+)$`),
      handle: async (c) => {
        const entry = (await mapEntries(mapPath(c.params['name']!)))?.find((e) => e.key === c.params['id']);
        return entry ? Reply.json(200, { key: entry.key, value: entry.value }) : new Reply(404);
      },
    },
    {
      method: 'PUT',
      pattern: new RegExp(`^${S}/runtime/maps/(?<name>[^/]+)/entries/(?<id>[^/]+)$`),
      handle: async (c) => {
        const body = jsonBody(c);
        if (body instanceof Reply) return body;
        if (typeof body['value'] !== 'string') return Reply.error(422, 'value in body is required');
        const path = mapPath(c.params['name']!);
        const set = await mapCommand(`set map ${path} ${c.params['id']} ${body['value']}`, 200, undefined, 404);
        if (set.status !== 200) return set;
        const entry = (await mapEntries(path))?.find((e) => e.key === c.params['id']);
        return entry ? Reply.json(200, { key: entry.key, value: entry.value }) : new Reply(404);
      },
    },
    {
      method: 'DELETE',
      pattern: new RegExp(`^${S}/runtime/maps/(?<name>[^/]+)/entries/(?<id>[^/]+)$`),
      handle: async (c) => mapCommand(`del map ${mapPath(c.params['name']!)} ${c.params['id']}`, 204, undefined, 404),
    },
  ];
  const kinds: [string, keyof typeof storageDirs][] = [['maps', 'maps'], ['general', 'general'], ['ssl_certificates', 'ssl']];
  for (const [segment, kind] of kinds) {
    routes.push(
      { method: 'GET', pattern: new RegExp(`^${S}/storage/${segment}$`), handle: () => storageList(kind) },
      { method: 'POST', pattern: new RegExp(`^${S}/storage/${segment}$`), handle: (c) => storageCreate(kind, c) },
      { method: 'GET', pattern: new RegExp(`^${S}/storage/${segment}/(?<name>[^/]+)$`), handle: (c) => storageGet(kind, c) },
      { method: 'PUT', pattern: new RegExp(`^${S}/storage/${segment}/(?<name>[^/]+)$`), handle: (c) => storageReplace(kind, c) },
      { method: 'DELETE', pattern: new RegExp(`^${S}/storage/${segment}/(?<name>[^/]+)$`), handle: (c) => storageDelete(kind, c) },
    );
  }

  function authorized(req: IncomingMessage): boolean {
    if (options.tls?.ca) return true; // the real API skips Basic auth when it checks client certificates
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Basic ')) return false;
    const [user, ...rest] = Buffer.from(header.slice(6), 'base64').toString('utf8').split(':');
    return user === username && rest.join(':') === password;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    const method = (req.method ?? 'GET').toUpperCase();
    const rawPath = url.pathname.replace(/\/+$/, '') || '/';
    const record: RecordedRequest = { method, path: rawPath, query: url.search, status: 0 };
    requests.push(record);
    const body = await readBody(req);
    for (const fault of faults) {
      if (fault.times <= 0 || !matches(fault.match, method, rawPath)) continue;
      fault.times--;
      if (fault.kind === 'slow') await sleep(fault.ms ?? 0);
      if (fault.kind === 'drop') {
        record.status = 'dropped';
        req.socket.destroy();
        return;
      }
      if (fault.kind === 'status') {
        return send(res, record, Reply.error(fault.status ?? 500, `injected fault: ${fault.status ?? 500}`));
      }
    }
    if (!authorized(req)) {
      return send(res, record, new Reply(401, `${JSON.stringify({ code: 401, message: 'unauthorized' })}\n`, { 'content-type': 'application/json', 'www-authenticate': 'Basic realm="API"' }));
    }
    let pathMatched = false;
    for (const route of routes) {
      const m = route.pattern.exec(rawPath);
      if (!m) continue;
      pathMatched = true;
      if (route.method !== method) continue;
      const params: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.groups ?? {})) params[k] = decodeURIComponent(v);
      try {
        return send(res, record, await route.handle({ method, path: rawPath, params, query: url.searchParams, headers: req.headers, body }));
      } catch (err) {
        return send(res, record, Reply.error(500, (err as Error).message));
      }
    }
    if (pathMatched) {
      const allow = routes.filter((r) => r.pattern.test(rawPath)).map((r) => r.method);
      return send(res, record, Reply.error(405, `method ${method} is not allowed for path ${rawPath}`), { allow: [...new Set(allow)].join(', ') });
    }
    return send(res, record, Reply.error(404, `path ${rawPath} was not found`));
  }

  async function send(res: ServerResponse, record: RecordedRequest, reply: Reply, extra: Record<string, string> = {}): Promise<void> {
    record.status = reply.status;
    const headers: Record<string, string> = { ...reply.headers, ...extra };
    const version = versionOf(await currentConfig().catch(() => ''));
    headers['configuration-version'] = String(version);
    // Go canonicalises header names: the real API sends Reload-Id.
    if (headers['reload-id'] !== undefined) {
      headers['Reload-Id'] = headers['reload-id'];
      delete headers['reload-id'];
    }
    res.writeHead(reply.status, headers);
    res.end(reply.body);
  }

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 500, message: (err as Error).message }));
    });
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key, ...(options.tls.ca ? { ca: options.tls.ca, requestCert: true, rejectUnauthorized: true } : {}) }, listener)
    : createHttpServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the double has no address');
  const url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${address.port}`;
  const listening = () => server.listening;
  const closeListener = async () => {
    if (!server.listening) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  const listenAgain = async () => {
    if (server.listening) return;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  };

  return {
    url,
    root,
    configFile,
    storageDirs,
    haproxy,
    requests,
    faults: {
      status: (status, match = {}, times = 1) => void faults.push({ kind: 'status', status, match, times }),
      slow: (ms, match = {}, times = Infinity) => void faults.push({ kind: 'slow', ms, match, times }),
      drop: (match = {}, times = 1) => void faults.push({ kind: 'drop', match, times }),
      conflict: (times = 1) => void (conflicts += times),
      failReloads: (times = 1) => void (failingReloads += times),
      refuse: closeListener,
      accept: listenAgain,
      clear: async () => {
        faults.length = 0;
        conflicts = 0;
        failingReloads = 0;
        await listenAgain();
      },
    },
    async reloadCounts() {
      const proc = await haproxy.showProc();
      return { reloads: proc.reloads, failed: proc.failedReloads };
    },
    async version() {
      return versionOf(await currentConfig());
    },
    async foreignChange(extra, reload = true) {
      await serialized(() => simulateForeignCommit(extra));
      if (reload) {
        agent.schedule();
        await agent.idle();
      }
    },
    reloadsSettled: () => agent.idle(),
    async stop() {
      await agent.stop();
      if (listening()) await closeListener();
      await haproxy.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
