/**
 * haprx local at scale: cold start to the first deployment, memory after the initial
 * sync and after a period of endpoint churn, and what a burst of 1,000 endpoint
 * changes (one Service scaled from 1 to 200 endpoints among them) costs in
 * deployments and reloads. Shipped templates, real haproxy.
 *
 *   npm run bench:scale     (SIZE=10000 ENDPOINTS=5 CHURN_SECONDS=300 by default)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cliCommand, parseShowProc } from '../src/local/master-cli.ts';
import type { KubeObject } from '../src/k8s/resource.ts';
import { freePort } from '../test/support/ports.ts';
import { endpointSlice, syntheticCluster } from './synthetic.ts';

const SIZE = Number(process.env.SIZE ?? 10_000);
const ENDPOINTS = Number(process.env.ENDPOINTS ?? 5);
const CHURN_SECONDS = Number(process.env.CHURN_SECONDS ?? 300);
const CHUNK = 500;
const root = new URL('..', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

const dir = await mkdtemp(join(tmpdir(), 'haprx-scale-'));
const manifests = join(dir, 'manifests');
const stateDir = join(dir, 'state');
await mkdir(manifests);
const cluster = syntheticCluster({ ingresses: SIZE, endpointsPerService: ENDPOINTS, tlsSecrets: 0 });
const slices = [...cluster.endpointslices];

async function writeChunks(kind: string, objects: KubeObject[]): Promise<void> {
  for (let i = 0; i < objects.length; i += CHUNK) {
    await writeFile(join(manifests, `${kind}-${i / CHUNK}.yaml`), objects.slice(i, i + CHUNK).map((o) => stringify(o)).join('---\n'));
  }
}
const writeSliceChunk = (index: number) =>
  writeFile(join(manifests, `endpointslices-${Math.floor(index / CHUNK)}.yaml`), slices.slice(Math.floor(index / CHUNK) * CHUNK, Math.floor(index / CHUNK) * CHUNK + CHUNK).map((o) => stringify(o)).join('---\n'));

await writeChunks('services', cluster.services);
await writeChunks('endpointslices', slices);
await writeChunks('ingresses', cluster.ingresses);

const metricsPort = await freePort();
const httpPort = await freePort();
const deployments: { at: number; reloaded: boolean }[] = [];
const started = performance.now();
const haprx: ChildProcess = spawn(
  process.execPath,
  ['bin/haprx.js', 'local', manifests, '--state-dir', stateDir, '--set', `httpPort=${httpPort}`, '--set', 'bindAddress=127.0.0.1', '--health-port', '0', '--debug-port', '0', '--metrics-port', String(metricsPort)],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
);
let partial = '';
haprx.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
  const lines = (partial + chunk).split('\n');
  partial = lines.pop() ?? '';
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    const record = JSON.parse(line) as { msg: string; reloaded?: boolean };
    if (record.msg.startsWith('deployed to local')) deployments.push({ at: performance.now(), reloaded: record.reloaded === true });
  }
});

async function memory(): Promise<{ rss: number; heap: number }> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { rss: value('process_resident_memory_bytes'), heap: value('nodejs_heap_size_used_bytes') };
}
const reloads = async () => parseShowProc(await cliCommand(join(stateDir, 'master.sock'), 'show proc'))!.reloads;
/** Waits for a deployment after `after` deployments (up to 60 s), then for 3 s without one. */
async function settle(after = deployments.length - 1): Promise<void> {
  for (let waited = 0; deployments.length <= after && waited < 60_000; waited += 100) await sleep(100);
  for (let last = deployments.length; ; last = deployments.length) {
    await sleep(3_000);
    if (deployments.length === last) return;
  }
}

try {
  while (deployments.length === 0) {
    if (haprx.exitCode !== null) throw new Error('haprx local exited');
    await sleep(20);
  }
  const coldStartMs = performance.now() - started;
  await settle();
  const afterSync = await memory();
  const reloadsBefore = await reloads();

  // The burst: one Service scaled from 1 to 200 endpoints, then 800 other slices each
  // moving one endpoint, all within 5 s.
  const burstStart = performance.now();
  const deploymentsBefore = deployments.length;
  slices[0] = endpointSlice(0, 1, 0, 'burst-a');
  await writeSliceChunk(0);
  await sleep(200);
  slices[0] = endpointSlice(0, 200, 0, 'burst-b');
  await writeSliceChunk(0);
  const touched = new Set<number>();
  for (let i = 1; i <= 800; i++) {
    const index = (i * 7919) % SIZE || 1;
    slices[index] = endpointSlice(index, ENDPOINTS, 1_000_000, `burst-${i}`);
    touched.add(Math.floor(index / CHUNK));
  }
  for (const chunk of touched) {
    await writeSliceChunk(chunk * CHUNK);
    await sleep(Math.max(0, 4_000 / touched.size - 5));
  }
  const burstWriteMs = performance.now() - burstStart;
  await settle(deploymentsBefore);
  const burst = deployments.slice(deploymentsBefore);
  const burstReloads = (await reloads()) - reloadsBefore;

  // Churn: one slice moves an endpoint every 500 ms.
  const churnEnd = performance.now() + CHURN_SECONDS * 1_000;
  for (let i = 0; performance.now() < churnEnd; i++) {
    const index = (i * 104729) % SIZE;
    slices[index] = endpointSlice(index, ENDPOINTS, 2_000_000 + (i % 3) * 100_000, `churn-${i}`);
    await writeSliceChunk(index);
    await sleep(500);
  }
  await settle(deployments.length);
  const afterChurn = await memory();
  const churnReloads = (await reloads()) - reloadsBefore - burstReloads;

  const rows = {
    'Ingresses / Services / endpoints': `${SIZE} / ${SIZE} / ${SIZE * ENDPOINTS}`,
    'cold start to first deployment': `${(coldStartMs / 1000).toFixed(1)} s`,
    'RSS / heap after initial sync': `${mib(afterSync.rss)} MiB / ${mib(afterSync.heap)} MiB`,
    'burst: endpoint changes written': `1,000 in ${(burstWriteMs / 1000).toFixed(1)} s (1 → 200 endpoints on one Service, 800 slices moved)`,
    'burst: deployments / reloads': `${burst.length} / ${burstReloads}`,
    [`RSS / heap after ${CHURN_SECONDS} s of churn`]: `${mib(afterChurn.rss)} MiB / ${mib(afterChurn.heap)} MiB`,
    'reloads during churn': String(churnReloads),
  };
  console.table(rows);
  await mkdir(`${root}bench/results`, { recursive: true });
  await writeFile(`${root}bench/results/scale.json`, `${JSON.stringify({ size: SIZE, endpoints: ENDPOINTS, churnSeconds: CHURN_SECONDS, coldStartMs, afterSync, burst: { deployments: burst.length, reloads: burstReloads, writeMs: burstWriteMs }, afterChurn, churnReloads }, null, 2)}\n`);
} finally {
  haprx.kill('SIGTERM');
  await new Promise((r) => haprx.once('exit', r));
  await rm(dir, { recursive: true, force: true });
}
