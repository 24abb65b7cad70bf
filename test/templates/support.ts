import { type Agent, type IncomingHttpHeaders, type IncomingMessage, type Server, createServer, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';

/** What an echo backend saw: its own name and the request as it arrived. */
export interface Echo {
  name: string;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** An HTTP server on 127.0.0.1 that answers every request with its name and the request it got, as JSON. */
export async function startEchoBackend(name: string): Promise<{ name: string; port: number; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const echo: Echo = { name, method: req.method ?? '', url: req.url ?? '', headers: req.headers };
    res.setHeader('content-type', 'application/json');
    res.setHeader('x-echo', name);
    res.setHeader('x-powered-by', 'echo');
    res.end(JSON.stringify(echo));
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('echo backend has no address');
  return {
    name,
    port: address.port,
    server,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The backend's echo, when a backend answered. */
  echo?: Echo;
  /** The CN of the certificate haproxy presented, over TLS. */
  certificate?: string;
}

export interface Send {
  host: string;
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  tls?: boolean;
  sni?: string;
  /** Trust only this CA (PEM) and check the certificate against the SNI name, as a browser would. */
  ca?: string;
  agent?: Agent;
}

/** One request to 127.0.0.1:port; never rejects on an HTTP error status. */
export function send(port: number, req: Send): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, path: req.path ?? '/', method: req.method ?? 'GET', headers: { host: req.host, ...(req.headers ?? {}) }, agent: req.agent ?? false };
    const onReply = (res: IncomingMessage) => {
      let body = '';
      const certificate = req.tls ? (res.socket as TLSSocket).getPeerCertificate().subject?.CN : undefined;
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        let echo: Echo | undefined;
        if (res.headers['x-echo'] !== undefined) echo = JSON.parse(body) as Echo;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, echo, certificate: typeof certificate === 'string' ? certificate : undefined });
      });
    };
    const r = req.tls ? httpsRequest({ ...options, servername: req.sni ?? req.host.split(':')[0], ...(req.ca !== undefined ? { ca: req.ca, rejectUnauthorized: true } : { rejectUnauthorized: false }) }, onReply) : httpRequest(options, onReply);
    r.setTimeout(5_000, () => r.destroy(new Error('request timed out')));
    r.on('error', reject);
    r.end();
  });
}

export { until } from '../support/until.ts';

/** A Service `name` in namespace shop (port 80, named http) and an EndpointSlice with one ready endpoint, 127.0.0.1:`port`, as YAML. */
export function serviceManifest(name: string, port: number): string {
  return `apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: shop}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}-1, namespace: shop, labels: {kubernetes.io/service-name: ${name}}}
addressType: IPv4
ports: [{name: http, port: ${port}}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`;
}
