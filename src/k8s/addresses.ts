import type { KubeObject } from './resource.ts';

/** An address a load balancer publishes, as Service and Ingress status hold it. */
export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
}

/** Without duplicates or empty entries, in a fixed order, for comparison. */
export function normaliseAddresses(list: readonly LoadBalancerIngress[]): LoadBalancerIngress[] {
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
  const lb = normaliseAddresses(status?.loadBalancer?.ingress ?? []);
  if (lb.length > 0) return lb;
  const spec = service.spec as { externalIPs?: string[] } | undefined;
  return normaliseAddresses((spec?.externalIPs ?? []).map((ip) => ({ ip })));
}
