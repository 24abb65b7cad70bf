/**
 * The servers a fixture can put behind its Services, so that a request goes
 * all the way through haproxy to something real: timeouts, retries, HTTP/2 to
 * the backend, WebSocket, gRPC, TLS to the backend and TLS passthrough, TCP.
 * Each listens on 127.0.0.1 on a port of its own and says who it is.
 *
 * - `http`: HTTP/1.1. Answers with its name (`x-haprx-server`), the URI it got
 *   (`x-haprx-uri`), its protocol (`x-haprx-protocol`), and the request headers
 *   as the body, in the stub backends' format. Query parameters steer it:
 *   `delay=<ms>` waits first, `status=<code>` answers with that status,
 *   `header=<name>:<value>` adds a response header, and
 *   `fail=<code>|reset&times=<n>&key=<k>` fails the first n requests that carry
 *   key k (with that status, or by resetting the connection). An `Upgrade:
 *   websocket` request is accepted, and each text message is sent back as
 *   `<name> <message>`.
 * - `h2c`: the same over HTTP/2 without TLS (prior knowledge); a gRPC request
 *   (content-type application/grpc) gets its message back inside a JSON text
 *   `{server, path, headers, message}`, with grpc-status 0.
 * - `https`: `http` over TLS with the fixture's certificate; `x-haprx-sni` is
 *   the server name the client asked for, `x-haprx-tls` the TLS version and
 *   cipher, and `x-haprx-client` the CN of the client certificate it was shown
 *   (with `clientCa`, only clients with a certificate that CA signed are served).
 * - `h2`: `h2c` over TLS (ALPN h2 only), as `https` for its certificates.
 * - `tcp`: each chunk read is sent back as `<name> <chunk>`.
 *
 * An `http` or `https` server with `auth` is an external authentication service
 * instead: it answers 200 when the request has the `allow` header value, 403 for
 * the `forbid` one, 401 (with `WWW-Authenticate`) otherwise, adds `auth.headers`
 * to every answer, and tells what it got: `x-auth-original-url`, `x-auth-method`,
 * `x-auth-redirect` (from X-Original-URL, the method, X-Auth-Request-Redirect).
 */
import { createHash } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer as createHttpServer } from 'node:http';
import { type Http2ServerRequest, type Http2ServerResponse, createSecureServer as createH2Server, createServer as createH2cServer } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import { type Server, type Socket, createServer as createTcpServer } from 'node:net';
import type { TLSSocket } from 'node:tls';

export type ServerProtocol = 'http' | 'h2c' | 'https' | 'h2' | 'tcp';
export const SERVER_PROTOCOLS: readonly ServerProtocol[] = ['http', 'h2c', 'https', 'h2', 'tcp'];

/** An auth service's rule: a request header and the value that decides. */
export interface HeaderRule {
  header: string;
  value: string;
}

export interface AuthBehaviour {
  allow?: HeaderRule;
  forbid?: HeaderRule;
  headers?: Record<string, string>;
}

export interface ServerSpec {
  name: string;
  protocol: ServerProtocol;
  /** For https and h2: the certificate chain and key it presents (PEM). */
  tls?: { cert: string; key: string };
  /** For https and h2: serve only clients whose certificate this CA (PEM) signed. */
  clientCa?: string;
  /** For http and https: answer as an external authentication service. */
  auth?: AuthBehaviour;
}

export interface RunningServer {
  name: string;
  port: number;
  /** Requests received and not answered yet. */
  busy(): number;
  close(): Promise<void>;
}

/** The longest delay a request may ask for: a fixture never waits longer than this on one server. */
const MAX_DELAY_MS = 10_000;
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export async function startServer(spec: ServerSpec): Promise<RunningServer> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  // Failures still owed, by key: `fail=…&times=n&key=k` counts down per key.
  const owed = new Map<string, number>();
  let busy = 0;
  let server: Server;
  const tls = { cert: spec.tls?.cert, key: spec.tls?.key, ...(spec.clientCa !== undefined && { ca: spec.clientCa, requestCert: true, rejectUnauthorized: true }) };
  if (spec.protocol === 'tcp') {
    server = createTcpServer((socket) => socket.on('data', (chunk) => socket.write(`${spec.name} ${chunk.toString('utf8')}`)));
  } else if (spec.protocol === 'h2c' || spec.protocol === 'h2') {
    const handler = (req: Http2ServerRequest, res: Http2ServerResponse) => counted(req, res);
    server = (spec.protocol === 'h2' ? createH2Server({ ...tls, allowHTTP1: false }, handler) : createH2cServer(handler)) as unknown as Server;
  } else {
    const handler = (req: IncomingMessage, res: ServerResponse) => counted(req, res);
    server = spec.protocol === 'https' ? createHttpsServer(tls, handler) : createHttpServer(handler);
    server.on('upgrade', (req: IncomingMessage, socket: Socket) => websocket(spec.name, req, socket));
  }
  function counted(req: AnyRequest, res: AnyResponse): void {
    busy++;
    res.once('close', () => busy--);
    answer(spec, req, res, owed, timers);
  }
  // Every connection, so that close() never waits on a keep-alive.
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error(`server ${spec.name} has no address`);
  return {
    name: spec.name,
    port: address.port,
    busy: () => busy,
    close: () =>
      new Promise((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

type AnyRequest = IncomingMessage | Http2ServerRequest;
type AnyResponse = ServerResponse | Http2ServerResponse;

function answer(spec: ServerSpec, req: AnyRequest, res: AnyResponse, owed: Map<string, number>, timers: Set<NodeJS.Timeout>): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    const params = url.searchParams;
    const respond = () => {
      if (String(req.headers['content-type'] ?? '').startsWith('application/grpc')) return grpcEcho(spec.name, req, res as Http2ServerResponse, Buffer.concat(chunks));
      if (spec.auth) return authAnswer(spec.name, spec.auth, req, res);
      const failure = owedFailure(params, owed);
      if (failure === 'reset') return req.socket.destroy();
      const status = failure ?? Number(params.get('status') ?? 200);
      res.setHeader('content-type', 'text/plain');
      res.setHeader('x-haprx-server', spec.name);
      res.setHeader('x-haprx-uri', req.url ?? '');
      res.setHeader('x-haprx-protocol', req.httpVersion);
      const sni = (req.socket as TLSSocket).servername;
      if (typeof sni === 'string') res.setHeader('x-haprx-sni', sni);
      for (const [k, v] of Object.entries(tlsFacts(req))) res.setHeader(k, v);
      for (const h of params.getAll('header')) {
        const colon = h.indexOf(':');
        if (colon > 0) res.setHeader(h.slice(0, colon), h.slice(colon + 1));
      }
      res.statusCode = Number.isInteger(status) && status >= 200 && status <= 599 ? status : 200;
      res.end(headerLines(req));
    };
    const delay = Math.min(Number(params.get('delay') ?? 0) || 0, MAX_DELAY_MS);
    if (delay <= 0) return respond();
    const timer = setTimeout(() => {
      timers.delete(timer);
      respond();
    }, delay);
    timers.add(timer);
  });
}

/** Over TLS: the version and cipher, and the CN of the client certificate, as response headers. */
function tlsFacts(req: AnyRequest): Record<string, string> {
  const socket = req.socket as TLSSocket;
  if (socket.encrypted !== true) return {};
  const client = socket.getPeerCertificate?.()?.subject?.CN;
  return { 'x-haprx-tls': `${socket.getProtocol?.() ?? ''} ${socket.getCipher?.()?.standardName ?? ''}`, ...(typeof client === 'string' && { 'x-haprx-client': client }) };
}

/** An external authentication service's answer (see `auth` above). */
function authAnswer(name: string, auth: AuthBehaviour, req: AnyRequest, res: AnyResponse): void {
  const has = (rule?: HeaderRule) => rule !== undefined && req.headers[rule.header.toLowerCase()] === rule.value;
  const status = has(auth.allow) ? 200 : has(auth.forbid) ? 403 : 401;
  const headers: Record<string, string> = {
    'x-haprx-server': name,
    ...(auth.headers ?? {}),
    'x-auth-original-url': String(req.headers['x-original-url'] ?? ''),
    'x-auth-method': req.method ?? '',
    'x-auth-redirect': String(req.headers['x-auth-request-redirect'] ?? ''),
    ...(status === 401 && { 'www-authenticate': 'Bearer realm="fixture"' }),
  };
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.statusCode = status;
  res.end();
}

/** The failure this request is owed, if any: a status, or 'reset'. */
function owedFailure(params: URLSearchParams, owed: Map<string, number>): number | 'reset' | undefined {
  const fail = params.get('fail');
  if (fail === null) return undefined;
  const key = params.get('key') ?? '';
  const left = owed.get(key) ?? Math.max(0, Math.min(Number(params.get('times') ?? 1) || 0, 100));
  if (left <= 0) return undefined;
  owed.set(key, left - 1);
  return fail === 'reset' ? 'reset' : Number(fail);
}

/** Request headers as the stub backends write them: `name: value`, joined by an encoded CRLF. */
function headerLines(req: AnyRequest): string {
  const lines: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.startsWith(':')) continue;
    lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  }
  return lines.join('%0D%0A');
}

/** A unary gRPC answer: the request's message and what arrived with it, as JSON, framed as one gRPC message. */
function grpcEcho(name: string, req: AnyRequest, res: Http2ServerResponse, body: Buffer): void {
  const message = body.length >= 5 ? body.subarray(5, 5 + body.readUInt32BE(1)).toString('utf8') : '';
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (!k.startsWith(':') && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
  const payload = Buffer.from(JSON.stringify({ server: name, path: req.url, headers, message }), 'utf8');
  const frame = Buffer.alloc(5 + payload.length);
  frame.writeUInt32BE(payload.length, 1);
  payload.copy(frame, 5);
  res.writeHead(200, { 'content-type': 'application/grpc', 'x-haprx-server': name });
  res.addTrailers({ 'grpc-status': '0', 'grpc-message': 'OK' });
  res.end(frame);
}

/** A WebSocket server side, just enough for an echo: the handshake, then text frames back as `<name> <text>`. */
function websocket(name: string, req: IncomingMessage, socket: Socket): void {
  const key = req.headers['sec-websocket-key'];
  if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket' || typeof key !== 'string') {
    socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
    return;
  }
  const accept = createHash('sha1').update(key + WEBSOCKET_GUID).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\nx-haprx-server: ${name}\r\n\r\n`);
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      const frame = readFrame(pending);
      if (!frame) return;
      pending = pending.subarray(frame.size);
      if (frame.opcode === 0x8) return void socket.end(encodeFrame(0x8, Buffer.alloc(0)));
      if (frame.opcode === 0x1) socket.write(encodeFrame(0x1, Buffer.from(`${name} ${frame.payload.toString('utf8')}`)));
    }
  });
}

/** One WebSocket frame from the start of `data` (masked or not), or undefined until it is complete. */
export function readFrame(data: Buffer): { opcode: number; payload: Buffer; size: number } | undefined {
  if (data.length < 2) return undefined;
  const masked = (data[1]! & 0x80) !== 0;
  let length = data[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (data.length < 4) return undefined;
    length = data.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (data.length < 10) return undefined;
    length = Number(data.readBigUInt64BE(2));
    offset = 10;
  }
  const mask = masked ? data.subarray(offset, offset + 4) : undefined;
  if (masked) offset += 4;
  if (data.length < offset + length) return undefined;
  const payload = Buffer.from(data.subarray(offset, offset + length));
  if (mask) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  return { opcode: data[0]! & 0x0f, payload, size: offset + length };
}

/** One final WebSocket frame; clients must mask theirs (`mask`), servers must not. */
export function encodeFrame(opcode: number, payload: Buffer, mask?: Buffer): Buffer {
  const head = payload.length < 126 ? Buffer.from([0x80 | opcode, payload.length]) : Buffer.from([0x80 | opcode, 126, payload.length >> 8, payload.length & 0xff]);
  if (!mask) return Buffer.concat([head, payload]);
  head[1]! |= 0x80;
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= mask[i % 4]!;
  return Buffer.concat([head, mask, body]);
}
