/**
 * The metric list for the docs, generated from the controller's registry so that it
 * cannot drift from the code:
 *
 *   npm run docs:metrics                                   prints the markdown table
 *   npm run docs:metrics -- --write docs/observability.md  replaces it between the markers
 */
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { ReconcileLifecycle } from './lifecycle.ts';
import { ControllerMetrics } from './metrics.ts';

export const START = '<!-- metrics:start (npm run docs:metrics -- --write docs/observability.md) -->';
export const END = '<!-- metrics:end -->';

interface Described {
  name: string;
  help: string;
  type: string;
  labelNames?: readonly string[];
}

/** haprx_ metrics first, then the process and Node.js ones, each group by name. */
export function metricsTable(): string {
  const metrics = new ControllerMetrics({ lifecycle: new ReconcileLifecycle(), resourceCounts: () => new Map(), now: Date.now });
  const described = metrics.registry.getMetricsAsArray() as unknown as Described[];
  const rows = [...described].sort((a, b) => Number(!a.name.startsWith('haprx_')) - Number(!b.name.startsWith('haprx_')) || a.name.localeCompare(b.name));
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return [
    '| metric | type | labels | meaning |',
    '|---|---|---|---|',
    ...rows.map((m) => `| \`${m.name}\` | ${m.type} | ${(m.labelNames ?? []).map((l) => `\`${l}\``).join(', ')} | ${cell(m.help)} |`),
  ].join('\n');
}

/** The document with the table between the markers replaced. */
export function withTable(document: string, table: string): string {
  const start = document.indexOf(START);
  const end = document.indexOf(END);
  if (start < 0 || end < start) throw new Error(`the markers ${START} and ${END} are missing`);
  return `${document.slice(0, start + START.length)}\n${table}\n${document.slice(end)}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const table = metricsTable();
  const at = process.argv.indexOf('--write');
  if (at > 0 && process.argv[at + 1]) {
    const file = process.argv[at + 1]!;
    await writeFile(file, withTable(await readFile(file, 'utf8'), table));
    process.stdout.write(`wrote the metric table into ${file}\n`);
  } else process.stdout.write(`${table}\n`);
}
