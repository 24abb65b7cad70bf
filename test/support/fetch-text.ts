import { request } from 'node:http';

export interface TextReply {
  status: number;
  body: string;
}

/** One GET to `address`:`port`, bounded by 5 s; never rejects on an HTTP status. */
export function getText(address: string, port: number, path: string, headers?: Record<string, string>): Promise<TextReply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path, ...(headers && { headers }), agent: false }, (res) => {
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

/** GET on 127.0.0.1 (or another address of this host); never rejects on an HTTP status. */
export function fetchText(port: number, path: string, host = '127.0.0.1'): Promise<TextReply> {
  return getText(host, port, path);
}
