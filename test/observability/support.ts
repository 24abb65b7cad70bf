/** Helpers for the observability tests: metric values, span trees, captured logs. */
import { Writable } from 'node:stream';
import type { HrTime } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';
import type { Registry } from 'prom-client';
import { createLogger, type Logger } from '../../src/observability/logger.ts';

/** The value of one series, e.g. value(registry, 'haprx_deployments_total', { reason: 'change' }); undefined when absent. */
export async function value(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const base = name.replace(/_(sum|count|bucket)$/, '');
  const metric = registry.getSingleMetric(base);
  if (!metric) throw new Error(`no metric ${base}`);
  const { values } = await metric.get();
  const matches = values.filter((v) => {
    const metricName = (v as { metricName?: string }).metricName ?? base;
    return metricName === name && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want);
  });
  return matches.length === 0 ? undefined : matches.reduce((sum, v) => sum + v.value, 0);
}

/** Parses the Prometheus text format into `name{labels}` → value, labels sorted. */
export function parseExposition(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (!match) continue;
    const labels = [...(match[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    series.set(`${match[1]}${labels.length ? `{${labels.join(',')}}` : ''}`, Number(match[4]));
  }
  return series;
}

export function ms(time: HrTime): number {
  return time[0] * 1000 + time[1] / 1e6;
}

export interface SpanNode {
  name: string;
  start: number;
  end: number;
  attributes: Record<string, unknown>;
  error?: string;
  children: SpanNode[];
}

/** Finished spans as trees, one per trace, children by start time then name. */
export function spanTrees(spans: readonly ReadableSpan[]): SpanNode[] {
  const nodes = new Map<string, SpanNode & { parent?: string; traceId: string }>();
  for (const s of spans) {
    nodes.set(s.spanContext().spanId, {
      name: s.name,
      start: ms(s.startTime),
      end: ms(s.endTime),
      attributes: { ...s.attributes },
      ...(s.status.code === 2 && { error: s.status.message ?? '' }),
      children: [],
      ...(s.parentSpanContext && { parent: s.parentSpanContext.spanId }),
      traceId: s.spanContext().traceId,
    });
  }
  const roots: SpanNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.parent !== undefined ? nodes.get(node.parent) : undefined;
    if (parent) {
      if (parent.traceId !== node.traceId) throw new Error(`span ${node.name} has a parent in another trace`);
      parent.children.push(node);
    } else roots.push(node);
  }
  const order = (list: SpanNode[]) => {
    list.sort((a, b) => a.start - b.start || a.name.localeCompare(b.name));
    for (const n of list) order(n.children);
  };
  order(roots);
  return roots;
}

/** name[start-end](children) — a whole tree on one line, for exact comparison. */
export function outline(node: SpanNode): string {
  const children = node.children.length ? `(${node.children.map(outline).join(' ')})` : '';
  return `${node.name}[${node.start}-${node.end}]${node.error !== undefined ? '!' : ''}${children}`;
}

/** A logger that writes JSON lines into an array. */
export function capturedLogger(level = 'debug'): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { log: createLogger({ destination, level, pretty: false }), lines };
}
