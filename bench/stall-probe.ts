/**
 * Preloaded into haprx by the benchmarks when PROFILE_DIR is set (spawnHaprx in
 * bench/local-run.ts): a 5 ms interval timer on the main thread that writes every gap over 60 ms, with the
 * monotonic time it ended (µs, the clock of V8's CPU profiles), to
 * `<PROFILE_DIR>/stalls-<pid>.txt`. `node bench/stalls.ts <profile> <stalls>` then lists
 * what the profile shows running in each.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';

const dir = process.env.PROFILE_DIR;
if (isMainThread && dir) {
  const out = join(dir, `stalls-${process.pid}.txt`);
  writeFileSync(out, '');
  let last = process.hrtime.bigint();
  setInterval(() => {
    const now = process.hrtime.bigint();
    const gapMs = Number(now - last) / 1e6;
    if (gapMs > 60) appendFileSync(out, `${now / 1000n} ${gapMs.toFixed(0)}\n`);
    last = now;
  }, 5).unref();
}
