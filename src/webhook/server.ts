import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Server, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ServingCertificate } from './certificate.ts';
import { type AdmissionRequest, type Verdict, admissionResponse, parseAdmissionReview } from './review.ts';

/** The path the ValidatingWebhookConfiguration calls. */
export const WEBHOOK_PATH = '/validate';

export interface WebhookServerOptions {
  host: string;
  port: number;
  review(request: AdmissionRequest): Verdict;
  /** What happened to a request, for the log; never the object's content. */
  onReviewed?(outcome: { uid: string; resource: string; operation: string; allowed: boolean; durationMs: number; message?: string }): void;
  onError?(message: string): void;
  /** Bodies above this are refused unread (413): an object and its old version fit well within. */
  maxBodyBytes?: number;
}

export interface WebhookServer {
  readonly port: number;
  /** Serves new handshakes with this certificate: rotation without a restart. */
  setCertificate(certificate: ServingCertificate): void;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 8 * 1024 * 1024;

/**
 * The webhook's HTTPS server: POST /validate with an AdmissionReview v1 as JSON, and
 * nothing else. Anyone who reaches the port can call it, so it reads the body with a
 * size bound, parses it as data, and hands the checked request to `review`, which
 * only renders; a failure inside answers "allowed" with a warning (a broken webhook
 * must not block the cluster) and is reported through onError.
 */
export function startWebhookServer(options: WebhookServerOptions, certificate: ServingCertificate): Promise<WebhookServer> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, body: unknown) => {
      if (res.headersSent) return;
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url ?? '/', 'https://webhook');
    if (url.pathname !== WEBHOOK_PATH) return send(404, { error: `no such path: ${url.pathname}` });
    if (req.method !== 'POST') return send(405, { error: 'only POST' });
    if (!/^application\/json(\s*;|$)/i.test(req.headers['content-type'] ?? '')) return send(415, { error: 'expected application/json' });
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > maxBody) {
      send(413, { error: `body larger than ${maxBody} bytes` });
      return void req.destroy();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBody) {
        send(413, { error: `body larger than ${maxBody} bytes` });
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > maxBody) return;
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(400, { error: 'the body is not JSON' });
      }
      const parsed = parseAdmissionReview(body);
      if (!parsed.ok) return send(400, { error: parsed.message });
      const { request } = parsed;
      const started = performance.now();
      let verdict: Verdict;
      try {
        verdict = options.review(request);
      } catch (err) {
        options.onError?.(`admission review of ${request.resource.resource} failed: ${(err as Error).message}`);
        verdict = { allowed: true, warnings: ['haprx could not check this object (an internal error): not checked'] };
      }
      options.onReviewed?.({
        uid: request.uid,
        resource: request.resource.resource,
        operation: request.operation,
        allowed: verdict.allowed,
        durationMs: Math.round(performance.now() - started),
        ...(verdict.message !== undefined && { message: verdict.message }),
      });
      send(200, admissionResponse(request.uid, verdict));
    });
    req.on('error', () => undefined);
  };
  const server: Server = createServer({ cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' }, handle);
  // Bounds for slow or idle callers: the API server's own timeout is 10 s by default.
  server.requestTimeout = 15_000;
  server.headersTimeout = 5_000;
  server.maxConnections = 128;
  server.on('tlsClientError', () => undefined);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        setCertificate: (c) => server.setSecureContext({ cert: c.cert, key: c.key, minVersion: 'TLSv1.2' }),
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
