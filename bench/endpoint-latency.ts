/**
 * Time from an EndpointSlice edit to traffic on the new endpoint, through
 * `haprx local` with the shipped templates and a real haproxy.
 *
 *   npm run bench:latency            (ITERATIONS=20, GAP_MS=2500 by default)
 *
 * Each iteration moves the only endpoint of a Service to another echo server and
 * polls through haproxy until that server answers. Edits are spaced beyond the
 * minimum deployment interval, so the figure is the reconcile path, not queueing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliCommand, parseShowProc } from '../src/local/master-cli.ts';
import { get, startEcho } from '../test/support/echo-backend.ts';
import { freePort } from '../test/support/ports.ts';

const ITERATIONS = Number(process.env.ITERATIONS ?? 20);
const GAP_MS = Number(process.env.GAP_MS ?? 2_500);
const root = new URL('..', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dir = await mkdtemp(join(tmpdir(), 'haprx-bench-'));
const manifests = join(dir, 'manifests');
const stateDir = join(dir, 'state');
await mkdir(manifests);
const echoes = [await startEcho('blue'), await startEcho('green')];
const port = await freePort();

const slice = (echoPort: number) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: bench, labels: {kubernetes.io/service-name: app}}
addressType: IPv4
ports: [{name: http, port: ${echoPort}}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`;
await writeFile(
  join(manifests, 'app.yaml'),
  `apiVersion: v1
kind: Service
metadata: {name: app, namespace: bench}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: app, namespace: bench}
spec:
  rules: [{host: app.bench, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}}]
`,
);
await writeFile(join(manifests, 'slice.yaml'), slice(echoes[0]!.port));

const haprx: ChildProcess = spawn(
  process.execPath,
  ['bin/haprx.js', 'local', manifests, '--state-dir', stateDir, '--set', `httpPort=${port}`, '--set', 'bindAddress=127.0.0.1', '--health-port', '0', '--metrics-port', '0'],
  { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
);

async function served(): Promise<string> {
  return (await get(port, '/', 'app.bench').catch(() => ({ body: '' }))).body.trim();
}

try {
  for (let i = 0; (await served()) !== 'blue'; i++) {
    if (i > 400) throw new Error('haprx local did not come up');
    await sleep(25);
  }
  const reloadsBefore = parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))!.reloads;
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    await sleep(GAP_MS);
    const next = echoes[(i + 1) % 2]!;
    const name = (i + 1) % 2 === 0 ? 'blue' : 'green';
    const started = performance.now();
    await writeFile(join(manifests, 'slice.yaml'), slice(next.port));
    while ((await served()) !== name) await sleep(2);
    samples.push(performance.now() - started);
  }
  const reloads = parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))!.reloads - reloadsBefore;
  samples.sort((a, b) => a - b);
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
  const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
  console.log(`EndpointSlice edit → traffic on the new endpoint (haprx local, shipped templates, debounce 500 ms), n=${samples.length}`);
  console.log(`  p50 ${fmt(pct(50))}   p90 ${fmt(pct(90))}   p99 ${fmt(pct(99))}   min ${fmt(samples[0]!)}   max ${fmt(samples.at(-1)!)}`);
  console.log(`  reloads during the run: ${reloads}`);
} finally {
  haprx.kill('SIGTERM');
  await new Promise((r) => haprx.once('exit', r));
  await Promise.all(echoes.map((e) => e.close()));
  await rm(dir, { recursive: true, force: true });
}
