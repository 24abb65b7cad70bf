import type { Endpoint } from '../events.ts';
import type { KubeObject, ResourceChange } from './resource.ts';

export interface DataplaneAddressing {
  /** The container that runs the Data Plane API; its readiness decides. Without it, the pod's Ready condition does. */
  container?: string;
  port: number;
  scheme: 'http' | 'https';
}

interface PodShape {
  metadata: { name: string; namespace?: string; uid?: string; deletionTimestamp?: string };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: { type?: string; status?: string }[];
    containerStatuses?: { name?: string; ready?: boolean; restartCount?: number }[];
  };
}

/**
 * The Data Plane API endpoint of a pod, when the pod can take a deployment: it
 * runs, has an IP, is not terminating, and its Data Plane container is Ready.
 *
 * Its incarnation is the pod's UID and the restart counts of its containers: a new
 * pod with the same name (a StatefulSet's), or a container that restarted (haproxy,
 * the Data Plane API), is an instance that came back, and gets the current
 * configuration at once rather than at the next drift check.
 */
export function podEndpoint(pod: KubeObject, addressing: DataplaneAddressing): Endpoint | undefined {
  const p = pod as unknown as PodShape;
  const ip = p.status?.podIP;
  if (!ip || p.status?.phase !== 'Running' || p.metadata.deletionTimestamp) return undefined;
  const ready = addressing.container
    ? p.status.containerStatuses?.some((c) => c.name === addressing.container && c.ready === true) === true
    : p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  if (!ready) return undefined;
  const host = ip.includes(':') ? `[${ip}]` : ip;
  const restarts = (p.status.containerStatuses ?? []).reduce((sum, c) => sum + (c.restartCount ?? 0), 0);
  return { id: p.metadata.name, address: `${addressing.scheme}://${host}:${addressing.port}`, incarnation: `${p.metadata.uid ?? ''}/${restarts}` };
}

/**
 * Folds pod changes into the current HAProxy endpoints. `apply` returns the new
 * list (sorted by id) when the set of endpoints changed, and undefined otherwise:
 * a pod update that changes neither address nor readiness is not an endpoint change.
 */
export class EndpointSet {
  private readonly addressing: DataplaneAddressing;
  private readonly byPod = new Map<string, Endpoint>();
  private synced = false;
  private last = '';

  constructor(addressing: DataplaneAddressing) {
    this.addressing = addressing;
  }

  apply(change: ResourceChange): readonly Endpoint[] | undefined {
    switch (change.type) {
      case 'problem':
        return undefined;
      case 'synced':
        this.synced = true;
        break;
      case 'replace':
        this.byPod.clear();
        for (const pod of change.objects) this.set(pod);
        break;
      case 'upsert':
        this.set(change.object);
        break;
      case 'delete':
        this.byPod.delete(podKey(change.object));
        break;
    }
    // Before the first list completes, an empty set means "not known yet".
    if (!this.synced) return undefined;
    const endpoints = [...this.byPod.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const signature = JSON.stringify(endpoints);
    if (signature === this.last && change.type !== 'synced') return undefined;
    this.last = signature;
    return endpoints;
  }

  private set(pod: KubeObject): void {
    const endpoint = podEndpoint(pod, this.addressing);
    if (endpoint) this.byPod.set(podKey(pod), endpoint);
    else this.byPod.delete(podKey(pod));
  }
}

const podKey = (pod: KubeObject) => `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
