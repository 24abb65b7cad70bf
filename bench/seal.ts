/**
 * Storing a cluster as the render thread stores it: every object sealed into the
 * template realm (src/k8s/sealed.ts) and indexed, for the Ingresses, Services and
 * EndpointSlices of synthetic clusters of 1k and 10k Ingresses. This is what a cold
 * start asks of the render thread before its first render, and what each change costs
 * it per object.
 *
 *   npm run bench:seal     (SIZES=1000,10000 RUNS=5)
 */
import { Store } from '../src/k8s/store.ts';
import { syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 5);

for (const size of SIZES) {
  const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: 0 });
  const sets = [
    { name: 'ingresses', objects: cluster.ingresses, indexBy: ['$.metadata.namespace'] },
    { name: 'services', objects: cluster.services, indexBy: ['$.metadata.namespace', '$.metadata.name'] },
    { name: 'endpoints', objects: cluster.endpointslices, indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'] },
  ];
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    for (const set of sets) {
      const store = new Store(set.name, { indexBy: set.indexBy });
      for (const object of set.objects) store.apply({ type: 'upsert', resource: set.name, object });
    }
    times.push(performance.now() - started);
  }
  const objects = sets.reduce((n, s) => n + s.objects.length, 0);
  console.log(`${size} Ingresses, ${objects} objects stored and sealed: first run ${Math.round(times[0]!)} ms, then ${times.slice(1).map(Math.round).join(', ')} ms`);
}
