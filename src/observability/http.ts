import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (url: URL, req: IncomingMessage) => Promise<{ status: number; type: string; body: string }> | { status: number; type: string; body: string };

export interface Listening {
  server: Server;
  host: string;
  port: number;
  close(): Promise<void>;
}

export function json(status: number, value: unknown): { status: number; type: string; body: string } {
  return { status, type: 'application/json; charset=utf-8', body: `${JSON.stringify(value, null, 2)}\n` };
}

/** A small GET-only HTTP server over a route table; a handler that throws answers 500, never crashes. */
export function listen(routes: Readonly<Record<string, Handler>>, host: string, port: number): Promise<Listening> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handler = routes[url.pathname];
    const reply = (r: { status: number; type: string; body: string }) => {
      res.writeHead(r.status, { 'content-type': r.type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : r.body);
    };
    if (!handler) return reply(json(404, { error: `no such path: ${url.pathname}`, paths: Object.keys(routes) }));
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(json(405, { error: 'only GET' }));
    Promise.resolve()
      .then(() => handler(url, req))
      .then(reply, (err: unknown) => reply(json(500, { error: (err as Error).message })));
  });
  // Slow or idle clients must not pile up sockets.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      resolve({
        server,
        host,
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
