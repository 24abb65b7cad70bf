/**
 * The shipped template library as a ConfigMap, through the in-cluster controller and
 * the real `haproxy -c`: an Ingress with TLS is served with the certificate of the
 * Secret it names, which is held on demand; a Secret nobody names never leaves the source.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Validator } from '../../src/haproxy/validate.ts';
import { makeSiteCertificate } from '../support/dataplane-double/certs.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { CONFIGMAP, type Deployed, NS, type TestController, credentialsSecret, haproxyPod, shippedConfigMapData, startController } from './cluster-fixture.ts';
import { until } from './helpers.ts';

let double: KubeApiDouble;
let controller: TestController | undefined;
const deployed: Deployed[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  double.create('v1', 'configmaps', { metadata: { name: CONFIGMAP, namespace: NS }, data: await shippedConfigMapData() });
  double.create('v1', 'secrets', credentialsSecret('pw'));
  double.create('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10'));
  double.create('v1', 'namespaces', { metadata: { name: 'apps' } });
  double.create('networking.k8s.io/v1', 'ingressclasses', { metadata: { name: 'haprx' }, spec: { controller: 'haprx.io/ingress-controller' } });
  double.create('v1', 'services', { metadata: { name: 'web', namespace: 'apps' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
  double.create('discovery.k8s.io/v1', 'endpointslices', {
    metadata: { name: 'web-1', namespace: 'apps', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: [{ addresses: ['10.1.0.5'], conditions: { ready: true } }],
  });
  const pem = await makeSiteCertificate('web.example');
  const [cert, key] = [pem.slice(0, pem.indexOf('-----BEGIN PRIVATE KEY') >= 0 ? pem.indexOf('-----BEGIN PRIVATE KEY') : pem.lastIndexOf('-----BEGIN')), pem.slice(pem.lastIndexOf('-----BEGIN'))];
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  double.create('v1', 'secrets', { metadata: { name: 'web-tls', namespace: 'apps' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(cert), 'tls.key': b64(key!) } });
  double.create('v1', 'secrets', { metadata: { name: 'sh.helm.release.v1.unrelated.v1', namespace: 'apps' }, data: { release: b64('not a certificate') } });
  double.create('networking.k8s.io/v1', 'ingresses', {
    metadata: { name: 'web', namespace: 'apps' },
    spec: {
      ingressClassName: 'haprx',
      tls: [{ hosts: ['web.example'], secretName: 'web-tls' }],
      rules: [{ host: 'web.example', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }],
    },
  });
  deployed.length = 0;
});
afterEach(async () => {
  await controller?.running.stop();
  controller = undefined;
  await double.stop();
});

describe('the shipped templates in a cluster', () => {
  it('deploys a configuration haproxy accepts, with the TLS Secret the Ingress names', async () => {
    const certs: Record<string, string>[] = [];
    controller = startController(double, 'replica-a', deployed, {
      validator: new Validator(),
      behaviour: async (config) => {
        certs.push({ ...config.certs });
        return { ok: true, reloaded: true, runtimeOps: 0 };
      },
    });
    await until('a deployment', () => deployed.length === 1, 15_000);
    assert.ok(controller.events.some((e) => e.type === 'Validated'), 'validated by haproxy -c');
    assert.match(deployed[0]!.main, /10\.1\.0\.5:8080/, 'the endpoint is a server');
    assert.ok(Object.keys(certs[0]!).includes('apps__web-tls.pem'), Object.keys(certs[0]!).join(', '));
    assert.match(certs[0]!['apps__web-tls.pem']!, /BEGIN CERTIFICATE/);
    // Only the named Secret may have been fetched (when the Secrets were listed before the Ingresses).
    assert.ok(double.requests.filter((r) => r.path.includes('/secrets/')).every((r) => r.path.endsWith('/apps/secrets/web-tls')));
    assert.ok(!controller.events.some((e) => e.type === 'SourceProblem'), JSON.stringify(controller.events.filter((e) => e.type === 'SourceProblem')));
  });
});
