import assert from 'node:assert/strict';
import type { RenderError } from '../../src/events.ts';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { ChangeRef } from '../../src/events.ts';
import type { KubeObject, ResourceChange } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { type CompiledTemplates, type RenderInput, type TemplateSet, compileTemplates, renderTemplates } from '../../src/templating/engine.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { changeRef } from '../../streams/trigger.ts';

/** A real Store filled through its change API, as the watch streams fill it. */
export function storeOf(name: string, objects: readonly KubeObject[]): Store {
  const store = new Store(name);
  for (const object of objects) store.apply({ type: 'upsert', resource: name, object });
  return store;
}

export function service(namespace: string, name: string, port: number, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace, name }, spec: { ports: [{ name: 'http', port }] }, ...extra };
}

export function compiled(set: TemplateSet): CompiledTemplates {
  const result = compileTemplates(set);
  if (!result.ok) assert.fail(`expected the set to compile, got ${JSON.stringify(result.errors)}`);
  return result.templates;
}

export const noInput: RenderInput = { resources: {}, values: {} };

export function rendered(templates: CompiledTemplates, input: RenderInput = noInput): RenderedConfig {
  const result = renderTemplates(templates, input);
  if (!result.ok) assert.fail(`expected the render to succeed, got ${JSON.stringify(result.error)}`);
  return result.config;
}

/** Compiles the set and renders it, expecting the render to fail; returns the error. */
export function renderError(set: TemplateSet, input: RenderInput = noInput): RenderError {
  const templates = compiled(set);
  let result: ReturnType<typeof renderTemplates> | undefined;
  assert.doesNotThrow(() => {
    result = renderTemplates(templates, input);
  });
  assert.ok(result);
  if (result.ok) assert.fail(`expected the render to fail, got ${JSON.stringify(result.config.main)}`);
  return result.error;
}

export function compileErrors(set: TemplateSet): RenderError[] {
  const result = compileTemplates(set);
  if (result.ok) assert.fail('expected the set not to compile');
  return result.errors;
}

/**
 * Splits one haproxy.cfg line into words following the quoting rules of the
 * HAProxy configuration manual (section 2.2), for the subset of syntax the
 * escaper may produce; anything else throws so that a test notices.
 */
export function haproxyWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === '#') {
      break;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated single quote in ${JSON.stringify(line)}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '\\') {
      const next = line[i + 1];
      if (next === undefined || !` \\#'"`.includes(next)) throw new Error(`unexpected escape in ${JSON.stringify(line)}`);
      word = (word ?? '') + next;
      i++;
    } else if (c === '"' || c === '\n' || c === '\r') {
      throw new Error(`unexpected ${JSON.stringify(c)} in ${JSON.stringify(line)}`);
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** Service svc-<i> in namespace shop, with port 80 named `portName`: the fast path tests' cluster, with shopSlice and shopIngress. */
export function shopService(i: number, portName = 'http'): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'shop', name: `svc-${i}` }, spec: { ports: [{ name: portName, port: 80 }] } };
}

/** The EndpointSlice of svc-<i>: each address a ready endpoint, on port `port` named http. */
export function shopSlice(i: number, ips: readonly unknown[], port = 8080): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { namespace: 'shop', name: `svc-${i}-abc`, labels: { 'kubernetes.io/service-name': `svc-${i}` } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port }],
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  };
}

/** Ingress ing-<i>: app-<i>.example.com, every path to svc-<i> port 80. */
export function shopIngress(i: number): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { namespace: 'shop', name: `ing-${i}` },
    spec: { rules: [{ host: `app-${i}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: `svc-${i}`, port: { number: 80 } } } }] } }] },
  };
}

/**
 * The main thread's side of the fast path, as the graph keeps it: unsealed stores with
 * changes applied one by one, and the full render of them.
 */
export function mainThreadCluster(loaded: LoadedConfig) {
  const stores = new Map(loaded.config.watch.map((w) => [w.name, new Store(w.name, { ...w, seal: false })]));
  const apply = (change: ResourceChange): ChangeRef => {
    stores.get(change.type === 'problem' ? '' : change.resource)!.apply(change);
    return changeRef(change);
  };
  const values = { ...loaded.config.values, httpPort: 18080 };
  const full = (): RenderedConfig => {
    const result = renderTemplates(loaded.templates, { resources: Object.fromEntries(stores), values });
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    return result.config;
  };
  return { stores, apply, values, full };
}
