/**
 * haprx_propagation_seconds as the latency benchmarks read it: from the change seen to
 * the deployment complete, without the way the change reached haprx (file watching,
 * a watch stream) or the benchmark's polling.
 */

/** What one kind of change took by haprx_propagation_seconds: the bucket bounds p50 and p99 fall in. */
export interface PropagationFigures {
  n: number;
  p50AtMostMs: number;
  p99AtMostMs: number;
}

/** haprx_propagation_seconds buckets, summed over paths: upper bound in ms → cumulative count. */
export async function propagationBuckets(metricsPort: number): Promise<Map<number, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const buckets = new Map<number, number>();
  for (const m of text.matchAll(/^haprx_propagation_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\d+)$/gm)) {
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]) * 1000;
    buckets.set(le, (buckets.get(le) ?? 0) + Number(m[2]));
  }
  return buckets;
}

/** The smallest bucket bound under which a share `q` of the changes between two readings fell. */
export function propagationFigures(before: Map<number, number>, after: Map<number, number>): PropagationFigures {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const count = (le: number) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const n = count(Infinity);
  const atMost = (q: number) => bounds.find((le) => count(le) >= q * n) ?? Infinity;
  return { n, p50AtMostMs: atMost(0.5), p99AtMostMs: atMost(0.99) };
}

/** The sample at percentile `p` of sorted `samples`. */
export const percentile = (samples: readonly number[], p: number): number => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
