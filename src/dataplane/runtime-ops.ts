/**
 * Runtime operations of a deployment plan as Data Plane API v3 calls, or the
 * reasons the API cannot carry them (the target then reloads instead). Pure.
 *
 * What the API cannot do, and so what reloads on a Data Plane instance where a
 * local haproxy would not:
 * - add a server with `check` or `agent-check`: `add server` leaves checks
 *   disabled and the API has no `enable health` / `enable agent`;
 * - delete a server with an agent: the agent cannot be stopped first;
 * - add a server with a setting that has no field in the API's add-server model
 *   (see SERVER_FIELDS);
 * - replace a whole map atomically: the API's map PUT only adds entries below
 *   8 KiB, so a reordering would not be reproduced;
 * - map keys or values with blanks, `;`, backslashes or control characters: the
 *   API writes them into a runtime command unescaped.
 * Address and weight changes use the runtime server PUT from API 3.3.1 on, and
 * the `X-Runtime-Actions` header of the configuration POST before that.
 */
import { parseIpAddress } from '../haproxy/plan-config.ts';
import { groupOptions } from '../haproxy/plan-server-options.ts';
import type { MapAddOp, MapDelOp, MapSetOp, RuntimeOp, ServerAddOp } from '../haproxy/plan-types.ts';
import { type AuxRef, auxRefsInWords } from '../haproxy/aux-refs.ts';

export type ApiCall =
  | { kind: 'server-add'; op: RuntimeOp; backend: string; server: string; body: Record<string, unknown>; state: 'ready' | 'maint' | 'drain' }
  | { kind: 'server-put'; op: RuntimeOp; backend: string; server: string; body: Record<string, unknown> }
  | { kind: 'server-del'; op: RuntimeOp; backend: string; server: string }
  | { kind: 'map-add'; op: RuntimeOp; map: string; key: string; value: string }
  | { kind: 'map-set'; op: RuntimeOp; map: string; key: string; value: string }
  | { kind: 'map-del'; op: RuntimeOp; map: string; key: string };

export interface TranslateContext {
  /** The API's runtime server PUT sets weight and address/port (3.3.1 and later). */
  serverPutFields: boolean;
  /** The stored name of a map file (RenderedConfig name), if it is in maps storage. */
  mapName(map: string): string | undefined;
  /** The absolute path an auxiliary reference (`ssl/ca.pem`) has on the instance. */
  resolvePath(ref: AuxRef): string | undefined;
}

export type Translation =
  | { ok: true; calls: ApiCall[]; actions: string[] }
  | { ok: false; reasons: string[] };

type Field = { name: string; type: 'flag' | 'int' | 'time' | 'string' | 'path' };

/** The settings of `add server` that the API's RuntimeAddServer model carries, and their fields. */
export const SERVER_FIELDS: Readonly<Record<string, Field>> = {
  backup: { name: 'backup', type: 'flag' },
  ssl: { name: 'ssl', type: 'flag' },
  'send-proxy': { name: 'send-proxy', type: 'flag' },
  'send-proxy-v2': { name: 'send-proxy-v2', type: 'flag' },
  maxconn: { name: 'maxconn', type: 'int' },
  maxqueue: { name: 'maxqueue', type: 'int' },
  minconn: { name: 'minconn', type: 'int' },
  rise: { name: 'rise', type: 'int' },
  fall: { name: 'fall', type: 'int' },
  'error-limit': { name: 'error_limit', type: 'int' },
  'pool-max-conn': { name: 'pool_max_conn', type: 'int' },
  'pool-low-conn': { name: 'pool_low_conn', type: 'int' },
  inter: { name: 'inter', type: 'time' },
  fastinter: { name: 'fastinter', type: 'time' },
  downinter: { name: 'downinter', type: 'time' },
  slowstart: { name: 'slowstart', type: 'time' },
  'pool-purge-delay': { name: 'pool_purge_delay', type: 'time' },
  weight: { name: 'weight', type: 'int' },
  id: { name: 'id', type: 'string' },
  verify: { name: 'verify', type: 'string' },
  sni: { name: 'sni', type: 'string' },
  alpn: { name: 'alpn', type: 'string' },
  proto: { name: 'proto', type: 'string' },
  observe: { name: 'observe', type: 'string' },
  'on-error': { name: 'on-error', type: 'string' },
  port: { name: 'health_check_port', type: 'int' },
  addr: { name: 'health_check_address', type: 'string' },
  'ca-file': { name: 'ssl_cafile', type: 'path' },
  'crl-file': { name: 'crl_file', type: 'path' },
  crt: { name: 'ssl_certificate', type: 'path' },
};

// `no-X` words that undo X, which the model expresses by leaving the field out.
const UNDO: Readonly<Record<string, string>> = { 'no-backup': 'backup', 'no-send-proxy': 'send-proxy', 'no-send-proxy-v2': 'send-proxy-v2' };

const TIME_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** haproxy time (`2s`, `500`, `1m`) in whole milliseconds. */
export function timeMs(value: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(value);
  if (!m) return undefined;
  return Number(m[1]) * TIME_UNITS[m[2] ?? 'ms']!;
}

function serverBody(op: ServerAddOp, ctx: TranslateContext): { body: Record<string, unknown> } | { reason: string } {
  const where = `server ${op.backend}/${op.server}`;
  if (op.health) return { reason: `${where} has "check": the Data Plane API cannot enable health checks on a server it adds` };
  if (op.agent) return { reason: `${where} has "agent-check": the Data Plane API cannot enable the agent of a server it adds` };
  const ip = parseIpAddress(op.address);
  if (!ip) return { reason: `${where}: address "${op.address}" is not an IP literal` };
  const grouped = groupOptions(op.args);
  if ('error' in grouped) return { reason: `${where}: ${grouped.error}` };
  const body: Record<string, unknown> = { name: op.server, address: ip.host, ...(ip.port !== undefined ? { port: ip.port } : {}) };
  for (const group of grouped.groups) {
    const [word, value] = group;
    const undone = UNDO[word!];
    if (undone !== undefined) {
      delete body[SERVER_FIELDS[undone]!.name];
      continue;
    }
    const field = SERVER_FIELDS[word!];
    if (!field || group.length > (field.type === 'flag' ? 1 : 2)) {
      return { reason: `${where}: setting "${word}" has no field in the Data Plane API's runtime add server` };
    }
    switch (field.type) {
      case 'flag':
        body[field.name] = 'enabled';
        break;
      case 'int': {
        const n = Number(value);
        if (!/^\d+$/.test(value ?? '') || !Number.isSafeInteger(n)) return { reason: `${where}: "${word} ${value}" is not a whole number` };
        body[field.name] = n;
        break;
      }
      case 'time': {
        const ms = timeMs(value ?? '');
        if (ms === undefined) return { reason: `${where}: "${word} ${value}" is not a time in whole milliseconds` };
        body[field.name] = ms;
        break;
      }
      case 'string':
        body[field.name] = value;
        break;
      case 'path': {
        const ref = auxRefsInWords(['server', op.server, op.address, word!, value!]).find((r) => r.word === 4);
        const path = ref ? ctx.resolvePath({ ...ref, line: 0 }) : value;
        if (path === undefined) return { reason: `${where}: "${word} ${value}" names no file stored on the instance` };
        body[field.name] = path;
        break;
      }
    }
  }
  return { body };
}

// The API writes keys and values into `add/set/del map` commands as they are.
const UNSAFE_MAP_WORD = /[\s;\\]/;
const hasControl = (s: string) => [...s].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f');
const unsafe = (s: string) => UNSAFE_MAP_WORD.test(s) || hasControl(s);

function mapProblem(op: MapAddOp | MapSetOp | MapDelOp): string | undefined {
  if (op.key === '' || unsafe(op.key)) return `map ${op.map}: key ${JSON.stringify(op.key)} cannot go through the Data Plane API unescaped`;
  if (op.kind !== 'map-del' && (op.value === '' || unsafe(op.value))) {
    return `map ${op.map}: the value of ${JSON.stringify(op.key)} cannot go through the Data Plane API unescaped`;
  }
  return undefined;
}

/** The API calls for a runtime plan, in the plan's order; X-Runtime-Actions for what old API versions cannot PUT. */
export function translateOps(ops: readonly RuntimeOp[], ctx: TranslateContext): Translation {
  const calls: ApiCall[] = [];
  const actions: string[] = [];
  const reasons: string[] = [];
  // A map loaded under two spellings yields one operation per spelling; on the instance both are one map.
  const seen = new Set<string>();
  for (const op of ops) {
    switch (op.kind) {
      case 'server-add': {
        const result = serverBody(op, ctx);
        if ('reason' in result) reasons.push(result.reason);
        else calls.push({ kind: 'server-add', op, backend: op.backend, server: op.server, body: result.body, state: op.state });
        break;
      }
      case 'server-addr':
        if (ctx.serverPutFields) calls.push({ kind: 'server-put', op, backend: op.backend, server: op.server, body: { address: op.host, port: op.port } });
        else actions.push(`SetServerAddr ${op.backend} ${op.server} ${op.host} ${op.port}`);
        break;
      case 'server-weight':
        if (ctx.serverPutFields) calls.push({ kind: 'server-put', op, backend: op.backend, server: op.server, body: { weight: op.weight } });
        else actions.push(`SetServerWeight ${op.backend} ${op.server} ${op.weight}`);
        break;
      case 'server-state':
        calls.push({ kind: 'server-put', op, backend: op.backend, server: op.server, body: { admin_state: op.state } });
        break;
      case 'server-del':
        if (op.agent) reasons.push(`server ${op.backend}/${op.server} has an agent, which the Data Plane API cannot stop before deleting the server`);
        else calls.push({ kind: 'server-del', op, backend: op.backend, server: op.server });
        break;
      case 'map-add':
      case 'map-set':
      case 'map-del': {
        const map = ctx.mapName(op.map);
        const problem = map === undefined ? `map ${op.map} is not in maps storage` : mapProblem(op);
        if (problem) {
          reasons.push(problem);
          break;
        }
        const key = `${op.kind}\u0000${op.map}\u0000${op.key}`;
        if (seen.has(key)) break;
        seen.add(key);
        if (op.kind === 'map-del') calls.push({ kind: 'map-del', op, map: map!, key: op.key });
        else calls.push({ kind: op.kind, op, map: map!, key: op.key, value: op.value });
        break;
      }
      case 'map-replace':
        reasons.push(`map ${op.map} needs its entries replaced in one step, which the Data Plane API only does for maps above 8 KiB`);
        break;
      case 'cert-set':
        // Its storage replaces a loaded certificate at runtime where it can; the reload path uploads it.
        reasons.push(`certificate ${op.cert} is replaced through the Data Plane API's storage, with the configuration`);
        break;
      case 'cert-new':
      case 'cert-del':
        reasons.push(`certificate ${op.cert} is ${op.kind === 'cert-new' ? 'uploaded to' : 'removed from'} the Data Plane API's storage, with the configuration`);
        break;
      case 'crt-list-add':
      case 'crt-list-del':
        reasons.push(`crt-list ${op.list} is replaced through the Data Plane API's storage, with the configuration`);
        break;
      default: {
        // Every kind of operation is handled above: a new one must say how it goes, or why it reloads.
        const unknown: never = op;
        reasons.push(`operation ${(unknown as RuntimeOp).kind} has no Data Plane API call`);
      }
    }
  }
  return reasons.length > 0 ? { ok: false, reasons } : { ok: true, calls, actions };
}
