/**
 * Cold starts of haprx local, one after the other, on one cluster in the files
 * `npm run bench:scale` writes (500 objects a file): the time from starting the
 * process to the end of its first deployment, for each start. The figure moves by
 * half a second from start to start on two cores, so one start says little; this gives
 * the spread. Shipped templates, real haproxy, the heap cap the manifests give.
 *
 *   npm run bench:cold-start     (SIZES=1000,10000 RUNS=5 by default; about 10 s a start at 10k)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { freePort } from '../test/support/ports.ts';
import { shippedRuntime } from './shipped-runtime.ts';
import { startLocal, tempDir, until, writeChunks } from './local-run.ts';
import { syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 5);
const root = new URL('..', import.meta.url).pathname;
const cap = await shippedRuntime();

interface ColdStartResult {
  size: number;
  startsMs: number[];
  medianMs: number;
}

async function measure(size: number): Promise<ColdStartResult> {
  const tmp = await tempDir('haprx-cold-start-');
  try {
    const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: 0 });
    for (const kind of ['services', 'endpointslices', 'ingresses'] as const) await writeChunks(tmp.manifests, kind, cluster[kind]);
    const startsMs: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      // A state folder of its own each time: nothing of the start before is reused.
      const haprx = startLocal({ manifests: tmp.manifests, stateDir: `${tmp.stateDir}-${run}`, sets: { httpPort: await freePort() }, healthPort: await freePort(), metricsPort: await freePort(), env: cap.env });
      try {
        await until(haprx, 'the first deployment', () => haprx.deployments.length > 0, 300_000);
        startsMs.push(Math.round(haprx.deployments[0]!.at - started));
      } finally {
        await haprx.stop();
      }
    }
    const sorted = [...startsMs].sort((a, b) => a - b);
    return { size, startsMs, medianMs: sorted[Math.floor(sorted.length / 2)]! };
  } finally {
    await tmp.remove();
  }
}

const results: ColdStartResult[] = [];
for (const size of SIZES) {
  const r = await measure(size);
  results.push(r);
  console.log(`${size} Ingresses: cold start to the first deployment, median ${(r.medianMs / 1000).toFixed(2)} s; starts ${r.startsMs.map((ms) => (ms / 1000).toFixed(2)).join(', ')} s`);
}
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/cold-start.json`, `${JSON.stringify(results, null, 2)}\n`);
