/**
 * How a fixture talks to haproxy: HTTP/1.1 (plain or TLS, with a client
 * certificate or a body, absolute-form URIs too), a WebSocket echo, a unary gRPC
 * call (HTTP/2 with prior knowledge, or over TLS with ALPN h2), and a TCP
 * exchange; a request repeated to count where its answers came from, and a
 * request sent while copies of it are still being answered. Every exchange is
 * bounded by a timeout and resolves with what came back; only a failure to
 * exchange at all rejects.
 */
import { randomBytes } from 'node:crypto';
import { type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { connect as tcpConnect } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { encodeFrame, readFrame } from './fixture-servers.ts';

const TIMEOUT_MS = 5_000;

export interface HttpExchange {
  host?: string;
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  /** Connect with TLS. */
  tls?: boolean;
  /** The TLS server name; defaults to the host. */
  sni?: string;
  /** Over TLS, this client certificate and key (PEM). */
  client?: { cert: string; key: string };
  /** A request body; its Content-Length is set. */
  body?: string;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The CN of the certificate presented, over TLS. */
  certificate?: string;
  /** What the server sent back over an upgraded connection, TCP or gRPC. */
  reply?: string;
}

const serverName = (req: HttpExchange) => req.sni ?? (req.host ?? 'localhost').split(':')[0];
const peerCN = (socket: TLSSocket) => {
  const cn = socket.getPeerCertificate?.()?.subject?.CN;
  return typeof cn === 'string' ? cn : undefined;
};

/** One HTTP/1.1 request; `path` may be absolute-form (`http://host`), as a proxy would get it. */
export function sendHttp(port: number, req: HttpExchange): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: req.host ?? 'localhost', ...(req.body !== undefined && { 'content-length': String(Buffer.byteLength(req.body)) }), ...(req.headers ?? {}) };
    const options = { host: '127.0.0.1', port, path: req.path ?? '/', method: req.method ?? 'GET', headers, agent: false as const };
    const onReply = (res: IncomingMessage) => {
      let body = '';
      const certificate = req.tls ? peerCN(res.socket as TLSSocket) : undefined;
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, certificate }));
    };
    const r = req.tls ? httpsRequest({ ...options, servername: serverName(req), rejectUnauthorized: false, ...(req.client && { cert: req.client.cert, key: req.client.key }) }, onReply) : httpRequest(options, onReply);
    r.setTimeout(TIMEOUT_MS, () => r.destroy(new Error('request timed out')));
    r.on('error', reject);
    r.end(req.body);
  });
}

/** A WebSocket upgrade, then one text message; `reply` is the first text message back. */
export function sendWebSocket(port: number, req: HttpExchange, message: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers = { host: req.host ?? 'localhost', connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64'), ...(req.headers ?? {}) };
    const r = httpRequest({ host: '127.0.0.1', port, path: req.path ?? '/', headers, agent: false });
    const timer = setTimeout(() => r.destroy(new Error('WebSocket exchange timed out')), TIMEOUT_MS);
    const done = (value: Reply) => {
      clearTimeout(timer);
      resolve(value);
    };
    r.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // Not upgraded: the answer is an ordinary response.
    r.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    r.on('upgrade', (res, socket, head) => {
      let pending = Buffer.from(head);
      socket.write(encodeFrame(0x1, Buffer.from(message), randomBytes(4)));
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        const frame = readFrame(pending);
        if (!frame) return;
        socket.end(encodeFrame(0x8, Buffer.alloc(0), randomBytes(4)));
        done({ status: res.statusCode ?? 0, headers: res.headers, body: '', reply: frame.payload.toString('utf8') });
      });
      socket.on('error', () => undefined);
    });
    r.end();
  });
}

export interface GrpcExchange {
  host?: string;
  tls?: boolean;
  sni?: string;
  service: string;
  method: string;
  message?: string;
  metadata?: Record<string, string>;
}

export interface GrpcReply extends Reply {
  /** grpc-status from the trailers (or the headers of a trailers-only answer); undefined when not a gRPC answer. */
  grpcStatus?: number;
}

/** One unary gRPC call: the message framed as gRPC, over HTTP/2 (prior knowledge, or TLS with ALPN h2). */
export function sendGrpc(port: number, call: GrpcExchange): Promise<GrpcReply> {
  return new Promise((resolve, reject) => {
    const authority = call.host ?? 'localhost';
    const session = call.tls
      ? h2connect(`https://127.0.0.1:${port}`, { servername: call.sni ?? authority.split(':')[0], rejectUnauthorized: false })
      : h2connect(`http://127.0.0.1:${port}`);
    const timer = setTimeout(() => session.destroy(new Error('gRPC call timed out')), TIMEOUT_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      session.destroy();
      reject(err);
    };
    session.on('error', fail);
    const payload = Buffer.from(call.message ?? '', 'utf8');
    const frame = Buffer.alloc(5 + payload.length);
    frame.writeUInt32BE(payload.length, 1);
    payload.copy(frame, 5);
    const stream = session.request({
      ':method': 'POST',
      ':path': `/${call.service}/${call.method}`,
      ':authority': authority,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(call.metadata ?? {}),
    });
    let headers: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (headers = h as IncomingHttpHeaders));
    stream.on('trailers', (t) => (trailers = t as IncomingHttpHeaders));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', fail);
    stream.on('end', () => {
      clearTimeout(timer);
      session.close();
      const body = Buffer.concat(chunks);
      const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
      const reply = grpc && body.length >= 5 ? body.subarray(5, 5 + body.readUInt32BE(1)).toString('utf8') : undefined;
      const status = trailers['grpc-status'] ?? headers['grpc-status'];
      const certificate = call.tls && session.socket ? peerCN(session.socket as TLSSocket) : undefined;
      resolve({ status: Number(headers[':status'] ?? 0), headers: { ...headers, ...trailers }, body: grpc ? '' : body.toString('utf8'), reply, grpcStatus: status === undefined ? undefined : Number(status), certificate });
    });
    stream.end(frame);
  });
}

export interface TcpExchange {
  send: string;
  /** TLS first, with this server name (TLS passthrough to a TCP backend). */
  sni?: string;
}

/** Sends `send` over TCP (or TLS) and resolves with the first data that comes back ('' if the connection closes first). */
export function sendTcp(port: number, exchange: TcpExchange): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = exchange.sni === undefined
      ? tcpConnect(port, '127.0.0.1')
      : tlsConnect({ port, host: '127.0.0.1', servername: exchange.sni, rejectUnauthorized: false });
    const timer = setTimeout(() => socket.destroy(new Error('TCP exchange timed out')), TIMEOUT_MS);
    let certificate: string | undefined;
    let settled = false;
    const finish = (reply: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: 0, headers: {}, body: '', reply, certificate });
    };
    socket.once(exchange.sni === undefined ? 'connect' : 'secureConnect', () => {
      if (exchange.sni !== undefined) certificate = peerCN(socket as TLSSocket);
      socket.write(exchange.send);
    });
    socket.on('data', (c: Buffer) => finish(c.toString('utf8')));
    socket.on('end', () => finish(''));
    socket.on('close', () => finish(''));
    socket.on('error', (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** At most this many repeats of one request. */
export const MAX_REPEAT = 2_000;
/** At most this many requests held in flight. */
export const MAX_IN_FLIGHT = 50;

export interface Counts {
  backends: Map<string, number>;
  statuses: Map<string, number>;
  /** By the fixture server that answered (x-haprx-server). */
  servers: Map<string, number>;
}

/** Sends `once` `times` times, one after the other, and counts the answers by backend (from `backendHeader`), status and fixture server. */
export async function countAnswers(times: number, once: () => Promise<Reply>, backendHeader: string): Promise<Counts> {
  if (!Number.isInteger(times) || times < 1 || times > MAX_REPEAT) throw new Error(`repeat must be a whole number from 1 to ${MAX_REPEAT}`);
  const counts: Counts = { backends: new Map(), statuses: new Map(), servers: new Map() };
  const add = (map: Map<string, number>, key: unknown) => map.set(String(key ?? '(none)'), (map.get(String(key ?? '(none)')) ?? 0) + 1);
  for (let i = 0; i < times; i++) {
    const reply = await once();
    add(counts.backends, reply.headers[backendHeader]);
    add(counts.statuses, reply.status);
    add(counts.servers, reply.headers['x-haprx-server']);
  }
  return counts;
}

/** Problems with counts against `[least, most]` bounds; empty when every count is within its bounds. */
export function outOfBounds(what: string, counts: ReadonlyMap<string, number>, bounds: Record<string, [number, number]> | undefined): string[] {
  return Object.entries(bounds ?? {}).flatMap(([key, [least, most]]) => {
    const n = counts.get(key) ?? 0;
    return n >= least && n <= most ? [] : [`${what} ${key}: ${n} answers, expected ${least} to ${most}`];
  });
}

/**
 * Sends `count` copies of a request and, once `busy()` says the fixture servers hold
 * that many unanswered, runs `during` (bounded wait); then waits for the copies.
 */
export async function whileInFlight<T>(count: number, send: () => Promise<unknown>, busy: () => number, during: () => Promise<T>): Promise<T> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_IN_FLIGHT) throw new Error(`inFlight must be a whole number from 1 to ${MAX_IN_FLIGHT}`);
  const held = Array.from({ length: count }, () => send().catch(() => undefined));
  try {
    const deadline = Date.now() + 5_000;
    while (busy() < count) {
      if (Date.now() > deadline) throw new Error(`the fixture servers never held ${count} requests at once (a slow server, delayMs, must answer them)`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return await during();
  } finally {
    await Promise.all(held);
  }
}
