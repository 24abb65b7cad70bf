/**
 * The admission webhook of an in-cluster controller (the API server double stands in
 * for the API server): it serves once its certificate Secret holds a valid pair,
 * reviews against the controller's own stores (no request of its own per review),
 * takes a renewed certificate from the Secret without a restart, and keeps the last
 * good one when the Secret goes wrong.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { rawToConfigMapData } from '../../src/k8s/config-map.ts';
import { Admission } from '../../src/webhook/admission.ts';
import { type RunningWebhook, startWebhook } from '../../src/webhook/index.ts';
import { type Deployed, type TestController, credentialsSecret, haproxyPod, startController } from '../k8s/cluster-fixture.ts';
import { apiFor } from '../k8s/helpers.ts';
import { type TestPki, makeTestPki } from '../support/dataplane-double/certs.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { until } from '../support/until.ts';
import { CONFIGMAP, HTTPROUTE, INGRESS, NS, callWebhook, httpRoute, ingress, prefix, reviewBody } from './support.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const SECRET = 'haprx-webhook-tls';
let double: KubeApiDouble;
let controller: TestController | undefined;
let webhook: RunningWebhook | undefined;
let pki: TestPki;
let renewed: TestPki;
const notices: string[] = [];

const b64 = (s: string) => Buffer.from(s).toString('base64');
const tlsSecret = (pair: { cert: string; key: string }) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: SECRET, namespace: NS }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(pair.cert), 'tls.key': b64(pair.key) } });

async function review(body: unknown, ca: string): Promise<{ allowed: boolean; status?: { message: string }; warnings?: string[] }> {
  const answer = await callWebhook(webhook!.port!, JSON.stringify(body), { ca });
  if (answer.status !== 200) throw new Error(`HTTP ${answer.status}: ${answer.body}`);
  return (JSON.parse(answer.body) as { response: { allowed: boolean; status?: { message: string }; warnings?: string[] } }).response;
}

before(async () => {
  [pki, renewed] = await Promise.all([makeTestPki(), makeTestPki()]);
  const raw = await readTemplateDir(`${ROOT}templates`);
  assert.ok(raw.ok);
  const config = raw.raw as { settings: Record<string, unknown> };
  const data = rawToConfigMapData({ ...config, settings: { ...config.settings, debounce: '20ms', debounceMaxWait: '100ms', minDeployInterval: '50ms', driftInterval: 0 } });
  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  double.create('v1', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CONFIGMAP, namespace: NS }, data });
  double.create('v1', 'secrets', credentialsSecret('pw'));
  double.create('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10'));
  double.create('v1', 'namespaces', { metadata: { name: 'shop' } });
  double.create('networking.k8s.io/v1', 'ingressclasses', { metadata: { name: 'haprx' }, spec: { controller: 'haprx.io/ingress-controller' } });
  double.create('v1', 'services', { metadata: { name: 'web', namespace: 'shop' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
  double.create('networking.k8s.io/v1', 'ingresses', ingress('existing', { rules: [prefix('shop.example', '/', 'web')] }));
  double.create('gateway.networking.k8s.io/v1', 'gatewayclasses', { metadata: { name: 'haprx' }, spec: { controllerName: 'haprx.io/gateway-controller' } });
  double.create('gateway.networking.k8s.io/v1', 'gateways', { metadata: { name: 'gw', namespace: 'shop' }, spec: { gatewayClassName: 'haprx', listeners: [{ name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } }] } });
  double.create('v1', 'secrets', tlsSecret(pki.server));

  const admission = new Admission({ namespace: NS, configMap: CONFIGMAP });
  const deployed: Deployed[] = [];
  controller = startController(double, 'replica-a', deployed, { admission });
  webhook = startWebhook({
    api: apiFor(double),
    namespace: NS,
    secret: SECRET,
    host: '127.0.0.1',
    port: 0,
    admission,
    listWatch: { backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 }, minWatchMs: 0 },
    onNotice: (_level, message) => notices.push(message),
  });
  await until('the webhook serving, with the cluster rendered', async () => {
    if (webhook?.port === undefined) return undefined;
    const answer = await review(reviewBody(INGRESS, 'CREATE', ingress('probe', { rules: [prefix('probe.example', '/', 'web')] })), pki.ca);
    return answer.warnings === undefined ? answer : undefined;
  }, 20_000, () => notices.join('\n'));
});
after(async () => {
  await webhook?.close();
  await controller?.running.stop();
  await double?.stop();
});

describe('the webhook of an in-cluster controller', () => {
  it('accepts a valid Ingress and refuses one the render would skip, from the stores it already has', async () => {
    const before = double.requests.length;
    assert.equal((await review(reviewBody(INGRESS, 'CREATE', ingress('new', { rules: [prefix('new.example', '/', 'web')] })), pki.ca)).allowed, true);
    const refused = await review(reviewBody(INGRESS, 'CREATE', ingress('bad', { rules: [prefix('new.example', '/', 'web', { number: 0 })] })), pki.ca);
    assert.equal(refused.allowed, false);
    assert.match(refused.status!.message, /^haprx would skip Ingress shop\/bad: spec\.rules\[0\]\.http\.paths\[0\]\.backend/);
    const route = await review(reviewBody(HTTPROUTE, 'CREATE', httpRoute('r', { rules: [{ matches: [{ method: 'BREW' }], backendRefs: [{ name: 'web', port: 80 }] }] })), pki.ca);
    assert.equal(route.allowed, false);
    assert.match(route.status!.message, /method/);
    const extra = double.requests.slice(before).filter((r) => !r.watch && !/\/(leases|events)(\/|$)/.test(r.path) && !(r.method === 'PATCH' && r.path.endsWith('/status')));
    assert.deepEqual(extra.map((r) => `${r.method} ${r.path}`), [], 'no request to the API server per review (the lease, Events and status writes go on)');
  });

  it('sees what the controller sees: an Ingress added to the cluster is there for the next review', async () => {
    double.create('networking.k8s.io/v1', 'ingresses', ingress('holder', { rules: [prefix('claimed.example', '/', 'web')] }, { creationTimestamp: '2020-01-01T00:00:00Z' }));
    await until('the conflict seen', async () => {
      const answer = await review(reviewBody(INGRESS, 'CREATE', ingress('late', { rules: [prefix('claimed.example', '/', 'other')] })), pki.ca);
      return answer.warnings?.some((w) => /already routed by Ingress shop\/holder/.test(w)) ? true : undefined;
    });
  });

  it('takes a renewed certificate from the Secret, and keeps the last good one when the Secret goes wrong', async () => {
    double.apply('v1', 'secrets', tlsSecret(renewed.server));
    const body = reviewBody(INGRESS, 'CREATE', ingress('x', { rules: [prefix('x.example', '/', 'web')] }));
    await until('the renewed certificate served', async () => ((await review(body, renewed.ca).catch(() => undefined))?.allowed === true ? true : undefined), 10_000, () => notices.join('\n'));
    double.apply('v1', 'secrets', tlsSecret({ cert: pki.server.cert, key: renewed.server.key }));
    await until('the bad pair reported', () => (notices.some((n) => /tls\.key is not the key of tls\.crt; the last good one stays in use/.test(n)) ? true : undefined), 10_000);
    assert.equal((await review(body, renewed.ca)).allowed, true, 'still served with the renewed certificate');
  });
});
