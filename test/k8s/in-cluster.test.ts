/**
 * The in-cluster controller (`haprx run` minus the process) with the real
 * @kubernetes/client-node against the API server double: configuration from a
 * ConfigMap, HAProxy pods as endpoints, a Lease for leadership, Events and Ingress
 * status as feedback. Targets record what they are given.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import {
  CONFIGMAP,
  type Deployed,
  LEASE,
  NS,
  type TestController,
  clusterEvents,
  controllerConfig,
  credentialsSecret,
  editConfigMap,
  haproxyPod,
  seed,
  service,
  startController,
} from './cluster-fixture.ts';
import { sleep, until } from './helpers.ts';

let double: KubeApiDouble;
let deployed: Deployed[];
const running: TestController[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token', tokens: ['token-b'], bookmarkIntervalMs: 0 });
  deployed = [];
  seed(double);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.running.stop()));
  await double.stop();
});

function start(name = 'replica-a', extra: Parameters<typeof startController>[3] = {}): TestController {
  const controller = startController(double, name, deployed, extra);
  running.push(controller);
  return controller;
}

const instances = (d: Deployed[]) => [...new Set(d.map((x) => x.instance))].sort();
const forHash = (hash: string) => deployed.filter((d) => d.hash === hash);

describe('in-cluster controller', () => {
  it('deploys the render of the cluster to every Ready HAProxy pod, through its Data Plane address, with the Secret credentials', async () => {
    const a = start();
    await until('a deployment to both pods', () => instances(deployed).length === 2);
    assert.deepEqual(instances(deployed), ['https://10.0.0.10:5555', 'https://10.0.0.11:5555']);
    assert.match(deployed[0]!.main, /# service apps\/api port 8080\n# service apps\/web port 80\n/);
    assert.equal(deployed[0]!.username, 'admin');
    assert.equal(deployed[0]!.password, 'first');
    assert.ok(a.leader);
    await until('the Normal Deployed Event', () => clusterEvents(double).some((e) => e.reason === 'Deployed'));
    const event = clusterEvents(double).find((e) => e.reason === 'Deployed')!;
    assert.equal(event.type, 'Normal');
    assert.equal(event.reportingInstance, 'replica-a');
    assert.equal(event.regarding.name, CONFIGMAP);
    assert.equal(event.regarding.uid, double.get('v1', 'configmaps', NS, CONFIGMAP)!.metadata.uid);
    // The next deployment's Event says what it changed, as a unified diff.
    double.create('v1', 'services', service('shop', 8443));
    await until('the second Deployed Event', () => clusterEvents(double).filter((e) => e.reason === 'Deployed').length === 2);
    const note = clusterEvents(double).filter((e) => e.reason === 'Deployed')[1]!.note;
    assert.match(note, /^configuration [0-9a-f]{12} deployed to 2 instance\(s\) \(change\): haproxy\.cfg \+1 -0\n--- a\/haproxy\.cfg\t[0-9a-f]{12}\n/);
    assert.match(note, /^\+# service apps\/shop port 8443$/m);
  });

  it('follows pod churn: a pod that becomes Ready gets the configuration, one that is no longer Ready is left out', async () => {
    const a = start();
    await until('first deployment', () => instances(deployed).length === 2);
    double.create('v1', 'pods', haproxyPod('haproxy-2', '10.0.0.12', false));
    await sleep(200);
    assert.ok(!instances(deployed).includes('https://10.0.0.12:5555'), 'not before it is Ready');
    double.apply('v1', 'pods', haproxyPod('haproxy-2', '10.0.0.12', true));
    await until('the new pod deployed', () => instances(deployed).includes('https://10.0.0.12:5555'));
    double.apply('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10', false));
    const count = deployed.length;
    double.create('v1', 'services', service('late'));
    await until('a deployment with the new service', () => deployed.length > count && deployed.at(-1)!.main.includes('late'));
    await sleep(100);
    const last = forHash(deployed.at(-1)!.hash);
    assert.deepEqual(instances(last), ['https://10.0.0.11:5555', 'https://10.0.0.12:5555']);
    assert.deepEqual(a.targetsClosed, ['https://10.0.0.10:5555'], 'the target of the pod that left is closed');
    assert.equal(a.targetsCreated.length, 3, 'the others are kept');
  });

  it('rebuilds the graph when the ConfigMap changes', async () => {
    const a = start();
    await until('first deployment', () => deployed.length >= 2);
    editConfigMap(double, controllerConfig({ template: `${'global\n'}# edited\n` }));
    await until('generation 2', () => a.events.some((e) => e.type === 'ConfigAccepted' && e.generation === 2));
    await until('the edited configuration deployed', () => deployed.some((d) => d.main.includes('# edited')));
    assert.equal(instances(deployed.filter((d) => d.main.includes('# edited'))).length, 2);
    assert.equal(a.targetsCreated.length, 2, 'the targets outlive a configuration');
    // A metadata-only change of the ConfigMap rebuilds nothing.
    const cm = double.get('v1', 'configmaps', NS, CONFIGMAP)!;
    double.apply('v1', 'configmaps', { ...cm, metadata: { ...cm.metadata, labels: { touched: 'yes' } } });
    await sleep(300);
    assert.equal(a.events.filter((e) => e.type === 'ConfigAccepted').length, 2);
    await until('two ConfigLoaded Events', () => clusterEvents(double).filter((e) => e.reason === 'ConfigLoaded').length === 2);
  });

  it('rejects an invalid edit with a Warning Event naming the field, and keeps the running configuration', async () => {
    const a = start();
    await until('first deployment', () => deployed.length >= 2);
    editConfigMap(double, controllerConfig({ settings: { debounce: 'soon' } }));
    await until('ConfigRejected', () => a.events.some((e) => e.type === 'ConfigRejected'));
    const rejected = a.events.find((e) => e.type === 'ConfigRejected')!;
    assert.equal(rejected.type === 'ConfigRejected' && rejected.path, 'settings.debounce');
    await until('the Warning Event', () => clusterEvents(double).some((e) => e.reason === 'ConfigRejected'));
    const warning = clusterEvents(double).find((e) => e.reason === 'ConfigRejected')!;
    assert.equal(warning.type, 'Warning');
    assert.match(warning.note, /settings\.debounce: "soon" is not a duration/);
    assert.equal(warning.regarding.uid, double.get('v1', 'configmaps', NS, CONFIGMAP)!.metadata.uid);

    // A broken template is rejected too, with its line.
    editConfigMap(double, controllerConfig({ template: 'global\n<% if (x { %>\n' }));
    await until('a second rejection', () => a.events.filter((e) => e.type === 'ConfigRejected').length === 2);
    assert.match(JSON.stringify(a.events.filter((e) => e.type === 'ConfigRejected')[1]), /templates\[\\"haproxy.cfg\\"\]/);

    // The first configuration still runs: a new Service is deployed with its template.
    double.create('v1', 'services', service('after-rejection'));
    await until('a deployment after the rejections', () => deployed.some((d) => d.main.includes('after-rejection')));
    assert.equal(a.events.filter((e) => e.type === 'ConfigAccepted').length, 1, 'never rebuilt');
  });

  it('still records the Warning Event of a rejected edit after many deployments, whose Normal Events spent their own budget', async () => {
    const a = start('replica-a', { eventLimits: { seriesFlushMs: 100, burst: 3, refillMs: 60_000 } });
    await until('first deployment', () => deployed.length >= 2);
    // Each deployment of a new configuration is a Normal Event of its own: more than the burst.
    for (let i = 0; i < 6; i++) {
      double.create('v1', 'services', service(`churn-${i}`));
      await until(`deployment ${i}`, () => deployed.some((d) => d.main.includes(`churn-${i}`)));
    }
    assert.ok(clusterEvents(double).filter((e) => e.reason === 'Deployed').length <= 3, 'the Normal Events are limited');
    editConfigMap(double, controllerConfig({ settings: { debounce: 'soon' } }));
    await until('ConfigRejected', () => a.events.some((e) => e.type === 'ConfigRejected'));
    await until('the Warning Event', () => clusterEvents(double).some((e) => e.reason === 'ConfigRejected'));
  });

  it('loses no change and never duplicates a deployment across watch resumes and relists', async () => {
    start();
    await until('first deployment', () => deployed.length === 2);
    await sleep(200);
    const settledCount = () => deployed.length;
    const before = settledCount();

    // Dropped connections: every watch resumes from its resourceVersion.
    assert.ok(double.dropWatches() >= 4, 'config, credentials, pods and services watches');
    await until('watches back', () => double.openWatches() >= 4, 3_000);
    await sleep(300);
    assert.equal(settledCount(), before, 'a resume with nothing new deploys nothing');

    // The history is compacted while the watches are down: every set relists.
    double.failNext({ watch: true, status: 503, times: 4 });
    double.endWatches();
    double.compact();
    await until('relisted', () => double.requests.filter((r) => !r.watch && r.path.endsWith('/services')).length >= 2, 3_000);
    await until('watches back', () => double.openWatches() >= 4, 3_000);
    await sleep(300);
    assert.equal(settledCount(), before, 'a relist with nothing new deploys nothing');

    // A change made while the watches are down arrives through the relist, once.
    double.failNext({ watch: true, status: 503, times: 4 });
    double.endWatches();
    double.create('v1', 'services', service('while-away'));
    double.remove('v1', 'services', 'apps', 'web');
    double.compact();
    await until('the change deployed', () => deployed.some((d) => d.main.includes('while-away')));
    await sleep(400);
    const latest = deployed.filter((d) => d.main.includes('while-away'));
    assert.equal(latest.length, 2, 'one deployment, to each pod once');
    assert.ok(!latest[0]!.main.includes('apps/web'), 'the delete made while away arrived too');
    // No configuration went twice to the same instance.
    const pairs = deployed.map((d) => `${d.hash} ${d.instance}`);
    assert.equal(new Set(pairs).size, pairs.length);
  });

  it('with two controllers on one API server, only the leader deploys; when it stops, the other deploys the current configuration at once', async () => {
    const a = start('replica-a');
    await until('a leads and deploys', () => a.leader && deployed.length === 2);
    const b = start('replica-b', { token: 'token-b' });
    await sleep(400);
    assert.ok(!b.leader);
    double.create('v1', 'services', service('more'));
    await until('the change deployed', () => deployed.some((d) => d.main.includes('more')));
    await sleep(200);
    assert.ok(deployed.every((d) => d.controller === 'replica-a'), 'only the leader deploys');
    assert.ok(b.events.some((e) => e.type === 'Validated'), 'the follower renders and validates');

    const stoppedAt = Date.now();
    await a.running.stop();
    running.splice(running.indexOf(a), 1);
    assert.notEqual(double.get('coordination.k8s.io/v1', 'leases', NS, LEASE)!.spec && (double.get('coordination.k8s.io/v1', 'leases', NS, LEASE)!.spec as { holderIdentity?: string }).holderIdentity, 'replica-a', 'the lease is released');
    await until('b deploys', () => deployed.some((d) => d.controller === 'replica-b'));
    assert.ok(Date.now() - stoppedAt < 1_000, 'before the lease could have expired');
    const started = b.events.find((e) => e.type === 'DeploymentStarted');
    assert.equal(started?.type === 'DeploymentStarted' && started.deployment.reason, 'leader');
    assert.ok(deployed.filter((d) => d.controller === 'replica-b').every((d) => d.main.includes('more')), 'the newest configuration');
  });

  it('takes a credentials rotation without a restart: new targets with the new password', async () => {
    const a = start();
    await until('first deployment', () => deployed.length === 2);
    assert.equal(a.targetsCreated.length, 2);
    const secret = double.get('v1', 'secrets', NS, 'haprx-dataplane')!;
    double.apply('v1', 'secrets', { ...secret, data: credentialsSecret('rotated').data });
    // The rotation itself redeploys the current configuration, with the new password, at once.
    await until('a redeployment with the rotated password', () => instances(deployed.filter((d) => d.password === 'rotated')).length === 2);
    const redeploy = a.events.find((e) => e.type === 'DeploymentStarted' && e.deployment.reason === 'credentials');
    assert.ok(redeploy, 'reason credentials');
    double.create('v1', 'services', service('after-rotation'));
    await until('a deployment after the rotation', () => deployed.some((d) => d.main.includes('after-rotation')));
    await sleep(100);
    assert.ok(deployed.filter((d) => d.main.includes('after-rotation')).every((d) => d.password === 'rotated'));
    assert.equal(a.targetsCreated.length, 4, 'one new client per instance');
    assert.equal(a.targetsClosed.length, 2, 'the old clients are closed');
  });

  it('sends the current configuration at once to a pod whose container restarted, and to one replaced under the same name', async () => {
    const a = start();
    await until('first deployment', () => instances(deployed).length === 2);
    const to10 = () => deployed.filter((d) => d.instance === 'https://10.0.0.10:5555').length;
    const before = to10();
    const pod = double.get('v1', 'pods', NS, 'haproxy-0')!;
    const status = pod.status as { containerStatuses: { name: string; restartCount?: number }[] };
    double.apply('v1', 'pods', { ...pod, status: { ...status, containerStatuses: status.containerStatuses.map((c) => (c.name === 'haproxy' ? { ...c, restartCount: 1 } : c)) } });
    await until('a deployment to the restarted pod', () => to10() > before);
    const started = a.events.filter((e) => e.type === 'DeploymentStarted').at(-1)!;
    assert.ok(started.type === 'DeploymentStarted' && started.deployment.reason === 'endpoints');
    assert.deepEqual(started.deployment.endpoints.map((e) => e.id), ['haproxy-0'], 'only the pod that came back');
    // Replaced: deleted and created again with the same name and address (a new UID).
    double.remove('v1', 'pods', NS, 'haproxy-0');
    double.create('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10'));
    await until('a deployment to the new pod', () => to10() > before + 1);
  });

  it('aborts its deployment in flight when it loses the lease, and deploys again once it leads again', async () => {
    let hang = true;
    const aborted: string[] = [];
    const a = start('replica-a', {
      behaviour: (_config, signal) =>
        hang
          ? new Promise((resolve) => signal?.addEventListener('abort', () => (aborted.push('aborted'), resolve({ ok: false, reloaded: false, runtimeOps: 0, error: 'aborted' }))))
          : Promise.resolve({ ok: true, reloaded: false, runtimeOps: 1 }),
    });
    await until('the first deployment started', () => a.events.some((e) => e.type === 'DeploymentStarted'));
    // The API server stops taking this replica's lease renewals: it steps down within the renew deadline.
    double.failNext({ path: /\/leases\//, status: 500, times: Infinity, token: 'test-token' });
    await until('leadership lost', () => a.events.some((e) => e.type === 'LeadershipLost'), 5_000);
    assert.deepEqual(aborted, ['aborted', 'aborted'], 'both instance deployments in flight were aborted');
    assert.ok(!a.leader);
    const before = deployed.length;
    hang = false;
    double.clearFaults();
    await until('leading and deployed again', () => a.leader && instances(deployed.slice(before)).length === 2, 10_000);
    const again = a.events.filter((e) => e.type === 'DeploymentStarted').at(-1)!;
    assert.ok(again.type === 'DeploymentStarted' && again.deployment.reason === 'leader');
  });

  it('reports deployment failures as Warning Events, and a missing Secret in them', async () => {
    double.remove('v1', 'secrets', NS, 'haprx-dataplane');
    start();
    await until('a DeployFailed Event', () => clusterEvents(double).some((e) => e.reason === 'DeployFailed'));
    const failed = clusterEvents(double).filter((e) => e.reason === 'DeployFailed');
    assert.equal(failed[0]!.type, 'Warning');
    assert.match(failed[0]!.note, /Secret haprx-system\/haprx-dataplane does not exist/);
    assert.equal(deployed.length, 0);
  });

  it('on stop, lets the deployment in flight finish, then releases the lease', async () => {
    let slow = false;
    const a = start('replica-a', {
      behaviour: async () => {
        if (slow) await sleep(400);
        return { ok: true, reloaded: false, runtimeOps: 1 };
      },
    });
    await until('first deployment', () => deployed.length === 2);
    slow = true;
    double.create('v1', 'services', service('in-flight'));
    await until('the deployment started', () => a.events.filter((e) => e.type === 'DeploymentStarted').length === 2);
    // Another change waits behind it in the scheduler.
    double.create('v1', 'services', service('queued'));
    await until('the queued configuration validated', () => a.events.some((e) => e.type === 'Validated' && e.config.main.includes('queued')));
    const t0 = Date.now();
    await a.running.stop();
    running.splice(running.indexOf(a), 1);
    assert.ok(Date.now() - t0 >= 200, 'waited for the deployment in flight');
    assert.equal(deployed.filter((d) => d.main.includes('in-flight')).length, 2, 'it completed');
    await sleep(500);
    assert.ok(!deployed.some((d) => d.main.includes('queued')), 'nothing new started once stopping');
    const lease = double.get('coordination.k8s.io/v1', 'leases', NS, LEASE)!.spec as { holderIdentity?: string };
    assert.equal(lease.holderIdentity, '');
  });

  it('on stop, aborts a deployment that outlasts the drain bound', async () => {
    let hang = false;
    const aborted: boolean[] = [];
    const a = start('replica-a', {
      drainTimeoutMs: 150,
      behaviour: (_config, signal) =>
        hang
          ? new Promise((resolve) => signal?.addEventListener('abort', () => (aborted.push(true), resolve({ ok: false, reloaded: false, runtimeOps: 0, error: 'aborted' }))))
          : Promise.resolve({ ok: true, reloaded: false, runtimeOps: 1 }),
    });
    await until('first deployment', () => deployed.length === 2);
    hang = true;
    double.create('v1', 'services', service('hangs'));
    await until('the deployment started', () => a.events.filter((e) => e.type === 'DeploymentStarted').length === 2);
    const t0 = Date.now();
    await a.running.stop();
    running.splice(running.indexOf(a), 1);
    const took = Date.now() - t0;
    assert.ok(took >= 140 && took < 1_500, `stopped in ${took} ms`);
    assert.deepEqual(aborted, [true, true]);
    assert.equal((double.get('coordination.k8s.io/v1', 'leases', NS, LEASE)!.spec as { holderIdentity?: string }).holderIdentity, '');
  });
});

describe('Ingress status', () => {
  // The templates decide which Ingresses are served: all are watched, only class haprx is declared served.
  const ingressConfig = () =>
    controllerConfig({
      template: `<% for (const ing of resources.ingresses.list()) if (ing.spec.ingressClassName === 'haprx') h.status(ing, { served: true }) %>global\n`,
      watch: [
        { name: 'services', apiVersion: 'v1', resource: 'services', namespace: 'apps' },
        { name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' },
      ],
      settings: { haproxy: { podSelector: 'app.kubernetes.io/name=haproxy', service: 'haproxy', dataplane: { container: 'dataplane', port: 5555 } } },
    });
  const ingress = (name: string, cls = 'haprx') => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'apps' }, spec: { ingressClassName: cls } });
  const lbService = (ip: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'haproxy', namespace: NS }, spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ ip }] } } });
  const statusOf = (name: string) => (double.get('networking.k8s.io/v1', 'ingresses', 'apps', name)!.status as { loadBalancer?: { ingress?: { ip?: string }[] } } | undefined)?.loadBalancer?.ingress;
  const statusWrites = () => double.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/status'));

  it('sets status.loadBalancer from the HAProxy Service, only from the leader and only on change', async () => {
    editConfigMap(double, ingressConfig());
    double.create('v1', 'services', lbService('203.0.113.10'));
    double.create('networking.k8s.io/v1', 'ingresses', ingress('mine'));
    double.create('networking.k8s.io/v1', 'ingresses', ingress('theirs', 'nginx'));
    const a = start('replica-a');
    await until('a leads', () => a.leader);
    start('replica-b', { token: 'token-b' });
    await until('status written', () => statusOf('mine')?.[0]?.ip === '203.0.113.10');
    assert.equal(statusOf('theirs'), undefined, 'an Ingress of another class is left alone');
    await sleep(400);
    assert.equal(statusWrites().length, 1, 'written once, by one replica; the echo changes nothing');

    // The Service's address changes: written again, once.
    const svc = double.get('v1', 'services', NS, 'haproxy')!;
    double.apply('v1', 'services', { ...svc, status: { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } } });
    await until('status updated', () => statusOf('mine')?.[0]?.ip === '203.0.113.20');
    await sleep(300);
    assert.equal(statusWrites().length, 2);

    // Someone else overwrites it: the leader puts it back.
    const mine = double.get('networking.k8s.io/v1', 'ingresses', 'apps', 'mine')!;
    double.apply('networking.k8s.io/v1', 'ingresses', { ...mine, status: { loadBalancer: { ingress: [{ ip: '198.51.100.1' }] } } });
    await until('status restored', () => statusOf('mine')?.[0]?.ip === '203.0.113.20');
  });

  it('writes nothing while this replica is not the leader', async () => {
    editConfigMap(double, ingressConfig());
    double.create('v1', 'services', lbService('203.0.113.10'));
    double.create('networking.k8s.io/v1', 'ingresses', ingress('mine'));
    // Another holder has the lease and keeps it.
    const now = new Date().toISOString().replace(/Z$/, '000Z');
    double.create('coordination.k8s.io/v1', 'leases', { metadata: { name: LEASE, namespace: NS }, spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 3600, renewTime: now, acquireTime: now } });
    const a = start('replica-a');
    await until('rendered', () => a.events.some((e) => e.type === 'Validated'));
    await sleep(400);
    assert.ok(!a.leader);
    assert.equal(statusWrites().length, 0);
    assert.equal(statusOf('mine'), undefined);
  });
});
