/**
 * The scale targets, checked against what the benchmarks wrote to bench/results
 * (latency.json from bench:latency, scale.json from bench:scale, dies.json from the
 * check `npm run bench` makes that a benchmark ends when haprx dies): one JSON,
 * bench/results/summary.json, and a markdown table whose rows name the command that
 * reproduces them. A missing result is reported as not measured.
 *
 *   npm run bench:summary
 */
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import type { ModeResult } from './change-latency.ts';
import type { LatencyResult } from './endpoint-latency.ts';
import type { HealthFigures } from './health-probe.ts';
import type { ScaleResult } from './scale.ts';

const results = new URL('./results/', import.meta.url);

export interface DiesResult {
  exitCode: number | null;
  seconds: number;
  /** Whether the benchmark had to be killed because it did not end by itself. */
  hung: boolean;
}

export interface TargetRow {
  metric: string;
  target: string;
  measured: string;
  /** undefined when not measured. */
  met: boolean | undefined;
  command: string;
  /** The 1, 5 and 15 minute load averages when the figure was taken: the machine's own noise. */
  load?: string | undefined;
}

async function readJson<T>(name: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(new URL(name, results), 'utf8')) as T;
  } catch {
    return undefined;
  }
}

const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);
const LATENCY = 'npm run bench:latency';
const SCALE = 'npm run bench:scale';

export function targetRows(latency: LatencyResult[] | undefined, scale: ScaleResult[] | undefined, dies: DiesResult | undefined): TargetRow[] {
  const rows: TargetRow[] = [];
  const notMeasured = (metric: string, target: string, command: string) => rows.push({ metric, target, measured: 'not measured', met: undefined, command });
  const mode = (size: number, prefix: string) => latency?.find((r) => r.ingresses === size)?.modes.find((m) => m.change.startsWith(prefix));
  const at = (size: number) => latency?.find((r) => r.ingresses === size);
  const shown = (m: ModeResult) => `p99 ${m.p99Ms} ms (p50 ${m.p50Ms} ms, n = ${m.n}, ${m.reloads} reloads)`;

  for (const [size, limit] of [[1_000, 25], [10_000, 50]] as const) {
    const m = mode(size, 'endpoint');
    const metric = `endpoint change → traffic, ${size / 1000}k Ingresses (shipped settings)`;
    if (m) rows.push({ metric, target: `p99 ≤ ${limit} ms`, measured: shown(m), met: m.p99Ms <= limit, command: LATENCY, load: at(size)?.loadAverage });
    else notMeasured(metric, `p99 ≤ ${limit} ms`, LATENCY);
  }
  for (const size of [1_000, 10_000]) {
    const m = mode(size, 'new host');
    const metric = `new host on an existing backend, ${size / 1000}k`;
    const target = size === 10_000 ? 'p99 ≤ 100 ms' : '—';
    if (m) rows.push({ metric, target, measured: shown(m), met: size === 10_000 ? m.p99Ms <= 100 : undefined, command: LATENCY, load: at(size)?.loadAverage });
    else notMeasured(metric, target, LATENCY);
  }
  for (const size of [1_000, 10_000]) {
    const m = mode(size, 'new backend');
    const r = at(size);
    const metric = `new backend (one reload), ${size / 1000}k`;
    if (m && r) rows.push({ metric, target: 'p99 ≤ master reload + 200 ms', measured: `${shown(m)}; reload ${r.reloadMs} ms → limit ${r.reloadMs + 200} ms`, met: m.p99Ms <= r.reloadMs + 200, command: LATENCY, load: r.loadAverage });
    else notMeasured(metric, 'p99 ≤ master reload + 200 ms', LATENCY);
  }
  for (const size of [1_000, 10_000]) {
    const r = at(size);
    const metric = `haproxy on the deployed output, ${size / 1000}k: \`haproxy -c\` / master reload`;
    if (r) rows.push({ metric, target: 'reference', measured: `${r.haproxyCheckMs} ms / ${r.reloadMs} ms`, met: undefined, command: LATENCY, load: r.loadAverage });
    else notMeasured(metric, 'reference', LATENCY);
  }

  const big = scale?.find((s) => s.size === 10_000);
  const healthOf = (h: HealthFigures | undefined) => (h ? `max ${h.maxMs} ms (p99 ${h.p99Ms} ms, ${h.over100ms} of ${h.n} over 100 ms${h.failed ? `, ${h.failed} unanswered` : ''})` : 'not measured');
  for (const phase of ['cold start', 'burst', 'churn'] as const) {
    const h = big?.health[phase];
    rows.push({ metric: `/healthz during ${phase}, 10k`, target: 'never > 100 ms', measured: healthOf(h), met: h ? h.maxMs <= 100 && h.failed === 0 : undefined, command: SCALE, load: big?.loadAverage });
  }
  {
    const h = at(10_000)?.healthz;
    rows.push({ metric: '/healthz while changes (and their full renders) ran, 10k', target: 'never > 100 ms', measured: healthOf(h), met: h ? h.maxMs <= 100 && h.failed === 0 : undefined, command: LATENCY, load: at(10_000)?.loadAverage });
  }
  for (const s of scale ?? []) {
    const target = s.size === 10_000 ? '≤ 300 MiB' : '—';
    rows.push({
      metric: `RSS after ${s.churnSeconds} s of churn, ${s.size / 1000}k (heap cap ${s.heapCapMib} MiB per thread)`,
      target,
      measured: `${mib(s.afterChurn.rss)} MiB (after the initial sync ${mib(s.afterSync.rss)} MiB; heap in use ${mib(s.afterChurn.heap)} MiB in the main thread${s.afterChurn.renderHeap === undefined ? '' : `, ${mib(s.afterChurn.renderHeap)} MiB in the render thread`}; the spawn helper beside it ${mib(s.afterChurn.helperRss ?? 0)} MiB)`,
      met: s.size === 10_000 && s.churnSeconds >= 300 ? mib(s.afterChurn.rss) <= 300 : undefined,
      command: SCALE,
      load: s.loadAverage,
    });
    rows.push({ metric: `cold start to first deployment, ${s.size / 1000}k`, target: s.size === 10_000 ? '≤ 5 s' : '—', measured: `${(s.coldStartMs / 1000).toFixed(1)} s`, met: s.size === 10_000 ? s.coldStartMs <= 5_000 : undefined, command: SCALE, load: s.loadAverage });
    rows.push({
      metric: `1,000-change burst, ${s.size / 1000}k: deployments / reloads`,
      target: '≤ 4 / 0',
      measured: `${s.burst.deployments} / ${s.burst.reloads} (then ${s.churnReloads} reloads during churn)`,
      met: s.burst.deployments <= 4 && s.burst.reloads === 0,
      command: SCALE,
      load: s.loadAverage,
    });
  }
  if (!big) notMeasured('RSS, cold start and burst at 10k', 'see above', SCALE);
  rows.push({
    metric: 'the benchmark ends when haprx dies',
    target: 'exits non-zero, no hang',
    measured: dies ? `exit ${dies.exitCode} after ${dies.seconds} s${dies.hung ? ' (hung: killed)' : ''}` : 'not measured',
    met: dies ? !dies.hung && dies.exitCode !== 0 : undefined,
    command: 'KILL_AFTER_SYNC=1 SIZES=1000 npm run bench:scale',
  });
  return rows;
}

export function markdown(rows: readonly TargetRow[]): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  const verdict = (met: boolean | undefined) => (met === undefined ? '' : met ? 'met' : '**missed**');
  return [
    '| metric | target | measured | | load average | command |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${cell(r.metric)} | ${r.target} | ${cell(r.measured)} | ${verdict(r.met)} | ${r.load ?? ''} | \`${r.command}\` |`),
  ].join('\n');
}

if (import.meta.main) {
  const latency = await readJson<LatencyResult[]>('latency.json');
  const scale = await readJson<ScaleResult[]>('scale.json');
  const dies = await readJson<DiesResult>('dies.json');
  const rows = targetRows(latency, scale, dies);
  const load = loadavg().map((l) => l.toFixed(2)).join(', ');
  await writeFile(new URL('summary.json', results), `${JSON.stringify({ loadAverageAtSummary: load, rows, latency, scale, dies }, null, 2)}\n`);
  console.log(`\n${markdown(rows)}\n\nload average when summarised: ${load}; JSON: bench/results/summary.json`);
}
