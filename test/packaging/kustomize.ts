/** Builds the kustomize overlays with the kubectl on the PATH (its built-in kustomize). */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const OVERLAYS = ['k8s/overlays/dev', 'k8s/overlays/production', 'k8s/overlays/no-webhook'] as const;

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

const built = new Map<string, Promise<K8sObject[]>>();

/** The objects `kubectl kustomize DIR` prints (built once per run; callers must not mutate them). */
export function build(dir: string): Promise<K8sObject[]> {
  if (!built.has(dir)) built.set(dir, kustomize(dir));
  return built.get(dir)!;
}

/** A missing kubectl is an error that says how to get one. */
async function kustomize(dir: string): Promise<K8sObject[]> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)('kubectl', ['kustomize', dir], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }));
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('kubectl is not on the PATH: the packaging tests build the overlays with `kubectl kustomize` (install kubectl 1.27 or later, https://kubernetes.io/docs/tasks/tools/)', { cause: err });
    throw new Error(`kubectl kustomize ${dir} failed: ${e.stderr ?? e.message}`, { cause: err });
  }
  return parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject).filter((o) => o !== null);
}

export const find = <T = K8sObject>(objects: K8sObject[], kind: string, name: string): T => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found as T;
};
