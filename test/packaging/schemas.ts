/**
 * Kubernetes schema validation with kubernetes-models (core kinds) and its Gateway API,
 * Prometheus Operator and cert-manager packages: each object's model class is looked
 * up by apiVersion and kind, and its generated JSON-schema validator run.
 */
import type { K8sObject } from './kustomize.ts';

interface ModelClass {
  new (data: unknown): { validate(): void };
}

function modulePath(apiVersion: string, kind: string): string {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (group === 'gateway.networking.k8s.io') return `@kubernetes-models/gateway-api/${group}/${version}/${kind}`;
  if (group === 'monitoring.coreos.com') return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  if (group === 'cert-manager.io') return `@kubernetes-models/cert-manager/${group}/${version}/${kind}`;
  return `kubernetes-models/${group ? `${group}/` : ''}${version}/${kind}`;
}

/** Undefined when the object is valid, else the validator's message; an unknown kind is a problem too. */
export async function schemaProblem(object: K8sObject): Promise<string | undefined> {
  const path = modulePath(object.apiVersion, object.kind);
  let Model: ModelClass | undefined;
  try {
    Model = ((await import(path)) as Record<string, ModelClass>)[object.kind];
  } catch {
    Model = undefined;
  }
  if (!Model) return `no schema for ${object.apiVersion} ${object.kind} (${path})`;
  try {
    new Model(object).validate();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
