/**
 * The status haprx writes in a cluster, with the shipped templates, through the
 * in-cluster controller and the real @kubernetes/client-node against the API server
 * double: every condition and reason of GatewayClasses, Gateways, listeners and
 * HTTPRoute parents, Ingress load balancer addresses, Warning Events on the objects
 * skipped, and what is never touched.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { type Deployed, type TestController, startController } from './cluster-fixture.ts';
import { sleep, until } from './helpers.ts';
import { GW, LB_IP, ME, THEIR_INGRESS_STATUS, THEIR_PARENT, conditionOf, listenerSummary, parentSummary, seedStatusCluster, statusOf } from './status-fixture.ts';

let double: KubeApiDouble;
let controller: TestController | undefined;
let deployed: Deployed[];

beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  deployed = [];
});
afterEach(async () => {
  await controller?.running.stop();
  controller = undefined;
  await double.stop();
});

const start = (extra: Parameters<typeof startController>[3] = {}) => (controller = startController(double, 'replica-a', deployed, { statusIntervalMs: 5, ...extra }));
const gatewayStatus = () => statusOf(double, GW, 'gateways', 'shop', 'edge');
const programmed = () => conditionOf(gatewayStatus().conditions, 'Programmed');

describe('status in a cluster, with the shipped templates', () => {
  it('writes every condition and reason of GatewayClass, Gateway, listeners and HTTPRoute parents, with observedGeneration', async () => {
    await seedStatusCluster(double);
    start();
    await until('the Gateway programmed', () => programmed()?.status === 'True', 15_000);

    const cls = statusOf(double, GW, 'gatewayclasses', undefined, 'haprx');
    assert.equal(conditionOf(cls.conditions, 'Accepted')?.status, 'True');
    assert.ok(cls.supportedFeatures?.some((f) => f.name === 'HTTPRoute'));
    assert.deepEqual(statusOf(double, GW, 'gatewayclasses', undefined, 'mesh'), {}, "another controller's class is not ours to write");

    const gw = gatewayStatus();
    assert.deepEqual(
      gw.conditions?.map((c) => `${c.type}=${c.status} ${c.reason} g${c.observedGeneration}`),
      ['Accepted=True ListenersNotValid g1', 'Programmed=True Programmed g1'],
    );
    assert.deepEqual(gw.addresses, [{ type: 'IPAddress', value: LB_IP }]);
    assert.deepEqual(listenerSummary(double, 'http'), ['Accepted=True Accepted', 'ResolvedRefs=True ResolvedRefs', 'Conflicted=False NoConflicts', 'Programmed=True Programmed']);
    assert.equal(gw.listeners?.find((l) => l.name === 'http')?.attachedRoutes, 1);
    assert.equal(gw.listeners?.find((l) => l.name === 'api')?.attachedRoutes, 5);
    assert.deepEqual(gw.listeners?.find((l) => l.name === 'http')?.supportedKinds, [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }, { group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' }]);
    assert.deepEqual(listenerSummary(double, 'again'), ['Accepted=True Accepted', 'ResolvedRefs=True ResolvedRefs', 'Conflicted=True HostnameConflict', 'Programmed=False Invalid']);
    assert.deepEqual(listenerSummary(double, 'https'), ['Accepted=True Accepted', 'ResolvedRefs=True ResolvedRefs', 'Conflicted=False NoConflicts', 'Programmed=True Programmed']);
    assert.deepEqual(listenerSummary(double, 'nocert'), ['Accepted=True Accepted', 'ResolvedRefs=False InvalidCertificateRef', 'Conflicted=False NoConflicts', 'Programmed=False Invalid']);
    assert.deepEqual(listenerSummary(double, 'foreign'), ['Accepted=True Accepted', 'ResolvedRefs=False RefNotPermitted', 'Conflicted=False NoConflicts', 'Programmed=False Invalid']);
    assert.deepEqual(listenerSummary(double, 'clash'), ['Accepted=False PortUnavailable', 'ResolvedRefs=True ResolvedRefs', 'Conflicted=True ProtocolConflict', 'Programmed=False Invalid']);
    assert.deepEqual(listenerSummary(double, 'udp'), ['Accepted=False UnsupportedProtocol', 'ResolvedRefs=True ResolvedRefs', 'Conflicted=False NoConflicts', 'Programmed=False Invalid']);
    assert.deepEqual(gw.listeners?.find((l) => l.name === 'udp')?.supportedKinds, []);
    assert.deepEqual(listenerSummary(double, 'kinds'), ['Accepted=True Accepted', 'ResolvedRefs=False InvalidRouteKinds', 'Conflicted=False NoConflicts', 'Programmed=False Invalid']);
    for (const l of gw.listeners ?? []) for (const c of l.conditions) assert.equal(c.observedGeneration, 1, `${l.name} ${c.type}`);

    await until('every route has its status', () => parentSummary(double, 'shop', 'bad').length > 0);
    assert.deepEqual(parentSummary(double, 'shop', 'web'), ['Accepted=True Accepted', 'ResolvedRefs=True ResolvedRefs']);
    assert.deepEqual(parentSummary(double, 'shop', 'nosection'), ['Accepted=False NoMatchingParent', 'ResolvedRefs=True ResolvedRefs']);
    assert.deepEqual(parentSummary(double, 'guest', 'visitor'), ['Accepted=False NotAllowedByListeners', 'ResolvedRefs=True ResolvedRefs']);
    assert.deepEqual(parentSummary(double, 'shop', 'elsewhere'), ['Accepted=False NoMatchingListenerHostname', 'ResolvedRefs=True ResolvedRefs']);
    assert.deepEqual(parentSummary(double, 'shop', 'missing'), ['Accepted=True Accepted', 'ResolvedRefs=False BackendNotFound']);
    assert.deepEqual(parentSummary(double, 'shop', 'granted'), ['Accepted=True Accepted', 'ResolvedRefs=True ResolvedRefs'], 'a cross-namespace backend a ReferenceGrant allows');
    assert.deepEqual(parentSummary(double, 'shop', 'ungranted'), ['Accepted=True Accepted', 'ResolvedRefs=False RefNotPermitted'], 'one no ReferenceGrant allows');
    assert.deepEqual(parentSummary(double, 'shop', 'kind'), ['Accepted=True Accepted', 'ResolvedRefs=False InvalidKind']);
    assert.deepEqual(parentSummary(double, 'shop', 'protocol'), ['Accepted=True Accepted', 'ResolvedRefs=False UnsupportedProtocol']);
    assert.deepEqual(parentSummary(double, 'shop', 'bad'), ['Accepted=False UnsupportedValue']);
    const bad = statusOf(double, GW, 'httproutes', 'shop', 'bad').parents![0]!;
    assert.deepEqual(bad.parentRef, { name: 'edge', sectionName: 'http' }, 'the parentRef as the route gives it');
    assert.equal(bad.controllerName, ME);
    assert.match(bad.conditions[0]!.message, /^spec\.rules\[0\]\.matches\[0\]\.path\.value "\/a\\nbind :9999" is not an absolute URL path$/);
  });

  it("never touches another controller's parents entry or another class's Ingress, and serves only its own", async () => {
    await seedStatusCluster(double);
    start();
    await until('the Ingress served', () => statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer?.ingress !== undefined, 15_000);
    await until('the route written', () => parentSummary(double, 'shop', 'web').length > 0);
    assert.deepEqual(statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer, { ingress: [{ ip: LB_IP }] });
    const web = statusOf(double, GW, 'httproutes', 'shop', 'web');
    assert.deepEqual(web.parents?.[0], THEIR_PARENT, "the other controller's entry, exactly as it was, where it was");
    assert.equal(web.parents?.length, 2);
    assert.deepEqual(statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'theirs'), THEIR_INGRESS_STATUS);
    assert.deepEqual(statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'evil'), {}, 'a skipped Ingress gets no address');
    // Nothing was even sent for them.
    const writes = double.requests.filter((r) => r.method === 'PATCH');
    assert.ok(writes.every((r) => r.path.endsWith('/status')), 'only the status subresource is written');
    assert.ok(!writes.some((r) => r.path.includes('/ingresses/theirs') || r.path.includes('/gateways/theirs') || r.path.includes('/gatewayclasses/mesh')));

    // The other controller updates its entry while haprx's stays: haprx leaves it, and writes nothing.
    const before = writes.length;
    const route = double.get(GW, 'httproutes', 'shop', 'web')!;
    const theirs = { ...THEIR_PARENT, conditions: [{ ...THEIR_PARENT.conditions[0]!, message: 'theirs, again' }] };
    double.apply(GW, 'httproutes', { ...route, status: { parents: [theirs, ...((route.status as { parents: unknown[] }).parents.slice(1))] } });
    await sleep(300);
    assert.deepEqual(statusOf(double, GW, 'httproutes', 'shop', 'web').parents?.[0], theirs);
    assert.equal(double.requests.filter((r) => r.method === 'PATCH').length, before);

    // Someone overwrites the address of haprx's Ingress: it is put back.
    const mine = double.get('networking.k8s.io/v1', 'ingresses', 'shop', 'mine')!;
    double.apply('networking.k8s.io/v1', 'ingresses', { ...mine, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } });
    await until('the address put back', () => JSON.stringify(statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer) === JSON.stringify({ ingress: [{ ip: LB_IP }] }));

    // The Ingress moves to another class: haprx stops serving it and clears its address; a second one is skipped: cleared too.
    const moved = double.get('networking.k8s.io/v1', 'ingresses', 'shop', 'mine')!;
    double.apply('networking.k8s.io/v1', 'ingresses', { ...moved, spec: { ...(moved.spec as object), ingressClassName: 'nginx' } });
    await until('the address cleared', () => statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer?.ingress === undefined);
  });

  it('observes a generation bump: observedGeneration follows, Programmed waits for the deployment, lastTransitionTime stays while the status does', async () => {
    await seedStatusCluster(double);
    let deploys = 0;
    let hold: (() => void) | undefined;
    start({
      behaviour: async () => {
        // The second deployment waits until the test lets it go.
        if (++deploys === 2) await new Promise<void>((resolve) => (hold = resolve));
        return { ok: true, reloaded: true, runtimeOps: 0 };
      },
    });
    await until('the Gateway programmed', () => programmed()?.status === 'True', 15_000);
    const firstTransition = conditionOf(gatewayStatus().conditions, 'Accepted')!.lastTransitionTime;
    await sleep(1_100);
    const gateway = double.get(GW, 'gateways', 'shop', 'edge')!;
    const spec = gateway.spec as { listeners: Record<string, unknown>[] };
    double.apply(GW, 'gateways', { ...gateway, spec: { ...spec, listeners: [...spec.listeners, { name: 'extra', port: 8082, protocol: 'HTTP' }] } });
    assert.equal(double.get(GW, 'gateways', 'shop', 'edge')!.metadata.generation, 2);
    await until('generation 2 observed, Programmed pending', () => programmed()?.observedGeneration === 2 && programmed()?.status === 'Unknown', 10_000);
    assert.equal(programmed()?.reason, 'Pending');
    const accepted = conditionOf(gatewayStatus().conditions, 'Accepted')!;
    assert.equal(accepted.observedGeneration, 2);
    assert.equal(accepted.lastTransitionTime, firstTransition, 'Accepted stayed True: its transition time stays');
    assert.ok(programmed()!.lastTransitionTime > firstTransition, 'Programmed changed: a new transition time');
    hold!();
    await until('Programmed again once deployed', () => programmed()?.status === 'True' && programmed()?.observedGeneration === 2, 10_000);
    assert.equal(gatewayStatus().listeners?.find((l) => l.name === 'extra')?.conditions.find((c) => c.type === 'Programmed')?.status, 'True');
  });

  it('says why Programmed is False when deployments fail, and recovers', async () => {
    await seedStatusCluster(double);
    let failing = true;
    start({ behaviour: async () => (failing ? { ok: false, reloaded: false, runtimeOps: 0, error: 'connection refused' } : { ok: true, reloaded: true, runtimeOps: 0 }) });
    await until('Programmed False', () => programmed()?.status === 'False', 15_000);
    assert.equal(programmed()?.reason, 'Pending');
    assert.match(programmed()!.message, /not live on every instance: haproxy-0: connection refused/);
    assert.equal(statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer, undefined, 'not served: no address');
    failing = false;
    // A new endpoint makes a new configuration, which deploys.
    const slice = double.get('discovery.k8s.io/v1', 'endpointslices', 'shop', 'web-1')!;
    double.apply('discovery.k8s.io/v1', 'endpointslices', { ...slice, endpoints: [...(slice.endpoints as unknown[]), { addresses: ['10.1.0.6'], conditions: { ready: true } }] });
    await until('Programmed True', () => programmed()?.status === 'True', 15_000);
    await until('the Ingress served', () => statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer?.ingress !== undefined);
  });

  it('records a Warning Event on each object skipped or partly applied, naming the field, once', async () => {
    await seedStatusCluster(double);
    // Repeats would show as series within 100 ms.
    start({ objectEventLimits: { seriesFlushMs: 100 } });
    type Ev = { type: string; reason: string; note: string; regarding: { kind: string; name: string; namespace: string; uid: string }; series?: { count: number } };
    const events = () => double.list('events.k8s.io/v1', 'events', 'shop') as unknown as Ev[];
    const about = (kind: string, name: string) => events().filter((e) => e.regarding.kind === kind && e.regarding.name === name);
    const expected: [string, string][] = [['Ingress', 'evil'], ['HTTPRoute', 'bad'], ['HTTPRoute', 'missing'], ['HTTPRoute', 'ungranted'], ['Gateway', 'edge']];
    await until('the Events on the objects skipped or partly applied', () => expected.every(([kind, name]) => about(kind, name).length > 0), 15_000);
    const evil = events().find((e) => e.regarding.name === 'evil')!;
    assert.equal(evil.type, 'Warning');
    assert.equal(evil.reason, 'Skipped');
    assert.match(evil.note, /spec\.rules\[0\]\.host/);
    assert.equal(evil.regarding.uid, double.get('networking.k8s.io/v1', 'ingresses', 'shop', 'evil')!.metadata.uid, 'kubectl describe finds it by uid');
    const [route] = about('HTTPRoute', 'bad');
    assert.match(route!.note, /spec\.rules\[0\]\.matches\[0\]\.path\.value/);
    assert.equal(about('HTTPRoute', 'missing')[0]?.reason, 'BackendNotFound', 'partly applied: the reason the template gave');
    const gateway = events().find((e) => e.regarding.kind === 'Gateway' && e.reason === 'UnsupportedProtocol');
    assert.ok(gateway && /spec\.listeners\[7\]\.protocol/.test(gateway.note), 'a listener left out: the Gateway is partly applied');
    // Renders go on; the warnings stay, and no Event is made again for them.
    let last = -1;
    for (let i = 0; i < 30 && events().length !== last; i++) {
      last = events().length;
      await sleep(300);
    }
    const renders = controller!.events.filter((e) => e.type === 'Rendered').length;
    const slice = double.get('discovery.k8s.io/v1', 'endpointslices', 'shop', 'web-1')!;
    double.apply('discovery.k8s.io/v1', 'endpointslices', { ...slice, endpoints: [...(slice.endpoints as unknown[]), { addresses: ['10.1.0.6'], conditions: { ready: true } }] });
    await until('a new render', () => controller!.events.filter((e) => e.type === 'Rendered').length > renders);
    await sleep(500);
    assert.equal(events().length, last);
    assert.deepEqual(events().filter((e) => e.series !== undefined), [], 'no repeats counted either');
  });
});
