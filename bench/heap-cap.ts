/**
 * The V8 heap cap the Kubernetes manifests give the controller: the container's memory
 * limit in k8s/base/deployment.yaml times the percentage its NODE_OPTIONS asks for
 * (`--max-old-space-size-percentage`, which Node.js applies to the cgroup limit). This
 * machine has no such limit, so the benchmarks pass the resulting size explicitly; a
 * HEAP_CAP_MIB in the environment overrides it.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';

const QUANTITY: Readonly<Record<string, number>> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 };

export async function heapCap(): Promise<{ mib: number; source: string }> {
  if (process.env.HEAP_CAP_MIB) return { mib: Number(process.env.HEAP_CAP_MIB), source: 'HEAP_CAP_MIB' };
  const deployment = parse(await readFile(new URL('../k8s/base/deployment.yaml', import.meta.url), 'utf8')) as {
    spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string }[]; resources?: { limits?: { memory?: string } } }[] } } };
  };
  const container = deployment.spec.template.spec.containers.find((c) => c.name === 'haprx');
  const limit = /^(\d+)(Ki|Mi|Gi)$/.exec(container?.resources?.limits?.memory ?? '');
  const percentage = /--max-old-space-size-percentage=(\d+(?:\.\d+)?)/.exec(container?.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '');
  if (!limit || !percentage) throw new Error('k8s/base/deployment.yaml: expected a memory limit and NODE_OPTIONS with --max-old-space-size-percentage');
  const limitMib = Number(limit[1]) * QUANTITY[limit[2]!]!;
  return { mib: Math.floor((limitMib * Number(percentage[1])) / 100), source: `${percentage[1]}% of the ${limit[0]} limit` };
}
