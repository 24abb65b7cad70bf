import { syntheticCluster } from './bench/synthetic.ts';
import { writeChunks } from './bench/local-run.ts';
const dir = process.argv[2]!;
const c = syntheticCluster({ ingresses: 10000, endpointsPerService: 5, tlsSecrets: 0 });
await writeChunks(dir, 'services', c.services);
await writeChunks(dir, 'endpointslices', c.endpointslices);
await writeChunks(dir, 'ingresses', c.ingresses);
