/**
 * End to end: the `haprx local` command on a folder of manifests, with the shipped
 * templates, a real haproxy and real HTTP traffic to echo backends.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cliCommand, parseShowProc } from '../../src/local/master-cli.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { until as poll } from '../support/until.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

const service = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\nspec:\n  ports: [{name: http, port: 80, targetPort: 8080}]\n`;
const slice = (name: string, service: string, port: number, addresses: string[] = ['127.0.0.1']) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}, namespace: shop, labels: {kubernetes.io/service-name: ${service}}}
addressType: IPv4
ports: [{name: http, port: ${port}}]
endpoints:
${addresses.map((a) => `  - {addresses: [${a}], conditions: {ready: true}}`).join('\n')}
`;
const ingress = (name: string, host: string, paths: { path: string; type: string; service: string }[]) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop}
spec:
  rules:
    - host: ${host}
      http:
        paths:
${paths.map((p) => `          - {path: ${p.path}, pathType: ${p.type}, backend: {service: {name: ${p.service}, port: {number: 80}}}}`).join('\n')}
`;

interface LogRecord {
  msg: string;
  reloaded?: boolean;
  runtimeOps?: number;
  level: number;
}

describe('haprx local (e2e)', () => {
  let dir: string;
  let manifests: string;
  let templates: string;
  let stateDir: string;
  let port: number;
  let haprx: ChildProcess;
  const logs: LogRecord[] = [];
  const echo: Record<string, Awaited<ReturnType<typeof startEcho>>> = {};

  const deployments = () => logs.filter((l) => l.msg.startsWith('deployed to local'));
  const reloads = async () => parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))!.reloads;
  const body = async (host: string, path = '/') => (await get(port, path, host)).body.trim();

  const recentLogs = () => `logs:\n${logs.map((l) => l.msg).join('\n')}`;
  const until = <T>(what: string, probe: () => Promise<T | undefined> | T | undefined) => poll(what, probe, 15_000, recentLogs);


  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-e2e-'));
    manifests = join(dir, 'manifests');
    templates = join(dir, 'templates');
    await cp(join(ROOT, 'templates'), templates, { recursive: true });
    stateDir = join(dir, 'state');
    await mkdir(manifests);
    for (const name of ['web1', 'web2', 'web3', 'api1', 'docs1']) echo[name] = await startEcho(name);
    port = await freePort();
    await writeFile(join(manifests, 'services.yaml'), [service('web'), service('api'), service('docs')].join('---\n'));
    await writeFile(
      join(manifests, 'slices.yaml'),
      [slice('web-a', 'web', echo.web1!.port), slice('api-a', 'api', echo.api1!.port), slice('docs-a', 'docs', echo.docs1!.port)].join('---\n'),
    );
    await writeFile(
      join(manifests, 'shop.yaml'),
      ingress('shop', 'shop.test', [
        { path: '/', type: 'Prefix', service: 'web' },
        { path: '/api', type: 'Prefix', service: 'api' },
        { path: '/status', type: 'Exact', service: 'api' },
      ]),
    );
    haprx = spawn(
      process.execPath,
      ['bin/haprx.js', 'local', manifests, '--templates', templates, '--state-dir', stateDir, '--set', `httpPort=${port}`, '--set', 'bindAddress=127.0.0.1', '--health-port', '0', '--debug-port', '0', '--metrics-port', '0'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HAPRX_LOG_LEVEL: 'debug' } },
    );
    createInterface({ input: haprx.stdout!, crlfDelay: Infinity }).on('line', (line) => {
      if (line.startsWith('{')) logs.push(JSON.parse(line) as LogRecord);
    });
    haprx.stderr!.setEncoding('utf8').on('data', (chunk: string) => logs.push({ msg: `stderr: ${chunk}`, level: 50 }));
    await until('the first deployment', () => deployments()[0]);
  });

  after(async () => {
    if (haprx.exitCode === null) {
      haprx.kill('SIGTERM');
      await new Promise((r) => haprx.once('exit', r));
    }
    await Promise.all(Object.values(echo).map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('routes requests to the right backend by host and path', async () => {
    assert.equal(await body('shop.test', '/'), 'web1');
    assert.equal(await body('shop.test', '/cart/items'), 'web1');
    assert.equal(await body('shop.test', '/api'), 'api1');
    assert.equal(await body('shop.test', '/api/orders/7'), 'api1');
    assert.equal(await body('shop.test', '/apis'), 'web1', 'a prefix matches whole path elements');
    assert.equal(await body('shop.test', '/status'), 'api1');
    assert.equal(await body('SHOP.test:80', '/api'), 'api1', 'host match ignores case and port');
    assert.equal((await get(port, '/', 'elsewhere.test')).status, 404);
  });

  it('sends traffic to an endpoint added to an EndpointSlice with zero reloads', async () => {
    const before = await reloads();
    const count = deployments().length;
    await writeFile(join(manifests, 'slices.yaml'), [slice('web-a', 'web', echo.web1!.port), slice('web-b', 'web', echo.web2!.port), slice('api-a', 'api', echo.api1!.port), slice('docs-a', 'docs', echo.docs1!.port)].join('---\n'));
    const started = Date.now();
    await until('traffic on web2', async () => ((await body('shop.test')) === 'web2' || (await body('shop.test')) === 'web2' ? true : undefined));
    const latency = Date.now() - started;
    assert.equal(await reloads(), before, 'no reload');
    // Traffic can reach web2 before haprx's log line about it has been read.
    const deployed = await until('the deployment log line', () => (deployments().length > count ? deployments().slice(count) : undefined));
    assert.ok(deployed.every((d) => d.reloaded === false), JSON.stringify(deployed));
    // Debounce 500 ms, then render, validate and a runtime change; bench/endpoint-latency.ts
    // measures it, this only guards against the change waiting for something else.
    assert.ok(latency < 10_000, `${latency} ms from the edit to traffic`);
  });

  it('reloads exactly once for a new Ingress with a new backend', async () => {
    const before = await reloads();
    await writeFile(join(manifests, 'docs.yaml'), ingress('docs', 'docs.test', [{ path: '/', type: 'Prefix', service: 'docs' }]));
    await until('traffic on docs', async () => ((await body('docs.test', '/guide')) === 'docs1' ? true : undefined));
    await new Promise((r) => setTimeout(r, 2_500));
    assert.equal(await reloads(), before + 1);
  });

  it('rejects a change haproxy refuses, keeps serving the last good config, and recovers when the file is fixed', async () => {
    // The shipped templates skip bad values from the cluster, so the bad change is a template edit.
    const main = join(templates, 'haproxy.cfg');
    const good = await readFile(main, 'utf8');
    assert.match(good, /^defaults$/m);
    const count = logs.length;
    await writeFile(main, good.replace(/^defaults$/m, 'defaults\n  bogus-directive'));
    const refused = await until('the refusal', () => logs.slice(count).find((l) => l.msg.startsWith('configuration refused by haproxy')));
    assert.match(refused.msg, /haproxy\.cfg:\d+: .*unknown keyword 'bogus-directive'/);
    assert.equal(await body('shop.test', '/api'), 'api1', 'still serving');
    await writeFile(join(manifests, 'more.yaml'), slice('web-c', 'web', echo.web3!.port));
    await new Promise((r) => setTimeout(r, 1_500));
    assert.notEqual(await body('shop.test'), 'web3', 'nothing deploys while the templates are broken');
    await writeFile(main, good);
    await until('traffic on web3', async () => {
      for (let i = 0; i < 4; i++) if ((await body('shop.test')) === 'web3') return true;
      return undefined;
    });
  });

  it('turns 50 file writes within 1 s into at most 2 deployments, none of them a reload', async () => {
    await new Promise((r) => setTimeout(r, 2_500));
    const count = deployments().length;
    const before = await reloads();
    const addresses: string[] = [];
    const started = Date.now();
    for (let i = 1; i <= 50; i++) {
      addresses.push(`127.0.1.${i}`);
      await writeFile(join(manifests, 'burst.yaml'), slice('web-burst', 'web', 1, addresses));
      await new Promise((r) => setTimeout(r, 18));
    }
    assert.ok(Date.now() - started < 1_500, `writes took ${Date.now() - started} ms`);
    await new Promise((r) => setTimeout(r, 4_000));
    const burst = deployments().slice(count);
    assert.ok(burst.length >= 1 && burst.length <= 2, `${burst.length} deployments`);
    assert.equal(await reloads(), before);
    const state = await cliCommand(join(stateDir, 'master.sock'), '@1 show servers state');
    assert.equal(state.split('\n').filter((l) => / 127\.0\.1\.\d+ /.test(l)).length, 50, 'all 50 servers are in');
  });

  it('stops haproxy when haprx exits, at once (Ctrl-C waits for nothing)', async (t) => {
    const pid = parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))!.masterPid;
    const signalled = Date.now();
    haprx.kill('SIGTERM');
    const code = await new Promise((r) => haprx.once('exit', r));
    const took = Date.now() - signalled;
    t.diagnostic(`haprx local exited ${took} ms after SIGTERM`);
    assert.ok(took < 2_000, `exited ${took} ms after SIGTERM`);
    assert.equal(code, 0);
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
  });
});
