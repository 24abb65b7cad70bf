/**
 * What the change-latency benchmarks share (bench/endpoint-latency.ts in local mode,
 * bench/cluster-latency.ts in a cluster): one kind of change made again and again,
 * each polled through haproxy until it is served, and haprx_propagation_seconds read
 * around them, which counts from the change seen to the deployment complete, without
 * the way the change reached haprx (file watching, a watch stream) or the polling here.
 */
import { sleep, until } from './local-run.ts';

/** One kind of change at one size, as the results' JSON holds it. */
export interface ModeResult {
  change: string;
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  reloads: number;
  /** The same changes as haprx_propagation_seconds saw them: the bucket bounds p50 and p99 fall in. */
  propagation: PropagationFigures;
}

export interface PropagationFigures {
  n: number;
  p50AtMostMs: number;
  p99AtMostMs: number;
}

export interface MeasureOptions {
  label: string;
  iterations: number;
  /** The wait before each change, beyond the minimum deployment interval, so that each is the path of one change, not queueing. */
  gapMs: number;
  metricsPort: number;
  /** The haprx under test: a wait fails as soon as it has exited. */
  run: { alive(): void };
  reloads(): Promise<number>;
  /** Makes change `i`; resolves with the check that it is served. */
  change(i: number): Promise<() => Promise<boolean>>;
}

/** Makes the change `iterations` times and gives the figures (the reloads they caused too). */
export async function measureChanges(options: MeasureOptions): Promise<ModeResult> {
  const { label } = options;
  const reloadsBefore = await options.reloads();
  const bucketsBefore = await propagationBuckets(options.metricsPort);
  const samples: number[] = [];
  for (let i = 0; i < options.iterations; i++) {
    await sleep(options.gapMs);
    const started = performance.now();
    const wall = Date.now();
    const served = await options.change(i);
    await until(options.run, label, served, 120_000, 2);
    samples.push(performance.now() - started);
    if (process.env.BENCH_LOG) process.stderr.write(`SAMPLE ${label} ${i} ${Math.round(samples.at(-1)!)} ms, changed at ${wall}\n`);
  }
  samples.sort((a, b) => a - b);
  return {
    change: label,
    n: samples.length,
    p50Ms: Math.round(percentile(samples, 50)),
    p99Ms: Math.round(percentile(samples, 99)),
    maxMs: Math.round(samples.at(-1)!),
    reloads: (await options.reloads()) - reloadsBefore,
    propagation: propagationFigures(bucketsBefore, await propagationBuckets(options.metricsPort)),
  };
}

/** One line for the log. */
export function describeMode(size: number, m: ModeResult): string {
  return `${size} Ingresses, ${m.change}: p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, max ${m.maxMs} ms, reloads ${m.reloads} (n=${m.n}); haprx_propagation_seconds (to the deployment's end): p50 ≤ ${m.propagation.p50AtMostMs} ms, p99 ≤ ${m.propagation.p99AtMostMs} ms (n=${m.propagation.n})`;
}

/** The table's cells for each kind of change. */
export function modeColumns(modes: readonly ModeResult[]): Record<string, string> {
  const column: Record<string, string> = {};
  for (const m of modes) {
    column[`${m.change}, p50 / p99 (reloads)`] = `${m.p50Ms} / ${m.p99Ms} ms (${m.reloads})`;
    column[`${m.change}, haprx_propagation_seconds p50 / p99 at most`] = `${m.propagation.p50AtMostMs} / ${m.propagation.p99AtMostMs} ms`;
  }
  return column;
}

/** haprx_propagation_seconds buckets, summed over paths: upper bound in ms → cumulative count. */
async function propagationBuckets(metricsPort: number): Promise<Map<number, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const buckets = new Map<number, number>();
  for (const m of text.matchAll(/^haprx_propagation_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\d+)$/gm)) {
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]) * 1000;
    buckets.set(le, (buckets.get(le) ?? 0) + Number(m[2]));
  }
  return buckets;
}

/** The smallest bucket bound under which a share `q` of the changes between two readings fell. */
function propagationFigures(before: Map<number, number>, after: Map<number, number>): PropagationFigures {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const count = (le: number) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const n = count(Infinity);
  const atMost = (q: number) => bounds.find((le) => count(le) >= q * n) ?? Infinity;
  return { n, p50AtMostMs: atMost(0.5), p99AtMostMs: atMost(0.99) };
}

/** The sample at percentile `p` of sorted `samples`. */
const percentile = (samples: readonly number[], p: number): number => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
