import { request } from 'node:http';

/** GET on 127.0.0.1 (or another address of this host); never rejects on an HTTP status. */
export function fetchText(port: number, path: string, host = '127.0.0.1'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end();
  });
}
