/**
 * Planning on the fast path, on the main thread as the graph plans: the shipped
 * templates, synthetic clusters of 1k and 10k Ingresses rendered in full once, then
 * changes planned one after another, each on the configuration the one before planned
 * (as between two full renders):
 *
 * - endpoint: an EndpointSlice's endpoint moves (server lines changed at runtime);
 * - host: a new Ingress host on an existing Service (map entries added at runtime).
 *
 * This is the part of "change → traffic" that grows with the cluster; the rest is file
 * watching (local mode), the runtime commands and haproxy.
 *
 *   npm run bench:fast-plan     (SIZES=1000,10000 CHANGES=50)
 */
import { changeRef } from '../streams/trigger.ts';
import { Store } from '../src/k8s/store.ts';
import { renderTemplates } from '../src/templating/engine.ts';
import { planFastPath, warmFastPath } from '../src/templating/fast-maps.ts';
import { prepareFast } from '../src/templating/fast-path.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { endpointSlice, shippedTemplates, syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const CHANGES = Number(process.env.CHANGES ?? 50);
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

const { config, templates } = await shippedTemplates();
for (const size of SIZES) {
  const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: 0 });
  const stores = new Map(config.watch.map((w) => [w.name, new Store(w.name, { ...w, seal: false })]));
  for (const [name, objects] of Object.entries(cluster)) for (const object of objects) stores.get(name)?.apply({ type: 'upsert', resource: name, object });
  const values = { ...config.values, httpPort: 18080, bindAddress: '127.0.0.1' };
  const rendered = renderTemplates(templates, { resources: Object.fromEntries(stores), values });
  if (!rendered.ok) throw new Error(rendered.error.message);
  const input = { templates, values, timeoutMs: 10_000, resources: stores };
  prepareFast(rendered.config);
  warmFastPath(rendered.config, input);
  const kinds = {
    endpoint: (i: number) => {
      const slice = endpointSlice(i % size, 5, 1_000 + i, `moved-${i}`);
      return { type: 'upsert' as const, resource: 'endpointslices', object: slice };
    },
    host: (i: number) => ({
      type: 'upsert' as const,
      resource: 'ingresses',
      object: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: `new-${i}`, namespace: 'ns-1', resourceVersion: '1', creationTimestamp: '2027-01-01T00:00:00Z' },
        spec: { rules: [{ host: `new-${i}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'svc-1', port: { number: 80 } } } }] } }] },
      },
    }),
  };
  for (const [kind, change] of Object.entries(kinds)) {
    let base: RenderedConfig = rendered.config;
    const times: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const upsert = change(i);
      stores.get(upsert.resource)!.apply(upsert);
      const started = performance.now();
      const plan = planFastPath(base, [changeRef(upsert)], input);
      times.push(performance.now() - started);
      if (plan.kind !== 'runtime') throw new Error(`${kind} ${i}: ${plan.kind === 'unsupported' ? plan.reason : plan.kind}`);
      base = plan.config;
    }
    times.sort((a, b) => a - b);
    console.log(`${size} Ingresses, ${kind}: plan p50 ${pct(times, 50).toFixed(1)} ms, p99 ${pct(times, 99).toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms (n=${times.length})`);
  }
}
