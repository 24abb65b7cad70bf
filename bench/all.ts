/**
 * Every benchmark in turn: render, admission reviews, change latency, scale (memory,
 * cold start, burst) and Data Plane fan-out. Each prints its table; the JSON lands in
 * bench/results/. Takes about 20 minutes at the default sizes; set SIZE,
 * ITERATIONS or CHURN_SECONDS for a shorter run.
 *
 *   npm run bench
 */
import { spawnSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';

const root = new URL('..', import.meta.url).pathname;
const scripts = ['bench/render.ts', 'bench/admission.ts', 'bench/endpoint-latency.ts', 'bench/scale.ts', 'bench/fanout.ts'];
let failed = 0;
for (const script of scripts) {
  console.log(`\n== ${script}`);
  const run = spawnSync(process.execPath, [script], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) {
    failed++;
    console.log(`${script} failed (exit ${run.status ?? run.signal})`);
  }
}
const written = await readdir(`${root}bench/results`).catch(() => []);
console.log(`\nJSON results: ${written.map((f) => `bench/results/${f}`).join(', ') || 'none'}`);
process.exitCode = failed === 0 ? 0 : 1;
