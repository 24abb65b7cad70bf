/**
 * Time from an EndpointSlice edit to traffic on the new endpoint, through
 * `haprx local` with the shipped templates and a real haproxy.
 *
 *   npm run bench:latency   (ITERATIONS=20 GAP_MS=2500 MODES=endpoint,host,backend by default)
 *
 * endpoint: moves the only endpoint of a Service to another echo server; host: a new
 * Ingress host on an existing backend; backend: a new Service with its own Ingress.
 * Each change is polled through haproxy until it is served. Edits are spaced beyond
 * the minimum deployment interval, so the figure is the reconcile path, not queueing.
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
const MODES = (process.env.MODES ?? 'endpoint,host,backend').split(',');
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
  ['bin/haprx.js', 'local', manifests, '--state-dir', stateDir, '--set', `httpPort=${port}`, '--set', 'bindAddress=127.0.0.1', '--health-port', '0', '--debug-port', '0', '--metrics-port', '0'],
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
  // The master re-executes on a reload and refuses connections for a moment.
  const results: Record<string, unknown>[] = [];
  const reloadCount = async (): Promise<number> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))!.reloads;
      } catch (err) {
        if (attempt > 50) throw err;
        await sleep(100);
      }
    }
  };
  const pct = (samples: number[], p: number) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
  const fmt = (ms: number) => `${ms.toFixed(0)} ms`;

  /** Runs one kind of change ITERATIONS times; each `change(i)` returns the host and body that prove it is served. */
  async function measure(label: string, change: (i: number) => Promise<{ host: string; body: string }>): Promise<void> {
    const reloadsBefore = await reloadCount();
    const samples: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      await sleep(GAP_MS);
      const started = performance.now();
      const expect = await change(i);
      while ((await get(port, '/', expect.host).catch(() => ({ body: '' }))).body.trim() !== expect.body) await sleep(2);
      samples.push(performance.now() - started);
    }
    samples.sort((a, b) => a - b);
    results.push({ change: label, n: samples.length, p50Ms: Math.round(pct(samples, 50)), p90Ms: Math.round(pct(samples, 90)), p99Ms: Math.round(pct(samples, 99)), reloads: (await reloadCount()) - reloadsBefore });
    console.log(`${label}, n=${samples.length}`);
    console.log(`  p50 ${fmt(pct(samples, 50))}   p90 ${fmt(pct(samples, 90))}   p99 ${fmt(pct(samples, 99))}   min ${fmt(samples[0]!)}   max ${fmt(samples.at(-1)!)}   reloads ${(await reloadCount()) - reloadsBefore}`);
  }

  const ingress = (name: string, host: string, service: string) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: bench}
spec:
  rules: [{host: ${host}, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ${service}, port: {number: 80}}}}]}}]
`;
  console.log('Change → served by haproxy (haprx local, shipped templates, debounce 500 ms, edits 2.5 s apart)');
  if (MODES.includes('endpoint')) {
    await measure('EndpointSlice edit → traffic on the new endpoint', async (i) => {
      const name = (i + 1) % 2 === 0 ? 'blue' : 'green';
      await writeFile(join(manifests, 'slice.yaml'), slice(echoes[(i + 1) % 2]!.port));
      return { host: 'app.bench', body: name };
    });
  }
  if (MODES.includes('host')) {
    await measure('new Ingress host on an existing backend', async (i) => {
      await writeFile(join(manifests, `host-${i}.yaml`), ingress(`host-${i}`, `h${i}.bench`, 'app'));
      return { host: `h${i}.bench`, body: await served() };
    });
  }
  if (MODES.includes('backend')) {
    await measure('new Service and Ingress (a new backend)', async (i) => {
      await writeFile(
        join(manifests, `backend-${i}.yaml`),
        `apiVersion: v1\nkind: Service\nmetadata: {name: svc-${i}, namespace: bench}\nspec: {ports: [{name: http, port: 80}]}\n---\n` +
          slice(echoes[0]!.port).replace('name: app-1', `name: svc-${i}-1`).replace('kubernetes.io/service-name: app', `kubernetes.io/service-name: svc-${i}`) +
          '---\n' +
          ingress(`backend-${i}`, `b${i}.bench`, `svc-${i}`),
      );
      return { host: `b${i}.bench`, body: 'blue' };
    });
  }
  await mkdir(`${root}bench/results`, { recursive: true });
  await writeFile(`${root}bench/results/latency.json`, `${JSON.stringify(results, null, 2)}\n`);
} finally {
  haprx.kill('SIGTERM');
  await new Promise((r) => haprx.once('exit', r));
  await Promise.all(echoes.map((e) => e.close()));
  await rm(dir, { recursive: true, force: true });
}
