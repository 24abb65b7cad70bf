/**
 * The Grafana dashboard and the alert rules in k8s/monitoring: valid PromQL (checked
 * by promtool), and every metric they name exists in the controller's registry. The
 * metric table in docs/observability.md is the one the registry generates.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { ReconcileLifecycle } from '../../src/observability/lifecycle.ts';
import { metricsTable, withTable } from '../../src/observability/metrics-doc.ts';
import { ControllerMetrics } from '../../src/observability/metrics.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const RULES = join(ROOT, 'k8s/monitoring/haprx-alerts.rules.yaml');
const DASHBOARD = join(ROOT, 'k8s/monitoring/haprx-dashboard.json');

/** Every series name the registry exposes, histograms with their _bucket, _sum and _count. */
function exposedNames(): Set<string> {
  const metrics = new ControllerMetrics({ lifecycle: new ReconcileLifecycle(), resourceCounts: () => new Map(), now: Date.now });
  const names = new Set<string>();
  for (const m of metrics.registry.getMetricsAsArray() as unknown as { name: string; type: string }[]) {
    names.add(m.name);
    if (m.type === 'histogram' || m.type === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) names.add(m.name + suffix);
  }
  return names;
}

/** The metric names an expression uses: words of haprx_, process_ and nodejs_ outside strings. */
function metricNames(expr: string): string[] {
  const code = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...code.matchAll(/\b(?:haprx|process|nodejs)_[a-zA-Z0-9_]+\b/g)].map((m) => m[0]);
}

interface Rule {
  alert: string;
  expr: string;
}

interface Panel {
  title: string;
  targets?: { expr: string }[];
}

describe('monitoring: dashboard and alert rules', () => {
  const names = exposedNames();

  it('has alert rules that promtool accepts', async () => {
    const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', RULES]);
    assert.match(stdout, /SUCCESS: \d+ rules found/);
  });

  it('names in its alert rules only metrics the registry exposes, and every rule reads haprx', async () => {
    const rules = (parse(await readFile(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
    assert.ok(rules.length >= 10);
    for (const rule of rules) {
      const used = metricNames(rule.expr);
      assert.ok(used.length > 0 || /\bup\{job="haprx"\}/.test(rule.expr), `${rule.alert} reads no haprx metric`);
      for (const name of used) assert.ok(names.has(name), `${rule.alert}: ${name} is not a metric haprx exposes`);
    }
    // The check can fail: a misspelt name is caught.
    assert.equal(names.has('haprx_reconcile_errors_total'), false);
  });

  it('has a dashboard whose every query is valid PromQL over metrics the registry exposes', async () => {
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as { uid: string; panels: Panel[]; templating: { list: { name: string }[] } };
    assert.deepEqual(dashboard.templating.list.map((v) => v.name), ['datasource', 'job', 'instance']);
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    assert.ok(exprs.length >= 25, `${exprs.length} queries`);
    const used = new Set<string>();
    for (const { panel, expr } of exprs) {
      for (const name of metricNames(expr)) {
        assert.ok(names.has(name), `panel "${panel}": ${name} is not a metric haprx exposes`);
        used.add(name.replace(/_(bucket|sum|count)$/, ''));
      }
    }
    // Every haprx metric is on the dashboard somewhere.
    const haprx = [...names].filter((n) => n.startsWith('haprx_') && !/_(bucket|sum|count)$/.test(n));
    assert.deepEqual(haprx.filter((n) => !used.has(n)), []);
    // promtool checks the PromQL, with Grafana's variables filled in, as recording rules.
    const dir = await mkdtemp(join(tmpdir(), 'haprx-dashboard-'));
    try {
      const fill = (expr: string) => expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', '.*').replaceAll('$instance', '.*');
      const file = join(dir, 'rules.yaml');
      await writeFile(file, stringify({ groups: [{ name: 'dashboard', rules: exprs.map((e, i) => ({ record: `haprx:dashboard_query_${i}`, expr: fill(e.expr) })) }] }));
      const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', file]);
      assert.match(stdout, new RegExp(`SUCCESS: ${exprs.length} rules found`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('lists every metric in docs/observability.md and the README exactly as the registry describes it', async () => {
    const doc = await readFile(join(ROOT, 'docs/observability.md'), 'utf8');
    assert.equal(withTable(doc, metricsTable()), doc, 'run: npm run docs:metrics -- --write docs/observability.md');
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    assert.equal(withTable(readme, metricsTable()), readme, 'run: npm run docs:metrics -- --write README.md');
    for (const name of names) if (!/_(bucket|sum|count)$/.test(name) || !names.has(name.replace(/_(bucket|sum|count)$/, ''))) assert.ok(doc.includes(`\`${name}\``), name);
  });
});
