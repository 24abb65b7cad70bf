/**
 * What the validating admission webhook decides about one submitted object.
 *
 * For an Ingress or a Gateway API route (any watched set of those resources), the
 * running templates render the cluster the controller already holds, with the
 * submitted object applied, and the object is refused when the render would skip
 * it (a warning on the object that says so; the message names the field), when
 * the render would fail, or when the structural check would refuse the result;
 * in the last two cases only if the cluster without the object renders cleanly,
 * so that templates already broken never block every object. An UPDATE is
 * refused only for what it introduces: an object already skipped can still be
 * changed (a label, a finalizer) or deleted.
 *
 * Only what the object can affect is rendered: its own sets hold just the objects
 * that share a host with it (a host claimed twice is how Ingresses meet), every
 * other set is the controller's own store as it is. So the cost of a review does
 * not grow with the number of Ingresses or routes (it does with any set the
 * templates walk whole, such as the Services).
 *
 * For the controller ConfigMap, the new configuration is decoded and its
 * templates compiled, not run: the request may come from anyone who reaches the
 * port, and the template realm bounds a render's time but not its memory.
 *
 * Nothing here does IO, runs haproxy or reads the cluster: a review is the render
 * (with its time limit) and a comparison of warnings.
 */
import type { ControllerConfig, WatchedResource } from '../config/controller-config.ts';
import type { RenderWarning } from '../events.ts';
import { StructureMemo, checkStructure } from '../haproxy/structure.ts';
import { configMapToRaw } from '../k8s/config-map.ts';
import type { KubeObject } from '../k8s/resource.ts';
import { objectKey } from '../k8s/resource.ts';
import { fieldSelector, labelSelector } from '../k8s/selector.ts';
import { type ResourceView, Store } from '../k8s/store.ts';
import { loadControllerConfig } from '../cli/load-config.ts';
import { type CompiledTemplates, type RenderResult, renderTemplates } from '../templating/engine.ts';
import type { AdmissionRequest, Verdict } from './review.ts';

/** What the running controller renders with: its configuration and its live stores. */
export interface AdmissionBasis {
  config: ControllerConfig;
  templates: CompiledTemplates;
  values: Readonly<Record<string, unknown>>;
  resources: ReadonlyMap<string, ResourceView>;
}

export interface AdmissionOptions {
  /** The controller's namespace and ConfigMap: the one ConfigMap the webhook reviews. */
  namespace: string;
  configMap: string;
  now?: () => number;
}

/** A warning as the render reports it; the object reference and the skip flag are read when present. */
type Warning = RenderWarning & { ref?: { kind?: string; namespace?: string; name: string }; field?: string; skipped?: boolean };

interface Target {
  kind: string;
  namespace?: string;
  name: string;
}

const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');

/** Ingresses and Gateway API routes: the objects whose values the templates turn into routing. */
export function isReviewedResource(group: string, resource: string): boolean {
  return (group === 'networking.k8s.io' && resource === 'ingresses') || (group === 'gateway.networking.k8s.io' && resource.endsWith('routes'));
}

/** The watched sets an admission request's object would land in. */
export function setsFor(watch: readonly WatchedResource[], group: string, resource: string): WatchedResource[] {
  return watch.filter((w) => groupOf(w.apiVersion) === group && w.resource === resource);
}

export class Admission {
  private readonly options: AdmissionOptions;
  private basis: AdmissionBasis | undefined;
  /** Host keys of stored objects, which never change once stored. */
  private readonly hostKeyCache = new WeakMap<object, readonly string[]>();
  /** The sections of the configuration last checked: a review's two renders differ in the few the object writes. */
  private readonly structure = new StructureMemo();

  constructor(options: AdmissionOptions) {
    this.options = options;
  }

  /** The configuration and stores of the graph that rendered last. */
  setBasis(basis: AdmissionBasis): void {
    this.basis = basis;
  }

  review(request: AdmissionRequest): Verdict {
    const { group, resource } = request.resource;
    if (request.subResource !== undefined || request.operation === 'DELETE' || request.operation === 'CONNECT') return { allowed: true };
    if (group === '' && resource === 'configmaps') return this.reviewConfigMap(request);
    if (!isReviewedResource(group, resource)) return { allowed: true };
    const basis = this.basis;
    if (!basis) return { allowed: true, warnings: ['haprx has not rendered the cluster yet: not checked'] };
    const sets = setsFor(basis.config.watch, group, resource);
    if (sets.length === 0 || !request.object) return { allowed: true };
    if (request.object.metadata.deletionTimestamp !== undefined) return { allowed: true };
    return this.reviewObject(basis, sets, request);
  }

  private reviewObject(basis: AdmissionBasis, sets: WatchedResource[], request: AdmissionRequest): Verdict {
    const object = this.normalise(request.object!, request);
    const old = request.operation === 'UPDATE' && request.oldObject ? this.normalise(request.oldObject, request) : undefined;
    const target: Target = { kind: request.kind.kind, ...(object.metadata.namespace !== undefined && { namespace: object.metadata.namespace }), name: object.metadata.name };
    const label = `${target.kind} ${target.namespace ? `${target.namespace}/` : ''}${target.name}`;
    const keys = new Set([...this.hostKeys(object), ...(old ? this.hostKeys(old) : [])]);
    const render = (subject: KubeObject | undefined) => this.render(basis, sets, keys, objectKey(object), subject);

    const candidate = render(object);
    let baseline: RenderResult | undefined;
    const base = () => (baseline ??= render(old));

    if (!candidate.ok) {
      const before = base();
      const where = `${candidate.error.template}${candidate.error.line !== undefined ? `:${candidate.error.line}` : ''}`;
      if (!before.ok) return { allowed: true, warnings: [`haprx's templates fail without this ${target.kind} too (${where}): not checked`] };
      return { allowed: false, message: `haprx cannot render the configuration with this ${target.kind}: ${where}: ${candidate.error.message}` };
    }
    const mine: Warning[] = candidate.warnings.filter((w) => about(w, target, label));
    const previously = old ? new Set(aboutOnly(base(), target, label).map(warningKey)) : new Set<string>();
    const introduced = mine.filter((w) => !previously.has(warningKey(w)));
    const skips = introduced.filter(isSkip);
    if (skips.length > 0) {
      const reasons = skips.map((w) => {
        // "skipped: …", "spec.tls[0]: skipped, …", "spec.tls[0] skipped: …": the refusal says it already.
        const text = w.message.replace(/^(\S+:? )?skipped[:,]\s*/, '');
        return w.field && !text.startsWith(w.field) ? `${w.field}: ${text}` : text;
      });
      return { allowed: false, message: `haprx would skip ${label}: ${reasons.join('; ')}`, ...(introduced.length > skips.length && { warnings: introduced.filter((w) => !isSkip(w)).map((w) => w.message) }) };
    }
    const problems = checkStructure(candidate.config, this.structure);
    if (problems.length > 0) {
      const before = base();
      const known = new Set(before.ok ? checkStructure(before.config, this.structure).map((p) => p.message) : []);
      const fresh = problems.filter((p) => !known.has(p.message));
      if (before.ok && fresh.length > 0) {
        const [first] = fresh;
        return { allowed: false, message: `with this ${target.kind}, haprx's configuration would not validate: ${first!.file}${first!.line !== undefined ? `:${first!.line}` : ''}: ${first!.message}` };
      }
    }
    return introduced.length > 0 ? { allowed: true, warnings: introduced.map((w) => w.message) } : { allowed: true };
  }

  /**
   * The controller ConfigMap: decoded and its templates compiled. Compiling turns a
   * template into a function without running it (and refuses import() and async
   * code); running a submitted one could exhaust the controller's memory.
   */
  private reviewConfigMap(request: AdmissionRequest): Verdict {
    const { namespace, configMap } = this.options;
    if (request.namespace !== namespace || (request.name ?? request.object?.metadata.name) !== configMap || !request.object) return { allowed: true };
    const raw = configMapToRaw(request.object, `${namespace}/${configMap}`);
    if (!raw.ok) return { allowed: false, message: `haprx cannot use this configuration: ${raw.path}: ${raw.message}` };
    const loaded = loadControllerConfig(raw.raw);
    if (!loaded.ok) return { allowed: false, message: `haprx cannot use this configuration: ${loaded.path}: ${loaded.message}` };
    return { allowed: true };
  }

  /** Renders the basis with the reviewed sets narrowed to the objects that share a host key, plus `subject`. */
  private render(basis: AdmissionBasis, sets: WatchedResource[], keys: ReadonlySet<string>, key: string, subject: KubeObject | undefined): RenderResult {
    const resources = new Map(basis.resources);
    for (const set of sets) {
      const live = basis.resources.get(set.name);
      const focused = new Store(set.name, set);
      for (const o of live?.list() ?? []) {
        if (objectKey(o) !== key && this.hostKeys(o).some((k) => keys.has(k))) focused.apply({ type: 'upsert', resource: set.name, object: o });
      }
      if (subject && belongsTo(set, subject)) focused.apply({ type: 'upsert', resource: set.name, object: subject });
      focused.apply({ type: 'synced', resource: set.name });
      resources.set(set.name, focused);
    }
    return renderTemplates(basis.templates, { resources: Object.fromEntries(resources), values: basis.values }, { ...(basis.config.settings.renderTimeoutMs !== undefined && { timeoutMs: basis.config.settings.renderTimeoutMs }) });
  }

  /**
   * The hosts an Ingress or route routes for, lowercased; '' for rules without a
   * host (they meet every other rule without one).
   */
  private hostKeys(o: KubeObject): readonly string[] {
    const cached = this.hostKeyCache.get(o);
    if (cached) return cached;
    const keys = new Set<string>();
    const spec = o.spec as Record<string, unknown> | undefined;
    const add = (v: unknown) => keys.add(typeof v === 'string' ? v.toLowerCase() : '');
    if (spec && typeof spec === 'object') {
      for (const rule of asList(spec.rules)) add((rule as { host?: unknown } | null)?.host ?? '');
      for (const tls of asList(spec.tls)) for (const host of asList((tls as { hosts?: unknown } | null)?.hosts)) add(host);
      const hostnames = asList(spec.hostnames);
      for (const host of hostnames) add(host);
      if ('hostnames' in spec && hostnames.length === 0) add('');
    }
    if (keys.size === 0) keys.add('');
    const result = [...keys];
    if (Object.isFrozen(o)) this.hostKeyCache.set(o, result);
    return result;
  }

  /** The submitted object as the API server will store it: namespaced, named, with a creation time. */
  private normalise(o: KubeObject, request: AdmissionRequest): KubeObject {
    const metadata = { ...o.metadata };
    if (metadata.namespace === undefined && request.namespace !== undefined) metadata.namespace = request.namespace;
    if (typeof metadata.name !== 'string' || metadata.name === '') metadata.name = request.name ?? `${typeof metadata.generateName === 'string' ? metadata.generateName : ''}under-review`;
    if (metadata.creationTimestamp === undefined) metadata.creationTimestamp = new Date((this.options.now ?? Date.now)()).toISOString().replace(/\.\d+Z$/, 'Z');
    return { ...o, apiVersion: o.apiVersion ?? `${request.kind.group ? `${request.kind.group}/` : ''}${request.kind.version}`, kind: o.kind ?? request.kind.kind, metadata };
  }
}

function asList(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** Whether the object is one the set watches: its namespace and selectors admit it. */
function belongsTo(set: WatchedResource, o: KubeObject): boolean {
  if (set.namespace !== undefined && set.namespace !== '' && o.metadata.namespace !== set.namespace) return false;
  for (const selector of [labelSelector(set.labelSelector), fieldSelector(set.fieldSelector)]) {
    if (selector.ok && !selector.matches(o)) return false;
  }
  return true;
}

function about(w: Warning, target: Target, label: string): boolean {
  if (w.ref) return w.ref.name === target.name && (w.ref.namespace ?? undefined) === target.namespace && (w.ref.kind === undefined || w.ref.kind === target.kind);
  return w.object === label;
}

function aboutOnly(result: RenderResult, target: Target, label: string): Warning[] {
  return result.ok ? result.warnings.filter((w) => about(w, target, label)) : [];
}

/** A warning that leaves the object, or a part of it, out of the configuration. */
function isSkip(w: Warning): boolean {
  return w.skipped === true || /(^|\s)skipped\b/.test(w.message);
}

const warningKey = (w: Warning) => `${w.field ?? ''}\u0000${w.message}`;
