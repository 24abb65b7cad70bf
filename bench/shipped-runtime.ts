/**
 * The runtime the Kubernetes manifests give the controller: the V8 heap cap (the
 * container's memory limit in k8s/base/deployment.yaml times the percentage its
 * NODE_OPTIONS asks for, `--max-old-space-size-percentage`, which Node.js applies to the
 * cgroup limit) and the container's other literal environment (MALLOC_ARENA_MAX). This
 * machine has no such limit, so the benchmarks pass the resulting size explicitly, with
 * the other options the manifests give; a HEAP_CAP_MIB in the environment overrides the
 * size, and the benchmark's own environment overrides the rest.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';

const QUANTITY: Readonly<Record<string, number>> = { Ki: 1 / 1024, Mi: 1, Gi: 1024 };

export interface ShippedRuntime {
  mib: number;
  source: string;
  nodeOptions: string;
  /** The environment to run haprx with: the container's, then this process's, then NODE_OPTIONS as above. */
  env: NodeJS.ProcessEnv;
}

type DeploymentYaml = {
  spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string }[]; resources?: { limits?: { memory?: string } } }[] } } };
};
const haprxContainer = async (file: string) =>
  (parse(await readFile(new URL(file, import.meta.url), 'utf8')) as DeploymentYaml).spec.template.spec.containers.find((c) => c.name === 'haprx');

/**
 * `overlay` names a kustomize overlay whose patch of the Deployment (`controller.yaml`)
 * sets the container's memory limit, e.g. `production` (1Gi, which docs/kubernetes.md asks
 * for from about 5k Ingresses); without it, the base's limit.
 */
export async function shippedRuntime(overlay?: string): Promise<ShippedRuntime> {
  const container = await haprxContainer('../k8s/base/deployment.yaml');
  const overlaid = overlay ? (await haprxContainer(`../k8s/overlays/${overlay}/controller.yaml`))?.resources?.limits?.memory : undefined;
  const limit = /^(\d+)(Ki|Mi|Gi)$/.exec(overlaid ?? container?.resources?.limits?.memory ?? '');
  const shipped = container?.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
  const percentage = /--max-old-space-size-percentage=(\d+(?:\.\d+)?)/.exec(shipped);
  if (!limit || !percentage) throw new Error('k8s/base/deployment.yaml: expected a memory limit and NODE_OPTIONS with --max-old-space-size-percentage');
  const limitMib = Number(limit[1]) * QUANTITY[limit[2]!]!;
  const override = Number(process.env.HEAP_CAP_MIB);
  const mib = override > 0 ? override : Math.floor((limitMib * Number(percentage[1])) / 100);
  // The shipped options, with the percentage turned into the size it gives in the container.
  const nodeOptions = `${shipped.replace(percentage[0], `--max-old-space-size=${mib}`)} ${process.env.NODE_OPTIONS ?? ''}`.trim();
  const literal = Object.fromEntries((container?.env ?? []).flatMap((e) => (e.value !== undefined && e.name !== 'NODE_OPTIONS' ? [[e.name, e.value]] : [])));
  return { mib, source: override > 0 ? 'HEAP_CAP_MIB' : `${percentage[1]}% of the ${limit[0]} limit${overlaid ? ` of the ${overlay} overlay` : ''}`, nodeOptions, env: { ...literal, ...process.env, NODE_OPTIONS: nodeOptions } };
}
