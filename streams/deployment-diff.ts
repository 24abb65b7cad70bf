import { type Observable, defer, map } from 'rxjs';
import type { ConfigDiff } from '../src/haproxy/config-diff.ts';
import { errorMessage } from '../src/errors.ts';
import type { ControllerEvent, Endpoint } from '../src/events.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';

/** The diff from what the instances ran to what the deployment applied (src/haproxy/config-diff.ts in production). */
export type Describe = (from: RenderedConfig | undefined, to: RenderedConfig) => ConfigDiff;

/** Instances remembered at most; the oldest news is forgotten first (pods come and go). */
const REMEMBERED = 4096;

/**
 * Gives each completed deployment the diff of the configuration it applied, from what
 * its instances ran before it started, as this graph's deployments tell: a retry of one
 * instance is diffed against what that instance ran, a rollout after a canary against
 * what the rest ran, a redeploy of the same configuration is empty. When its instances
 * ran different configurations, the one most of them ran is the base; when none is known
 * (the first deployment of a graph), the files are listed without a diff.
 *
 * The diff is made when the deployment ends, off the path from change to traffic.
 */
export function deploymentDiffs<E extends ControllerEvent>(events$: Observable<E>, describe: Describe): Observable<E> {
  return defer(() => {
    const running = new Map<string, RenderedConfig>();
    const bases = new Map<number, RenderedConfig | undefined>();
    const ranBefore = (endpoints: readonly Endpoint[]): RenderedConfig | undefined => {
      const counts = new Map<string, { config: RenderedConfig; n: number }>();
      for (const e of endpoints) {
        const config = running.get(e.id);
        if (!config) continue;
        const seen = counts.get(config.hash) ?? { config, n: 0 };
        seen.n++;
        counts.set(config.hash, seen);
      }
      let best: { config: RenderedConfig; n: number } | undefined;
      for (const c of counts.values()) if (!best || c.n > best.n) best = c;
      return best?.config;
    };
    const remember = (id: string, config: RenderedConfig | undefined) => {
      running.delete(id);
      if (config) running.set(id, config);
      while (running.size > REMEMBERED) running.delete(running.keys().next().value!);
    };
    return events$.pipe(
      map((event): E => {
        switch (event.type) {
          case 'DeploymentStarted':
            bases.set(event.deployment.id, ranBefore(event.deployment.endpoints));
            return event;
          case 'InstanceDeployed':
          case 'InstanceDeployFailed':
            // After a failure haprx cannot vouch for what the instance runs.
            remember(event.result.endpoint.id, event.result.ok ? event.deployment.config : undefined);
            return event;
          case 'DeploymentCompleted': {
            const from = bases.get(event.deployment.id);
            bases.delete(event.deployment.id);
            return { ...event, diff: safely(describe, from, event.deployment.config) };
          }
          default:
            return event;
        }
      }),
    );
  });
}

/** A diff that cannot be made says so; it never takes the deployment's events down with it. */
function safely(describe: Describe, from: RenderedConfig | undefined, to: RenderedConfig): ConfigDiff {
  try {
    return describe(from, to);
  } catch (err) {
    return { ...(from && { from: from.hash }), to: to.hash, files: [], text: `(the diff could not be made: ${errorMessage(err)})\n`, truncated: true };
  }
}
