import type { KubeApi } from './api.ts';
import { type KubeObject, type ResourceChange, objectKey } from './resource.ts';

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
}

/** Ingresses are what get a status; a watched set of them is recognised by its apiVersion and resource. */
export function isIngressSet(watch: { apiVersion: string; resource: string }): boolean {
  return watch.apiVersion === 'networking.k8s.io/v1' && watch.resource === 'ingresses';
}

function normalise(list: readonly LoadBalancerIngress[]): LoadBalancerIngress[] {
  const seen = new Set<string>();
  const out: LoadBalancerIngress[] = [];
  for (const entry of list) {
    const item: LoadBalancerIngress = { ...(entry.ip && { ip: entry.ip }), ...(entry.hostname && { hostname: entry.hostname }) };
    const key = JSON.stringify(item);
    if ((item.ip || item.hostname) && !seen.has(key)) {
      seen.add(key);
      out.push(item);
    }
  }
  return out.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/**
 * The addresses a Service publishes: its load balancer's (ip or hostname), else its
 * external IPs. A ClusterIP or NodePort Service without them publishes nothing.
 */
export function serviceAddresses(service: KubeObject): LoadBalancerIngress[] {
  const status = service.status as { loadBalancer?: { ingress?: LoadBalancerIngress[] } } | undefined;
  const lb = normalise(status?.loadBalancer?.ingress ?? []);
  if (lb.length > 0) return lb;
  const spec = service.spec as { externalIPs?: string[] } | undefined;
  return normalise((spec?.externalIPs ?? []).map((ip) => ({ ip })));
}

/** The Ingress's current status.loadBalancer.ingress, normalised for comparison. */
export function ingressAddresses(ingress: KubeObject): LoadBalancerIngress[] {
  const status = ingress.status as { loadBalancer?: { ingress?: LoadBalancerIngress[] } } | undefined;
  return normalise(status?.loadBalancer?.ingress ?? []);
}

export function sameAddresses(a: readonly LoadBalancerIngress[], b: readonly LoadBalancerIngress[]): boolean {
  return JSON.stringify(normalise(a)) === JSON.stringify(normalise(b));
}

interface Tracked {
  namespace: string;
  name: string;
  resourceVersion: string;
  current: LoadBalancerIngress[];
}

export interface IngressStatusOptions {
  /** Names of the watched sets that hold Ingresses. */
  ingressSets: ReadonlySet<string>;
  /** Delay before a failed write is tried again. */
  retryMs?: number;
  onNotice?: (message: string) => void;
}

/**
 * Keeps Ingress status.loadBalancer equal to the HAProxy Service's address. It only
 * writes while this replica leads, only once the Service is known, and only for an
 * Ingress whose status differs: the write comes back through the watch as an equal
 * status, so nothing loops. It holds no Ingress contents, only their current addresses.
 */
export class IngressStatusWriter {
  private readonly api: KubeApi;
  private readonly options: IngressStatusOptions;
  private readonly ingresses = new Map<string, Tracked>();
  /** What was written per Ingress and at which of its versions, so a write is not repeated before its echo arrives. */
  private readonly pending = new Map<string, string>();
  private desired: LoadBalancerIngress[] | undefined;
  private leader = false;
  private running = false;
  private again = false;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  writes = 0;

  /** Writes still awaiting their echo through the watch. */
  get awaitingEcho(): number {
    return this.pending.size;
  }

  constructor(api: KubeApi, options: IngressStatusOptions) {
    this.api = api;
    this.options = options;
  }

  onChange(change: ResourceChange): void {
    if (change.type === 'problem' || change.type === 'synced' || !this.options.ingressSets.has(change.resource)) return;
    if (change.type === 'replace') {
      for (const key of [...this.ingresses.keys()]) if (key.startsWith(`${change.resource}\u0000`)) this.ingresses.delete(key);
      for (const object of change.objects) this.track(change.resource, object);
    } else if (change.type === 'upsert') this.track(change.resource, change.object);
    else {
      this.ingresses.delete(`${change.resource}\u0000${objectKey(change.object)}`);
      this.pending.delete(objectKey(change.object));
    }
    this.kick();
  }

  /** The Service's addresses; undefined while the Service is not known (then nothing is written). */
  setAddresses(addresses: readonly LoadBalancerIngress[] | undefined): void {
    this.desired = addresses && normalise(addresses);
    this.kick();
  }

  setLeader(leader: boolean): void {
    this.leader = leader;
    if (leader) this.pending.clear();
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
  }

  private track(set: string, object: KubeObject): void {
    this.ingresses.set(`${set}\u0000${objectKey(object)}`, {
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
      resourceVersion: object.metadata.resourceVersion ?? '',
      current: ingressAddresses(object),
    });
  }

  private kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.writeAll().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async writeAll(): Promise<void> {
    const desired = this.desired;
    if (this.stopped || !this.leader || desired === undefined) return;
    const wanted = JSON.stringify(desired);
    const objectKeys = new Set<string>();
    let failed = false;
    for (const ingress of [...this.ingresses.values()]) {
      const target = `${ingress.namespace}/${ingress.name}`;
      // One Ingress may be in two sets; write it once.
      if (objectKeys.has(target)) continue;
      objectKeys.add(target);
      const mark = `${ingress.resourceVersion}\u0000${wanted}`;
      if (sameAddresses(ingress.current, desired)) {
        // The echo arrived.
        this.pending.delete(target);
        continue;
      }
      if (this.pending.get(target) === mark) continue;
      if (this.stopped || !this.leader) return;
      const result = await this.api.request(
        'PATCH',
        { apiVersion: 'networking.k8s.io/v1', resource: 'ingresses', namespace: ingress.namespace, name: ingress.name, subresource: 'status' },
        { body: { status: { loadBalancer: { ingress: desired } } }, contentType: 'application/merge-patch+json' },
      );
      if (result.ok) {
        this.writes++;
        this.pending.set(target, mark);
      } else if (result.status !== 404) {
        failed = true;
        this.options.onNotice?.(`cannot update the status of Ingress ${target}: ${result.message}`);
      }
    }
    // Forget writes whose Ingress is gone: only writes awaiting their echo are kept.
    for (const target of [...this.pending.keys()]) if (!objectKeys.has(target)) this.pending.delete(target);
    if (failed && !this.stopped) {
      clearTimeout(this.retry);
      this.retry = setTimeout(() => this.kick(), this.options.retryMs ?? 5_000);
    }
  }
}
