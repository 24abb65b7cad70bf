/**
 * The deploy stage's `deployTo(endpoint, deployment)` for Data Plane API
 * instances: each endpoint gets its DataplaneTarget (kept across deployments,
 * since it remembers what the instance runs), and unsubscribing (the stage's
 * timeout, a newer deployment) aborts the deployment in flight.
 */
import { Observable } from 'rxjs';
import type { CanaryProbeSettings } from '../config/controller-config.ts';
import type { CanaryCheck, Deployment, Endpoint, InstanceOutcome } from '../events.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import type { Plan } from '../haproxy/plan.ts';
import type { Steps } from '../steps.ts';
import { FLEET_PLANS } from './plan-cache.ts';
import { DataplaneTarget, type DataplaneTargetOptions } from './target.ts';

export type TargetLookup = (endpoint: Endpoint) => DataplaneTarget | undefined;

export function dataplaneDeployTo(lookup: TargetLookup): (endpoint: Endpoint, deployment: Deployment) => Observable<InstanceOutcome> {
  return (endpoint, deployment) =>
    new Observable<InstanceOutcome>((subscriber) => {
      let target: DataplaneTarget | undefined;
      try {
        target = lookup(endpoint);
      } catch (err) {
        subscriber.next({ ok: false, reloaded: false, runtimeOps: 0, error: `no Data Plane target for ${endpoint.id}: ${(err as Error).message}` });
        subscriber.complete();
        return undefined;
      }
      if (!target) {
        subscriber.next({ ok: false, reloaded: false, runtimeOps: 0, error: `no Data Plane target for ${endpoint.id}` });
        subscriber.complete();
        return undefined;
      }
      const controller = new AbortController();
      target.deploy(deployment.config, controller.signal, deployment.fast).then(
        (outcome) => {
          subscriber.next(outcome);
          subscriber.complete();
        },
        (err: unknown) => subscriber.error(err),
      );
      return () => controller.abort();
    });
}

/**
 * One target per endpoint, made from shared settings with the endpoint's
 * address as baseUrl, and replaced when the address or the incarnation changes
 * (a new target knows nothing, and adopts what the instance runs). `retire` drops
 * targets of endpoints that left.
 */
export class DataplaneTargets {
  private readonly targets = new Map<string, { address: string; incarnation: string | undefined; target: DataplaneTarget }>();
  private readonly settings: Omit<DataplaneTargetOptions, 'baseUrl'>;

  constructor(settings: Omit<DataplaneTargetOptions, 'baseUrl'>) {
    this.settings = settings;
  }

  readonly lookup: TargetLookup = (endpoint) => {
    const known = this.targets.get(endpoint.id);
    if (known && known.address === endpoint.address && known.incarnation === endpoint.incarnation) return known.target;
    if (known) void known.target.close();
    const target = new DataplaneTarget({ ...this.settings, baseUrl: endpoint.address });
    this.targets.set(endpoint.id, { address: endpoint.address, incarnation: endpoint.incarnation, target });
    return target;
  };

  /** What an endpoint's target vouches it runs (the canary's view of the fleet); unknown without a target. */
  running(endpoint: Endpoint): RenderedConfig | undefined {
    const known = this.targets.get(endpoint.id);
    return known && known.address === endpoint.address && known.incarnation === endpoint.incarnation ? known.target.running : undefined;
  }

  /** Closes the targets of endpoints not in `current`. */
  async retire(current: readonly Endpoint[]): Promise<void> {
    const keep = new Set(current.map((e) => e.id));
    const gone = [...this.targets].filter(([id]) => !keep.has(id));
    for (const [id] of gone) this.targets.delete(id);
    await Promise.all(gone.map(([, t]) => t.target.close()));
  }

  async close(): Promise<void> {
    const all = [...this.targets.values()];
    this.targets.clear();
    await Promise.all(all.map((t) => t.target.close()));
  }
}

/** Canary rollout's IO over these targets (src/cli/wiring.ts CanaryIO): checks through each instance's target, plans through theirs. */
export function dataplaneCanary(targets: DataplaneTargets): {
  check(endpoint: Endpoint, since: number, probe: CanaryProbeSettings | undefined): Observable<CanaryCheck>;
  running(endpoint: Endpoint): RenderedConfig | undefined;
  plan(from: RenderedConfig, to: RenderedConfig): Steps<Plan>;
} {
  return {
    check: (endpoint, since, probe) =>
      new Observable<CanaryCheck>((subscriber) => {
        const controller = new AbortController();
        targets
          .lookup(endpoint)!
          .check(since, probe, controller.signal)
          .then(
            (check) => {
              subscriber.next(check);
              subscriber.complete();
            },
            (err: unknown) => subscriber.error(err),
          );
        return () => controller.abort();
      }),
    running: (endpoint) => targets.running(endpoint),
    plan: (from, to) => FLEET_PLANS.steps(from, to),
  };
}
