/**
 * haprx local started on a cluster written as one manifest file (every Service,
 * EndpointSlice and Ingress in it: 13 MB at 10k Ingresses), as a user who keeps a
 * cluster's export in one file would: the time to the first deployment, how long
 * /healthz took to answer meanwhile (sampled every 20 ms from a worker thread), and
 * memory once it is deployed. Shipped templates, real haproxy, the heap cap the
 * manifests give.
 *
 *   npm run bench:one-file     (SIZES=1000,10000 RUNS=2 by default; under a minute per size)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { stringify } from 'yaml';
import { freePort } from '../test/support/ports.ts';
import { type HealthFigures, startHealthProbe } from './health-probe.ts';
import { shippedRuntime } from './shipped-runtime.ts';
import { sleep, startLocal, tempDir, until } from './local-run.ts';
import { syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 2);
const root = new URL('..', import.meta.url).pathname;
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

interface OneFileResult {
  size: number;
  fileMib: number;
  coldStartMs: number;
  health: HealthFigures;
  rssMib: number;
  heapMib: number;
  loadAverage: string;
}

const cap = await shippedRuntime();

async function measure(size: number): Promise<OneFileResult> {
  const tmp = await tempDir('haprx-one-file-');
  const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: 0 });
  const text = [...cluster.services, ...cluster.endpointslices, ...cluster.ingresses].map((o) => stringify(o)).join('---\n');
  await writeFile(join(tmp.manifests, 'cluster.yaml'), text);
  const healthPort = await freePort();
  const metricsPort = await freePort();
  const probe = startHealthProbe(healthPort);
  const started = performance.now();
  const haprx = startLocal({ manifests: tmp.manifests, stateDir: tmp.stateDir, sets: { httpPort: await freePort() }, healthPort, metricsPort, env: cap.env });
  try {
    await until(haprx, 'the first deployment', () => haprx.deployments.length > 0, 300_000);
    const coldStartMs = haprx.deployments[0]!.at - started;
    // The sync's last objects are stored and the first render's bookkeeping done.
    await sleep(2_000);
    const health = await probe.mark('cold start');
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} ([\\d.e+]+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    return {
      size,
      fileMib: Math.round((Buffer.byteLength(text) / 1024 / 1024) * 10) / 10,
      coldStartMs: Math.round(coldStartMs),
      health,
      rssMib: mib(value('process_resident_memory_bytes')),
      heapMib: mib(value('nodejs_heap_size_used_bytes')),
      loadAverage: loadavg().map((l) => l.toFixed(2)).join(', '),
    };
  } finally {
    await probe.stop();
    await haprx.stop();
    await tmp.remove();
  }
}

const results: OneFileResult[] = [];
for (const size of SIZES) {
  for (let run = 0; run < RUNS; run++) {
    const r = await measure(size);
    results.push(r);
    console.log(
      `${size} Ingresses in one ${r.fileMib} MB file: first deployment after ${(r.coldStartMs / 1000).toFixed(1)} s; /healthz max ${r.health.maxMs} ms, p99 ${r.health.p99Ms} ms, ${r.health.over100ms} of ${r.health.n} over 100 ms${r.health.failed ? `, ${r.health.failed} unanswered` : ''}; RSS ${r.rssMib} MiB, main heap ${r.heapMib} MiB (load ${r.loadAverage})`,
    );
  }
}
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/one-file.json`, `${JSON.stringify(results, null, 2)}\n`);
