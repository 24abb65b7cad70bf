/** Shared by the webhook tests: the shipped templates over a small cluster, and AdmissionReview requests. */
import { readFile } from 'node:fs/promises';
import { type Agent, request } from 'node:https';
import { parseAllDocuments } from 'yaml';
import { type LoadedConfig, loadControllerConfig } from '../../src/cli/load-config.ts';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { compileWatches } from '../../src/local/manifests.ts';
import { Admission } from '../../src/webhook/admission.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
export const NS = 'haprx-system';
export const CONFIGMAP = 'haprx';

export async function shippedTemplates(): Promise<LoadedConfig> {
  const raw = await readTemplateDir(`${ROOT}templates`);
  if (!raw.ok) throw new Error(raw.message);
  const loaded = loadControllerConfig(raw.raw);
  if (!loaded.ok) throw new Error(`${loaded.path}: ${loaded.message}`);
  return loaded.config;
}

export async function fixtureObjects(...files: string[]): Promise<KubeObject[]> {
  const all: KubeObject[] = [];
  for (const file of files) all.push(...parseAllDocuments(await readFile(`${ROOT}templates/tests/${file}`, 'utf8')).map((d) => d.toJS() as KubeObject));
  return all;
}

/** Stores of every watched set, filled with the objects each set admits, as the graph keeps them. */
export function storesFor(loaded: LoadedConfig, objects: readonly KubeObject[]): Map<string, Store> {
  const watches = compileWatches(loaded.config.watch);
  if (!watches.ok) throw new Error(watches.message);
  const stores = new Map(loaded.config.watch.map((w) => [w.name, new Store(w.name, w)]));
  for (const o of objects) for (const w of watches.watches) if (w.matches(o)) stores.get(w.name)!.apply({ type: 'upsert', resource: w.name, object: o });
  for (const [name, store] of stores) store.apply({ type: 'synced', resource: name });
  return stores;
}

/** An Admission over the shipped templates and these objects, as `haprx run` sets it up after a render. */
export async function admissionOver(objects: readonly KubeObject[], loaded?: LoadedConfig): Promise<{ admission: Admission; stores: Map<string, Store>; loaded: LoadedConfig }> {
  const config = loaded ?? (await shippedTemplates());
  const stores = storesFor(config, objects);
  const admission = new Admission({ namespace: NS, configMap: CONFIGMAP, now: () => Date.parse('2030-01-01T00:00:00Z') });
  admission.setBasis({ config: config.config, templates: config.templates, values: config.config.values, resources: stores });
  return { admission, stores, loaded: config };
}

export const INGRESS = { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress', resource: 'ingresses' };
export const HTTPROUTE = { group: 'gateway.networking.k8s.io', version: 'v1', kind: 'HTTPRoute', resource: 'httproutes' };
export const CONFIG_MAP = { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps' };

let uid = 0;

/** An AdmissionReview v1 request body, as the API server sends it. */
export function reviewBody(
  type: { group: string; version: string; kind: string; resource: string },
  operation: 'CREATE' | 'UPDATE' | 'DELETE',
  object: KubeObject | undefined,
  oldObject?: KubeObject,
): { apiVersion: string; kind: string; request: Record<string, unknown> } {
  const subject = object ?? oldObject!;
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `00000000-0000-4000-8000-${String(++uid).padStart(12, '0')}`,
      kind: { group: type.group, version: type.version, kind: type.kind },
      resource: { group: type.group, version: type.version, resource: type.resource },
      requestKind: { group: type.group, version: type.version, kind: type.kind },
      ...(subject.metadata.namespace !== undefined && { namespace: subject.metadata.namespace }),
      name: subject.metadata.name,
      operation,
      userInfo: { username: 'tester' },
      object: object ?? null,
      oldObject: oldObject ?? null,
      dryRun: false,
    },
  };
}

export function ingress(name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'shop', creationTimestamp: '2029-01-01T00:00:00Z', ...metadata }, spec: { ingressClassName: 'haprx', ...spec } };
}

export const prefix = (host: string | undefined, path: string, service = 'web', port: Record<string, unknown> = { number: 80 }) => ({
  ...(host !== undefined && { host }),
  http: { paths: [{ path, pathType: 'Prefix', backend: { service: { name: service, port } } }] },
});

export function httpRoute(name: string, spec: Record<string, unknown>): KubeObject {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name, namespace: 'shop', creationTimestamp: '2029-01-01T00:00:00Z' }, spec: { parentRefs: [{ name: 'gw' }], ...spec } };
}

/** A request to the webhook over HTTPS, trusting `ca`; never rejects on an HTTP status. */
export function callWebhook(
  port: number,
  body: string | Buffer,
  options: { ca: string; agent?: Agent; path?: string; method?: string; type?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: options.path ?? '/validate', method: options.method ?? 'POST', ca: options.ca, agent: options.agent ?? false, headers: { 'content-type': options.type ?? 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(body);
  });
}
