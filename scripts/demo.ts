/**
 * The local demo: small echo servers stand in for the demo's pods, and haprx runs
 * in local mode on examples/demo, driving a real haproxy on 127.0.0.1:18080.
 *
 *   npm run demo
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';

const HTTP_PORT = 18080;
/** Port → the name the echo server answers with; 19005 and 19006 are spares to add to a slice. */
const BACKENDS: Record<number, string> = { 19001: 'web-1', 19002: 'web-2', 19003: 'api-1', 19004: 'docs-1', 19005: 'web-3 (spare)', 19006: 'web-4 (spare)' };

const servers = await Promise.all(
  Object.entries(BACKENDS).map(
    ([port, name]) =>
      new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        const server = createServer((req, res) => {
          res.setHeader('content-type', 'text/plain');
          res.end(`${name}: ${req.method} ${req.headers.host ?? ''}${req.url}\n`);
        });
        server.once('error', (err) => reject(new Error(`cannot listen on 127.0.0.1:${port}: ${err.message}`)));
        server.listen(Number(port), '127.0.0.1', () => resolve(server));
      }),
  ),
);

const root = new URL('..', import.meta.url).pathname;
const haprx = spawn(
  process.execPath,
  ['bin/haprx.js', 'local', 'examples/demo', '--state-dir', '.haprx/demo', '--set', `httpPort=${HTTP_PORT}`, '--set', 'bindAddress=127.0.0.1'],
  { cwd: root, stdio: 'inherit' },
);

const curl = (host: string, path: string) => `  curl -s -H 'Host: ${host}' http://127.0.0.1:${HTTP_PORT}${path}`;
console.log(`
haprx demo: haproxy on http://127.0.0.1:${HTTP_PORT}, configured from examples/demo/*.yaml

Try:
${curl('shop.demo.local', '/')}          # web-1 / web-2, round robin
${curl('shop.demo.local', '/api/orders')}   # api-1 (prefix /api)
${curl('shop.demo.local', '/apis')}          # web: /api is a path prefix, not a string prefix
${curl('shop.demo.local', '/status')}        # api-1 (exact path)
${curl('docs.demo.local', '/guide')}         # docs-1
${curl('unknown.local', '/')}                # 404 from the default backend
${curl('gw.demo.local', '/')}                # Gateway API (gateway.yaml): web-1 / web-2
  curl -s -H 'x-version: 2' -H 'Host: gw.demo.local' http://127.0.0.1:${HTTP_PORT}/   # api-1 (header match)
${curl('gw.demo.local', '/manual/setup')}    # docs-1, path rewritten to /setup
  curl -si -H 'Host: gw.demo.local' http://127.0.0.1:${HTTP_PORT}/old/page   # 301 to /new/page

Then edit examples/demo/endpointslices.yaml: copy the web-2 slice as web-3 with port
19005, and the new server is added at runtime, without a reload. Ctrl-C stops haprx,
haproxy and the echo servers.
`);

const stop = () => haprx.kill('SIGTERM');
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
haprx.once('exit', (code) => {
  for (const server of servers) server.close();
  process.exitCode = code ?? 0;
});
