/**
 * What a render costs to check after the one before passed, on the shipped templates'
 * output for synthetic clusters of 1k and 10k Ingresses: `haproxy -c` on the whole render
 * against the check haprx runs instead (src/haproxy/unchanged-check.ts: the render
 * without what did not change), and the time to find that smaller render (its steps
 * run at once, so the sum of the turns it takes in haprx).
 *
 * - new backend: an Ingress added for a new Service (a new host, a new backend);
 * - endpoint moved: one EndpointSlice moved (what a render confirming a change on the
 *   fast path checks).
 *
 *   npm run bench:check          (SIZES=1000,10000 RUNS=5 by default)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { configOfSteps } from '../src/haproxy/plan.ts';
import { unchangedCheckSteps } from '../src/haproxy/unchanged-check.ts';
import { runHaproxyCheck } from '../src/haproxy/validate.ts';
import type { KubeObject } from '../src/k8s/resource.ts';
import { Store } from '../src/k8s/store.ts';
import { runSteps } from '../src/steps.ts';
import { renderTemplates } from '../src/templating/engine.ts';
import type { RenderedConfig, RenderedFiles } from '../src/templating/rendered.ts';
import { endpointSlice, shippedTemplates, syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 5);
const root = new URL('..', import.meta.url).pathname;

const { config, templates } = await shippedTemplates();
const values = { ...config.values, httpPort: 18080, bindAddress: '127.0.0.1' };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** haproxy -c on `files`, in ms; throws unless it passed without a word. */
async function checkMs(files: RenderedFiles, what: string): Promise<number> {
  const started = performance.now();
  const outcome = await runHaproxyCheck(files, { haproxyBin: 'haproxy', timeoutMs: 120_000, tmpDir: tmpdir() });
  const ms = performance.now() - started;
  if (outcome.kind !== 'exited' || outcome.code !== 0 || outcome.errors.length > 0 || outcome.warnings.length > 0) throw new Error(`haproxy -c of ${what}: ${JSON.stringify(outcome).slice(0, 500)}`);
  return ms;
}

function render(stores: Map<string, Store>): RenderedConfig {
  const result = renderTemplates(templates, { resources: Object.fromEntries(stores), values });
  if (!result.ok) throw new Error(`${result.error.template}:${result.error.line}: ${result.error.message}`);
  return result.config;
}

const rows: Record<string, unknown>[] = [];
for (const n of SIZES) {
  const cluster = syntheticCluster({ ingresses: n, endpointsPerService: 5, tlsSecrets: 0 });
  const stores = new Map(config.watch.map((w) => [w.name, new Store(w.name, w)]));
  const put = (resource: string, object: KubeObject) => stores.get(resource)!.apply({ type: 'upsert', resource, object });
  for (const [name, objects] of Object.entries(cluster)) if (stores.has(name)) for (const object of objects) put(name, object);
  const passed = render(stores);

  // One Ingress for a new Service, as syntheticCluster makes the others.
  const extra = syntheticCluster({ ingresses: n + 1, endpointsPerService: 5, tlsSecrets: 0 });
  put('services', extra.services[n]!);
  put('endpointslices', extra.endpointslices[n]!);
  put('ingresses', extra.ingresses[n]!);
  const newBackend = render(stores);
  // Back to the cluster that passed, then one EndpointSlice moved.
  for (const [resource, list] of [['ingresses', extra.ingresses], ['endpointslices', extra.endpointslices], ['services', extra.services]] as const) {
    const { name, namespace } = list[n]!.metadata;
    stores.get(resource)!.apply({ type: 'delete', resource, object: { ...list[n]!, metadata: { name, namespace } } });
  }
  put('endpointslices', endpointSlice(0, 5, 1, 'moved'));
  const endpointMoved = render(stores);

  for (const [change, next] of [['new backend', newBackend], ['endpoint moved', endpointMoved]] as const) {
    const finding: number[] = [];
    let small;
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      small = runSteps(unchangedCheckSteps(passed, next, configOfSteps));
      finding.push(performance.now() - started);
    }
    if (!small) throw new Error(`${change} at ${n}: no smaller check`);
    const whole: number[] = [];
    const smaller: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      whole.push(await checkMs(next, `${change}, whole`));
      smaller.push(await checkMs(small.files, `${change}, smaller`));
    }
    rows.push({
      ingresses: n,
      change,
      'left out': small.kind,
      'backends checked': (small.files.main.match(/^backend /gm) ?? []).length,
      'servers checked': (small.files.main.match(/^\s*server /gm) ?? []).length,
      [`whole haproxy -c ms (median of ${RUNS})`]: Math.round(median(whole)),
      'smaller haproxy -c ms': Math.round(median(smaller)),
      'finding the smaller ms': Math.round(median(finding)),
    });
  }
}
console.table(rows);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/check.json`, `${JSON.stringify(rows, null, 2)}\n`);
