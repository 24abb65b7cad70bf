/**
 * haprx local at scale: cold start to the first deployment, memory after the initial
 * sync and after a period of endpoint churn, what a burst of 1,000 endpoint changes
 * (one Service scaled from 1 to 200 endpoints among them) costs in deployments and
 * reloads, and how long /healthz took to answer in each phase (sampled every 20 ms
 * from a worker thread). Shipped templates, real haproxy, and the V8 heap cap the
 * Kubernetes manifests give the controller (shippedRuntime in bench/shipped-runtime.ts).
 *
 *   npm run bench:scale     (SIZES=1000,10000 ENDPOINTS=5 CHURN_SECONDS=300 by default;
 *                            about 6 minutes per size)
 *
 * If haprx dies (out of memory, say) the benchmark says so and exits non-zero.
 * KILL_AFTER_SYNC=1 kills haprx once the initial sync is deployed, to show exactly that.
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { freePort } from '../test/support/ports.ts';
import { shippedRuntime } from './shipped-runtime.ts';
import { type HealthFigures, startHealthProbe } from './health-probe.ts';
import { type LocalRun, chunkFile, sleep, startLocal, tempDir, until, writeChunk, writeChunks } from './local-run.ts';
import { endpointSlice, syntheticCluster } from './synthetic.ts';

/**
 * Resident memory of haprx's spawn helper (the small process that starts haproxy -c),
 * found among its children in /proc; 0 when there is none. Its own memory, beside haprx's.
 */
async function helperRss(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  for (const task of tasks) {
    const children = (await readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => '')).split(' ').filter(Boolean);
    for (const child of children) {
      if (!(await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).includes('spawn-helper-process')) continue;
      const kib = /^VmRSS:\s+(\d+) kB$/m.exec(await readFile(`/proc/${child}/status`, 'utf8').catch(() => ''));
      return kib ? Number(kib[1]) * 1024 : 0;
    }
  }
  return 0;
}

const SIZES = (process.env.SIZES ?? process.env.SIZE ?? '1000,10000').split(',').map(Number);
const ENDPOINTS = Number(process.env.ENDPOINTS ?? 5);
const CHURN_SECONDS = Number(process.env.CHURN_SECONDS ?? 300);
const KILL_AFTER_SYNC = process.env.KILL_AFTER_SYNC === '1';
const root = new URL('..', import.meta.url).pathname;
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

export interface ScaleResult {
  size: number;
  endpoints: number;
  churnSeconds: number;
  heapCapMib: number;
  nodeOptions: string;
  coldStartMs: number;
  /** `heap`: the main thread's heap in use; `renderHeap`: the render thread's after its last render. */
  afterSync: { rss: number; heap: number; renderHeap: number; helperRss: number };
  burst: { deployments: number; reloads: number; writeMs: number };
  afterChurn: { rss: number; heap: number; renderHeap: number; helperRss: number };
  churnReloads: number;
  /** Full renders that finished during the churn, and configurations haproxy -c checked: the full path is not starved. */
  churnRenders: { finished: number; checked: number };
  health: Record<string, HealthFigures>;
  /** The machine's 1, 5 and 15 minute load averages at the end: a shared machine's noise. */
  loadAverage: string;
}

const cap = await shippedRuntime();

async function measure(size: number): Promise<ScaleResult> {
  const tmp = await tempDir('haprx-scale-');
  const cluster = syntheticCluster({ ingresses: size, endpointsPerService: ENDPOINTS, tlsSecrets: 0 });
  const slices = [...cluster.endpointslices];
  await writeChunks(tmp.manifests, 'services', cluster.services);
  await writeChunks(tmp.manifests, 'endpointslices', slices);
  await writeChunks(tmp.manifests, 'ingresses', cluster.ingresses);

  const metricsPort = await freePort();
  const healthPort = await freePort();
  const httpPort = await freePort();
  const probe = startHealthProbe(healthPort);
  const started = performance.now();
  const haprx: LocalRun = startLocal({
    manifests: tmp.manifests,
    stateDir: tmp.stateDir,
    sets: { httpPort },
    healthPort,
    metricsPort,
    env: cap.env,
  });

  const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  async function memory(): Promise<{ rss: number; heap: number; renderHeap: number; helperRss: number }> {
    haprx.alive();
    const text = await metrics();
    const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
    return { rss: value('process_resident_memory_bytes'), heap: value('nodejs_heap_size_used_bytes'), renderHeap: Number(/^haprx_render_thread_heap_bytes\{figure="used"\} ([\d.e+]+)$/m.exec(text)?.[1] ?? NaN), helperRss: await helperRss(haprx.child.pid) };
  }
  /** Full renders that finished (changed or unchanged output) and haproxy -c checks, so far. */
  async function renders(): Promise<{ finished: number; checked: number }> {
    const text = await metrics();
    const sum = (pattern: RegExp) => [...text.matchAll(pattern)].reduce((total, m) => total + Number(m[1]), 0);
    return {
      finished: sum(/^haprx_render_duration_seconds_count\{[^}]*result="(?:changed|unchanged)"[^}]*\} (\d+)$/gm),
      checked: sum(/^haprx_validations_total(?:\{[^}]*\})? (\d+)$/gm),
    };
  }
  /** Waits for a deployment after `after` deployments (up to 60 s), then for 3 s without one. */
  async function settle(after = haprx.deployments.length - 1): Promise<void> {
    await until(haprx, 'a deployment', () => haprx.deployments.length > after, 60_000, 100).catch(() => undefined);
    for (let last = haprx.deployments.length; ; last = haprx.deployments.length) {
      await sleep(3_000);
      haprx.alive();
      if (haprx.deployments.length === last) return;
    }
  }

  try {
    await until(haprx, 'the first deployment', () => haprx.deployments.length > 0, 300_000);
    const coldStartMs = haprx.deployments[0]!.at - started;
    await settle();
    if (KILL_AFTER_SYNC) haprx.child.kill('SIGKILL');
    const coldHealth = await probe.mark('cold start');
    const afterSync = await memory();
    const reloadsBefore = await haprx.reloads();

    // The burst: one Service scaled from 1 to 200 endpoints, then 800 other slices each
    // moving one endpoint, all within 5 s. The files are made before the clock starts:
    // on a busy machine making them would stretch the burst.
    slices[0] = endpointSlice(0, 1, 0, 'burst-a');
    const scaleFrom = chunkFile(tmp.manifests, 'endpointslices', slices, 0);
    slices[0] = endpointSlice(0, 200, 0, 'burst-b');
    const scaleTo = chunkFile(tmp.manifests, 'endpointslices', slices, 0);
    const touched = new Set<number>();
    for (let i = 1; i <= 800; i++) {
      const index = (i * 7919) % size || 1;
      slices[index] = endpointSlice(index, ENDPOINTS, 1_000_000, `burst-${i}`);
      touched.add(Math.floor(index / 500));
    }
    const moved = [...touched].map((chunk) => chunkFile(tmp.manifests, 'endpointslices', slices, chunk * 500));
    const burstStart = performance.now();
    const deploymentsBefore = haprx.deployments.length;
    await writeFile(scaleFrom.path, scaleFrom.text);
    await sleep(200);
    await writeFile(scaleTo.path, scaleTo.text);
    for (const file of moved) {
      await writeFile(file.path, file.text);
      await sleep(Math.max(0, 4_000 / moved.length - 5));
    }
    const burstWriteMs = performance.now() - burstStart;
    await settle(deploymentsBefore);
    const burst = haprx.deployments.slice(deploymentsBefore);
    const burstReloads = (await haprx.reloads()) - reloadsBefore;
    const burstHealth = await probe.mark('burst');

    // Churn: one slice moves an endpoint every 500 ms.
    const rendersBefore = await renders();
    const churnEnd = performance.now() + CHURN_SECONDS * 1_000;
    for (let i = 0; performance.now() < churnEnd; i++) {
      haprx.alive();
      const index = (i * 104729) % size;
      slices[index] = endpointSlice(index, ENDPOINTS, 2_000_000 + (i % 3) * 100_000, `churn-${i}`);
      await writeChunk(tmp.manifests, 'endpointslices', slices, index);
      await sleep(500);
    }
    await settle(haprx.deployments.length);
    const churnHealth = await probe.mark('churn');
    const rendersAfter = await renders();
    const churnRenders = { finished: rendersAfter.finished - rendersBefore.finished, checked: rendersAfter.checked - rendersBefore.checked };
    const afterChurn = await memory();
    const churnReloads = (await haprx.reloads()) - reloadsBefore - burstReloads;

    const health = (h: HealthFigures) => `max ${h.maxMs} ms, p99 ${h.p99Ms} ms, ${h.over100ms} of ${h.n} over 100 ms${h.failed ? `, ${h.failed} unanswered` : ''}`;
    console.table({
      'Ingresses / Services / endpoints': `${size} / ${size} / ${size * ENDPOINTS}`,
      'V8 options (as the manifests give them)': `${cap.nodeOptions} (${cap.source}, for each thread)`,
      'cold start to first deployment': `${(coldStartMs / 1000).toFixed(1)} s`,
      '/healthz during cold start': health(coldHealth),
      'RSS / heap of the main and render threads after initial sync (+ RSS of the spawn helper)': `${mib(afterSync.rss)} MiB / ${mib(afterSync.heap)} + ${mib(afterSync.renderHeap)} MiB (+ ${mib(afterSync.helperRss)} MiB)`,
      'burst: endpoint changes written': `1,000 in ${(burstWriteMs / 1000).toFixed(1)} s (1 → 200 endpoints on one Service, 800 slices moved)`,
      'burst: deployments / reloads': `${burst.length} / ${burstReloads}`,
      '/healthz during the burst': health(burstHealth),
      [`RSS / heap of the main and render threads after ${CHURN_SECONDS} s of churn (+ RSS of the spawn helper)`]: `${mib(afterChurn.rss)} MiB / ${mib(afterChurn.heap)} + ${mib(afterChurn.renderHeap)} MiB (+ ${mib(afterChurn.helperRss)} MiB)`,
      'reloads during churn': String(churnReloads),
      'full renders finished during churn / checked by haproxy -c': `${churnRenders.finished} / ${churnRenders.checked}`,
      '/healthz during churn': health(churnHealth),
    });
    return {
      size,
      endpoints: ENDPOINTS,
      churnSeconds: CHURN_SECONDS,
      heapCapMib: cap.mib,
      nodeOptions: cap.nodeOptions,
      coldStartMs: Math.round(coldStartMs),
      afterSync,
      burst: { deployments: burst.length, reloads: burstReloads, writeMs: Math.round(burstWriteMs) },
      afterChurn,
      churnReloads,
      churnRenders,
      health: { ...probe.phases },
      loadAverage: loadavg().map((l) => l.toFixed(2)).join(', '),
    };
  } finally {
    await probe.stop();
    await haprx.stop();
    await tmp.remove();
  }
}

const results: ScaleResult[] = [];
let failed: unknown;
for (const size of SIZES) {
  try {
    results.push(await measure(size));
  } catch (err) {
    failed = err;
    break;
  }
}
await mkdir(`${root}bench/results`, { recursive: true });
// A deliberate failure (KILL_AFTER_SYNC) writes elsewhere, so as not to replace real figures.
await writeFile(`${root}bench/results/${process.env.SCALE_RESULT ?? 'scale.json'}`, `${JSON.stringify(results, null, 2)}\n`);
if (failed !== undefined) {
  console.error(`bench:scale failed: ${failed instanceof Error ? failed.message : String(failed)}`);
  process.exitCode = 1;
}
