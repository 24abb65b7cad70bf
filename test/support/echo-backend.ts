import { type Server, createServer } from 'node:http';
import { type TextReply, getText } from './fetch-text.ts';

/** An HTTP server on 127.0.0.1 that answers every request with its own name. */
export async function startEcho(name: string): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.setHeader('x-backend', name);
    res.end(`${name}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('echo backend has no address');
  return { port: address.port, server, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** One GET through haproxy; resolves with status and body, never rejects on HTTP errors. */
export function get(port: number, path = '/', host = 'localhost'): Promise<TextReply> {
  return getText('127.0.0.1', port, path, { host });
}
