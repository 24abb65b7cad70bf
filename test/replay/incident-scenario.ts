/**
 * A scripted incident, recorded: the in-cluster controller (`haprx run` minus the
 * process) against the API server double, three HAProxy pods of which haproxy-1 fails
 * every deployment (its reload fails), and a burst of churn: haproxy-2 flaps between
 * Ready and not Ready while Services change. The recording is what `--record` writes.
 */
import type { InstanceOutcome } from '../../src/events.ts';
import { RecordingControl } from '../../src/replay/control.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { CONFIGMAP, NS, controllerConfig, haproxyPod, seed, service, startController } from '../k8s/cluster-fixture.ts';
import { sleep, until } from '../k8s/helpers.ts';

export const FAILING = 'https://10.0.0.11:5555';

export async function recordIncident(file: string, log: (message: string) => void = () => undefined): Promise<void> {
  const double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  try {
    seed(double);
    // Timings of a busy cluster, scaled down: batches of 20 ms, deployments at least 50 ms apart.
    double.apply('v1', 'configmaps', { ...double.get('v1', 'configmaps', NS, CONFIGMAP)!, data: controllerConfig() });
    const recording = new RecordingControl({ file, maxBytes: 1024 * 1024, scrub: (s) => s, log: (_level, message) => log(message) });
    let deployments = 0;
    let failing = true;
    const controller = startController(double, 'replica-a', [], {
      recording,
      targets: (options) => ({
        async deploy(): Promise<InstanceOutcome> {
          await sleep(5);
          deployments++;
          if (failing && options.baseUrl === FAILING) return { ok: false, reloaded: false, runtimeOps: 0, error: 'reload failed: haproxy exited with status 1' };
          return { ok: true, reloaded: true, runtimeOps: 0 };
        },
      }),
    });
    try {
      await until('the first deployment', () => controller.events.some((e) => e.type === 'DeploymentCompleted'), 10_000);
      double.create('v1', 'pods', haproxyPod('haproxy-2', '10.0.0.12', true));
      await until('haproxy-2 deployed', () => controller.events.some((e) => e.type === 'InstanceDeployed' && e.result.endpoint.address.includes('10.0.0.12')), 10_000);
      // The burst: haproxy-2 flaps while Services change, 15 ms apart.
      for (let i = 0; i < 6; i++) {
        double.apply('v1', 'pods', haproxyPod('haproxy-2', '10.0.0.12', i % 2 === 1));
        double.apply('v1', 'services', service('web', 8000 + i));
        await sleep(15);
      }
      double.create('v1', 'services', service('shop', 8443));
      await until(
        'the end of the burst failed on haproxy-1',
        () => controller.events.some((e) => e.type === 'InstanceDeployFailed' && e.deployment.config.main.includes('apps/shop') && e.result.endpoint.address === FAILING),
        10_000,
      );
      // haproxy-1 comes back: its retry (after 1 s, 2 s, … as it failed in a row) succeeds.
      failing = false;
      await until('haproxy-1 deployed by a retry', () => controller.events.some((e) => e.type === 'InstanceDeployed' && e.deployment.reason === 'retry' && e.result.endpoint.address === FAILING), 20_000);
      await sleep(100);
      log(`${deployments} deployments`);
    } finally {
      await controller.running.stop();
      await recording.close();
    }
  } finally {
    await double.stop();
  }
}
