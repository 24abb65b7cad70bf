/**
 * Blanking Secret values out of log lines, with the values of 1k and 10k TLS Secrets
 * held (a certificate and a key each: the key whole and each line of its body). The
 * text is what haproxy prints when a reload at that many backends stops the old
 * worker: 3 lines per backend, every one of which haprx logs at debug level. Then
 * the worst line: one holding a key in base64, whose first characters every held
 * key in base64 shares. And what holding the values costs in memory.
 *
 *   npm run bench:scrub          (SIZES=1000,10000 by default)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SecretScrubber } from '../src/observability/redact.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const root = new URL('..', import.meta.url).pathname;

/** A PEM block of `kind` with a body of 64-character lines, distinct per `seed`. */
const pem = (kind: string, seed: number, lines: number) => {
  const body = Array.from({ length: lines }, (_, i) => Buffer.from(`${kind}-${seed}-${i}-`.padEnd(48, 'x')).toString('base64'));
  return `-----BEGIN ${kind}-----\n${body.join('\n')}\n-----END ${kind}-----\n`;
};

/** A full collection, however this was started (`--expose-gc` made available at run time). */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap and typed arrays in use after a full collection. */
function heldMemory(): number {
  // Twice: what the first collection finalizes, the second frees.
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

const rows: Record<string, unknown>[] = [];
for (const n of SIZES) {
  const before = heldMemory();
  const scrubber = new SecretScrubber();
  const learnStart = performance.now();
  for (let i = 0; i < n; i++) {
    const data = { 'tls.crt': Buffer.from(pem('CERTIFICATE', i, 18)).toString('base64'), 'tls.key': Buffer.from(pem('PRIVATE KEY', i, 26)).toString('base64') };
    scrubber.learn({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `tls-${i}`, namespace: `ns-${i % 50}` }, data });
  }
  const learnMs = performance.now() - learnStart;
  const memoryMiB = (heldMemory() - before) / 2 ** 20;
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const backend = `be_ns-${i % 50}_svc-${i}_80`;
    lines.push(`[WARNING]  (4242) : Proxy ${backend} stopped (cumulated conns: FE: 0, BE: 12).`);
    lines.push(`[WARNING]  (4242) : Proxy ${backend} stopped (cumulated conns: FE: 0, BE: 12).`);
    lines.push(`[WARNING]  (4242) : CLI : Proxy ${backend} stopped (cumulated conns: FE: 0, BE: 0).`);
  }
  const start = performance.now();
  let changed = 0;
  for (const line of lines) if (scrubber.scrub(line) !== line) changed++;
  const scrubMs = performance.now() - start;
  if (changed !== 0) throw new Error(`${changed} lines without a secret were changed`);
  // And lines that do hold one are blanked out: the last Secret's key, and the same in base64.
  const key = pem('PRIVATE KEY', n - 1, 26);
  if (scrubber.scrub(`said: ${key.trim()}`) !== 'said: [redacted]') throw new Error('a held key was not blanked out');
  const raw = `data: ${Buffer.from(key).toString('base64')}`;
  const rawStart = performance.now();
  const rawRuns = 100;
  for (let i = 0; i < rawRuns; i++) if (scrubber.scrub(raw) !== 'data: [redacted]') throw new Error('a held key in base64 was not blanked out');
  const rawMs = (performance.now() - rawStart) / rawRuns;
  rows.push({
    secrets: n,
    'values held': scrubber.size,
    'memory MiB': Number(memoryMiB.toFixed(1)),
    'learn ms': Math.round(learnMs),
    'lines of one reload': lines.length,
    'scrub ms, all lines': Math.round(scrubMs),
    'µs per line': Number(((scrubMs * 1000) / lines.length).toFixed(2)),
    'ms for a line holding a key in base64': Number(rawMs.toFixed(2)),
  });
}
console.table(rows);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/scrub.json`, `${JSON.stringify(rows, null, 2)}\n`);
