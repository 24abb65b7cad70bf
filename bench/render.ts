/**
 * Full render time of the shipped templates on synthetic clusters of 100, 1k and 10k
 * Ingresses, and `haproxy -c` on the same output.
 *
 *   npm run bench:render          (SIZES=100,1000,10000 ENDPOINTS=5 RUNS=3 by default)
 *
 * ALLOCATIONS=1 adds what one render allocates (V8's sampling heap profiler, collected
 * objects included): reusing nothing, the server lines and Ingress readings only, and
 * the Ingress model too (as the render thread does).
 *
 * TLS=1 gives every Ingress its own certificate (a TLS Secret, EC P-256, made with
 * openssl on the first run and kept in the temporary directory).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { runHaproxyCheck } from '../src/haproxy/validate.ts';
import { Store } from '../src/k8s/store.ts';
import { renderTemplates } from '../src/templating/engine.ts';
import { CallCache, type EntriesCall, type OnceCall, type ServerCall } from '../src/templating/call-cache.ts';
import { shippedTemplates, syntheticCluster, tlsPairs } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '100,1000,10000').split(',').map(Number);
const ENDPOINTS = Number(process.env.ENDPOINTS ?? 5);
const RUNS = Number(process.env.RUNS ?? 3);
const TLS = process.env.TLS === '1';
const ALLOCATIONS = process.env.ALLOCATIONS === '1';
const root = new URL('..', import.meta.url).pathname;

const { config, templates } = await shippedTemplates();

/** MiB that `work` allocates, from the sampling heap profiler keeping what was collected (a sample every 8 KiB). */
async function allocatedMiB(work: () => unknown): Promise<number> {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    work();
    const { profile } = await session.post('HeapProfiler.stopSampling');
    let bytes = 0;
    const pending = [profile.head];
    while (pending.length > 0) {
      const node = pending.pop()!;
      bytes += node.selfSize;
      pending.push(...node.children);
    }
    return Math.round(bytes / 1048576);
  } finally {
    session.disconnect();
  }
}

const rows: Record<string, unknown>[] = [];
for (const n of SIZES) {
  const cluster = syntheticCluster({ ingresses: n, endpointsPerService: ENDPOINTS, tlsSecrets: TLS ? n : 0, ...(TLS && { tls: await tlsPairs(n) }) });
  const stores = new Map(config.watch.map((w) => [w.name, new Store(w.name, w)]));
  const fillStart = performance.now();
  for (const [name, objects] of Object.entries(cluster)) {
    const store = stores.get(name);
    if (!store) continue;
    for (const object of objects) store.apply({ type: 'upsert', resource: name, object });
  }
  const fillMs = performance.now() - fillStart;
  const values = { ...config.values, httpPort: 18080, bindAddress: '127.0.0.1' };
  const times: number[] = [];
  let rendered;
  for (let run = 0; run < RUNS; run++) {
    const t0 = performance.now();
    const result = renderTemplates(templates, { resources: Object.fromEntries(stores), values });
    times.push(performance.now() - t0);
    if (!result.ok) throw new Error(`${result.error.template}:${result.error.line}: ${result.error.message}`);
    rendered = result.config;
  }
  times.sort((a, b) => a - b);
  // As the render thread renders: the server lines, Ingress readings and Ingress model of the last render
  // reused where nothing they read changed. Between two renders one EndpointSlice moves, so one backend is
  // written again.
  const caches = { serverCache: new CallCache<ServerCall>(), entriesCache: new CallCache<EntriesCall>(), onceCache: new CallCache<OnceCall>() };
  const input = { resources: Object.fromEntries(stores), values };
  renderTemplates(templates, input, caches);
  const slices = stores.get('endpointslices')!;
  const reusing: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const moved = slices.list()[run % slices.size]!;
    slices.apply({ type: 'upsert', resource: 'endpointslices', object: { ...moved, metadata: { ...moved.metadata, resourceVersion: `moved-${run}` } } });
    const t0 = performance.now();
    const result = renderTemplates(templates, input, caches);
    reusing.push(performance.now() - t0);
    if (!result.ok) throw new Error(`${result.error.template}:${result.error.line}: ${result.error.message}`);
  }
  reusing.sort((a, b) => a - b);
  // What one render allocates, collected or not: sampled by V8's heap profiler, with and without reuse.
  let allocated: string | undefined;
  if (ALLOCATIONS) {
    // As the previous release's render thread: server lines and Ingress readings reused, the model built again.
    const calls = { serverCache: new CallCache<ServerCall>(), entriesCache: new CallCache<EntriesCall>() };
    renderTemplates(templates, input, calls);
    const none = await allocatedMiB(() => renderTemplates(templates, input));
    const readings = await allocatedMiB(() => renderTemplates(templates, input, calls));
    allocated = `${none} / ${readings} / ${await allocatedMiB(() => renderTemplates(templates, input, caches))}`;
  }
  const checkStart = performance.now();
  const check = await runHaproxyCheck(rendered!, { haproxyBin: 'haproxy', timeoutMs: 120_000, tmpDir: tmpdir() });
  const checkMs = performance.now() - checkStart;
  if (check.kind !== 'exited' || check.code !== 0) throw new Error(`haproxy -c failed at ${n}: ${JSON.stringify(check).slice(0, 500)}`);
  const renderMs = times[Math.floor(times.length / 2)]!;
  rows.push({
    ingresses: n,
    endpoints: n * ENDPOINTS,
    'TLS Secrets': cluster.secrets.length,
    'certificate files': Object.keys(rendered!.certs).length,
    'config lines': rendered!.main.split('\n').length,
    'store fill ms': Math.round(fillMs),
    [`render ms (median of ${RUNS})`]: Math.round(renderMs),
    'render ms, calls reused': Math.round(reusing[Math.floor(reusing.length / 2)]!),
    ...(allocated && { 'MiB allocated per render: nothing / server lines and readings / and the model reused': allocated }),
    'haproxy -c ms': Math.round(checkMs),
    'render / haproxy -c': (renderMs / checkMs).toFixed(2),
  });
}
console.table(rows);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/render.json`, `${JSON.stringify(rows, null, 2)}\n`);
