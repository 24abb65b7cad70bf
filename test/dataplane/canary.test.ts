/**
 * Canary rollout end to end: the whole graph with its real parts (ejs templates,
 * haproxy -c, DataplaneTarget, the canary's checks through the Data Plane API and an
 * HTTP probe) deploying to three Data Plane API doubles, each driving a real haproxy.
 * The canary's reload fails: it is rolled back, a Warning says why, and the two other
 * instances are never written to; then a good configuration reaches all three.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BehaviorSubject, type Subscription } from 'rxjs';
import { controllerGraph } from '../../src/cli/wiring.ts';
import { DataplaneTargets, dataplaneCanary, dataplaneDeployTo } from '../../src/dataplane/deploy-to.ts';
import { FLEET_PLANS } from '../../src/dataplane/plan-cache.ts';
import type { ControllerEvent, Endpoint } from '../../src/events.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import { clusterEventFor } from '../../src/k8s/cluster-events.ts';
import { logLine } from '../../src/observability/event-log.ts';
import { controller } from '../../streams/controller.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { ServicesWatch, serviceRoutingConfig, wrapHaproxy } from '../support/service-graph.ts';
import { until } from '../support/until.ts';

const AUTH = { username: 'admin', password: 'adminpwd' };

describe('canary rollout across Data Plane API doubles', () => {
  let tmp: string;
  const doubles: DataplaneDouble[] = [];
  const httpPorts: number[] = [];
  const echoes: Awaited<ReturnType<typeof startEcho>>[] = [];
  // With each event, how many plans the fleet's cache had made by then.
  const events: { at: number; event: ControllerEvent; planned: number }[] = [];
  const services = new ServicesWatch();
  let targets: DataplaneTargets;
  let subscription: Subscription;
  let endpoints: Endpoint[];

  const setService = (name: string, port: number, host?: string) => services.set(name, port, host);
  const timeline = () => events.map((e) => `  ${e.event.type}: ${logLine(e.event).msg}`).join('\n');
  const waitFor = <T extends ControllerEvent['type']>(type: T, from: number, test: (e: Extract<ControllerEvent, { type: T }>) => boolean = () => true, ms = 30_000) =>
    until(type, () => events.slice(from).map((e) => e.event).find((e): e is Extract<ControllerEvent, { type: T }> => e.type === type && test(e as Extract<ControllerEvent, { type: T }>)), ms, timeline);
  const answers = async (i: number) => (await get(httpPorts[i]!, '/', 'app.test')).body.trim();
  const writes = (d: DataplaneDouble) => d.requests.filter((r) => r.method !== 'GET').length;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'haprx-canary-'));
    for (const name of ['one', 'two']) echoes.push(await startEcho(name));
    // Each instance's haproxy binds the port its environment names: three instances on one host.
    const checker = await wrapHaproxy(join(tmp, 'haproxy-check'), 'export HAPRX_TEST_HTTP_PORT=1');
    for (const id of ['a', 'b', 'c']) {
      const port = await freePort();
      const bin = await wrapHaproxy(join(tmp, `haproxy-${id}`), `export HAPRX_TEST_HTTP_PORT=${port}`);
      httpPorts.push(port);
      doubles.push(await startDataplaneDouble({ reloadDelayMs: 50, haproxyBin: bin }));
    }
    endpoints = doubles.map((d, i) => ({ id: `haproxy-${'abc'[i]}`, address: d.url }));
    targets = new DataplaneTargets({ ...AUTH, reloadPollMs: 25, retryDelayMs: 50 });
    setService('one', echoes[0]!.port, 'app.test');
    const loaded = serviceRoutingConfig('"${HAPRX_TEST_HTTP_PORT}"', {
      debounce: '50ms',
      debounceMaxWait: '200ms',
      minDeployInterval: '200ms',
      driftInterval: 0,
      // The canary (haproxy-a, first by id) is probed on its own port.
      canary: { checkFor: '1s', interval: '200ms', probe: { port: httpPorts[0]!, path: '/', host: 'app.test', expectStatus: [200], timeout: '150ms' } },
    });
    const validator = new Validator({ haproxyBin: checker, cacheSize: 0 });
    subscription = controller(new BehaviorSubject<unknown>(loaded.config), {
      decode: () => loaded,
      graph: (config) =>
        controllerGraph(config, {
          changes: services.changes,
          endpoints$: new BehaviorSubject<readonly Endpoint[]>(endpoints),
          validator,
          deployTo: dataplaneDeployTo(targets.lookup),
          canary: dataplaneCanary(targets),
        }),
    }).subscribe((event) => events.push({ at: Date.now(), event, planned: FLEET_PLANS.planned }));
  });

  after(async () => {
    subscription?.unsubscribe();
    await targets?.close();
    for (const d of doubles) {
      await d.faults.clear();
      await d.stop();
    }
    await Promise.all(echoes.map((e) => e.close()));
    await rm(tmp, { recursive: true, force: true });
  });

  it('canaries the first configuration too (nothing is known to run yet), then deploys it to the rest', async () => {
    const passed = await waitFor('CanaryPassed', 0);
    assert.equal(passed.endpoint.id, 'haproxy-a');
    assert.ok(passed.checks >= 4, `${passed.checks} checks in 1 s, one every 200 ms`);
    await waitFor('DeploymentCompleted', 0, (e) => e.deployment.reason === 'change' && e.results.length === 2 && e.results.every((r) => r.ok));
    for (const i of [0, 1, 2]) assert.equal(await answers(i), 'one');
  });

  it('rolls the canary back when its reload fails, with a Warning, and never writes to the other instances', async () => {
    const from = events.length;
    const restWrites = [writes(doubles[1]!), writes(doubles[2]!)];
    doubles[0]!.faults.failReloads(1);
    // A new backend for app.test: a reload.
    setService('two', echoes[1]!.port, 'app.test');
    const failed = await waitFor('CanaryFailed', from);
    assert.equal(failed.endpoint.id, 'haproxy-a');
    assert.match(failed.problems.join('\n'), /the deployment failed: .*reload .* failed/);
    const rollback = await waitFor('DeploymentCompleted', from, (e) => e.deployment.reason === 'rollback');
    assert.deepEqual(rollback.results.map((r) => [r.endpoint.id, r.ok]), [['haproxy-a', true]]);
    assert.equal(rollback.deployment.config.hash, failed.rollbackTo);
    const warning = clusterEventFor(failed)!;
    assert.equal(`${warning.type} ${warning.reason}`, 'Warning CanaryFailed');
    assert.match(warning.note, /^canary haproxy-a failed with configuration [0-9a-f]{12}, rolled back to [0-9a-f]{12}, the rest left untouched: the deployment failed: /);
    // Every instance still serves the last good configuration; the rest were not written to.
    for (const i of [0, 1, 2]) assert.equal(await answers(i), 'one');
    assert.deepEqual([writes(doubles[1]!), writes(doubles[2]!)], restWrites);
    assert.ok(!events.slice(from).some((e) => e.event.type === 'DeploymentStarted' && e.event.deployment.endpoints.some((x) => x.id !== 'haproxy-a')), timeline());
  });

  it('fails the canary on a reload that fails while it is checked (the Data Plane reloads list), and rolls it back', async () => {
    const from = events.length;
    const restWrites = [writes(doubles[1]!), writes(doubles[2]!)];
    // Another new backend (the refused configuration rendered again would change nothing).
    setService('four', echoes[1]!.port, 'other.test');
    await waitFor('DeploymentCompleted', from, (e) => e.deployment.reason === 'canary' && e.results.every((r) => r.ok));
    // Someone else's change reloads the canary's haproxy, and that reload fails.
    doubles[0]!.faults.failReloads(1);
    await doubles[0]!.foreignChange('# an operator was here', true);
    const failed = await waitFor('CanaryFailed', from);
    assert.match(failed.problems.join('\n'), /^1 reload\(s\) failed while the canary was checked, e\.g\. \S+: .*injected fault/m);
    await waitFor('DeploymentCompleted', from, (e) => e.deployment.reason === 'rollback' && e.results.every((r) => r.ok));
    for (const i of [0, 1, 2]) assert.equal(await answers(i), 'one');
    assert.deepEqual([writes(doubles[1]!), writes(doubles[2]!)], restWrites);
  });

  it('deploys the next configuration through a canary that passes to every instance, planning the rollout once', async () => {
    const from = events.length;
    const planned = FLEET_PLANS.planned;
    setService('three', echoes[0]!.port, 'app.test');
    const passed = await waitFor('CanaryPassed', from);
    assert.equal(passed.endpoint.id, 'haproxy-a');
    await waitFor('DeploymentCompleted', from, (e) => e.deployment.reason === 'change' && e.results.length === 2 && e.results.every((r) => r.ok));
    // app.test now goes to the first Service again (three), through every instance.
    for (const i of [0, 1, 2]) assert.equal(await answers(i), 'one');
    // The rest took it after the canary had passed, not before.
    const order = events.slice(from).map((e) => e.event.type === 'DeploymentStarted' ? `${e.event.deployment.reason}:${e.event.deployment.endpoints.map((x) => x.id).join(',')}` : e.event.type).filter((t) => t.includes(':') || t.startsWith('Canary'));
    assert.deepEqual(order, ['CanaryStarted', 'canary:haproxy-a', 'CanaryPassed', 'change:haproxy-b,haproxy-c']);
    // The verdict (does it reload?) planned the pair before the canary deployed, and the three
    // instances' deployments took that plan: one plan in all.
    const canaryStarted = events.slice(from).find((e) => e.event.type === 'DeploymentStarted' && e.event.deployment.reason === 'canary')!;
    assert.equal(canaryStarted.planned - planned, 1, 'planned by the verdict');
    assert.equal(FLEET_PLANS.planned - planned, 1, timeline());
  });
});
