/**
 * Every benchmark in turn: render, the check of a change, certificate changes,
 * admission reviews, log scrubbing, change latency (in local mode, then in a cluster),
 * scale (memory, cold start, burst), a start from one manifest file, cold starts in a row and Data Plane
 * fan-out, then a check that a benchmark ends when haprx dies, then the table of scale
 * targets (bench/summary.ts). Each prints its table; the JSON lands in bench/results/,
 * summary.json holding the targets. Takes about 50 minutes at the default sizes; set
 * SIZES, ITERATIONS or CHURN_SECONDS for a shorter run.
 *
 *   npm run bench
 */
import { spawnSync } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import type { DiesResult } from './summary.ts';

const root = new URL('..', import.meta.url).pathname;
const scripts = ['bench/render.ts', 'bench/check.ts', 'bench/certificates.ts', 'bench/admission.ts', 'bench/scrub.ts', 'bench/endpoint-latency.ts', 'bench/cluster-latency.ts', 'bench/scale.ts', 'bench/one-file.ts', 'bench/cold-start.ts', 'bench/fanout.ts'];
let failed = 0;
for (const script of scripts) {
  console.log(`\n== ${script}`);
  const run = spawnSync(process.execPath, [script], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) {
    failed++;
    console.log(`${script} failed (exit ${run.status ?? run.signal})`);
  }
}

// haprx killed once its initial sync is deployed: the benchmark must say so and end, not hang.
console.log('\n== bench/scale.ts with haprx killed after the initial sync');
const t0 = performance.now();
const dying = spawnSync(process.execPath, ['bench/scale.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, SIZES: '1000', KILL_AFTER_SYNC: '1', SCALE_RESULT: 'scale-killed.json' },
  timeout: 180_000,
});
const dies: DiesResult = { exitCode: dying.status, seconds: Math.round((performance.now() - t0) / 100) / 10, hung: dying.signal !== null };
await writeFile(`${root}bench/results/dies.json`, `${JSON.stringify(dies, null, 2)}\n`);

const summary = spawnSync(process.execPath, ['bench/summary.ts'], { cwd: root, stdio: 'inherit' });
if (summary.status !== 0) failed++;
const written = await readdir(`${root}bench/results`).catch(() => []);
console.log(`\nJSON results: ${written.map((f) => `bench/results/${f}`).join(', ') || 'none'}`);
process.exitCode = failed === 0 ? 0 : 1;
