/**
 * RBAC derived from the code: a real in-cluster controller (startInCluster, the real
 * client) runs against the API server double with the controller ConfigMap of the
 * built base, through configuration, credentials, discovery, the Lease, Events (with a
 * series update), Secrets on demand, the status of Ingresses, GatewayClasses, Gateways
 * and HTTPRoutes, and Warning Events on an object the render skips. Every request the
 * double saw becomes (apiGroup, resource, subresource, verb, namespace), and each must be
 * allowed by the built base's Role (in haprx-system) or ClusterRole. The ClusterRole may
 * grant nothing beyond the watched sets, patching the status of those the templates
 * declare, and Events.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { RequestRecord } from '../support/kube-api-double/index.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { makeSiteCertificate } from '../support/dataplane-double/certs.ts';
import { CONFIGMAP, type Deployed, NS, type TestController, credentialsSecret, haproxyPod, startController } from '../k8s/cluster-fixture.ts';
import { apiFor, until } from '../k8s/helpers.ts';
import { Admission } from '../../src/webhook/admission.ts';
import { startWebhook } from '../../src/webhook/index.ts';
import { build, find, type K8sObject } from './kustomize.ts';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
type RoleObject = K8sObject & { rules: Rule[] };
export interface ApiCall {
  group: string;
  resource: string;
  subresource?: string;
  verb: string;
  namespace?: string;
}

/** What RBAC sees in a request: its API group, resource, subresource, verb and namespace. */
export function apiCall(r: Pick<RequestRecord, 'method' | 'path' | 'watch'>): ApiCall {
  const parts = r.path.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const [group, rest] = parts[0] === 'api' ? ['', parts.slice(2)] : [parts[1]!, parts.slice(3)];
  let namespace: string | undefined;
  let tail = rest;
  if (tail[0] === 'namespaces' && tail.length > 2) {
    namespace = tail[1];
    tail = tail.slice(2);
  }
  const [resource, name, subresource] = tail as [string, string | undefined, string | undefined];
  const verb =
    r.method === 'GET' ? (r.watch ? 'watch' : name === undefined ? 'list' : 'get')
    : r.method === 'POST' ? 'create'
    : r.method === 'PUT' ? 'update'
    : r.method === 'PATCH' ? 'patch'
    : r.method === 'DELETE' ? (name === undefined ? 'deletecollection' : 'delete')
    : r.method.toLowerCase();
  return { group, resource, ...(subresource !== undefined && { subresource }), verb, ...(namespace !== undefined && { namespace }) };
}

const permits = (rules: Rule[], c: ApiCall) => {
  const resource = c.subresource ? `${c.resource}/${c.subresource}` : c.resource;
  return rules.some((r) => r.apiGroups.includes(c.group) && r.resources.includes(resource) && r.verbs.includes(c.verb) && !r.resourceNames);
};
const key = (c: ApiCall) => `${c.verb} ${c.group || 'core'}/${c.resource}${c.subresource ? `/${c.subresource}` : ''}${c.namespace === undefined ? ' (cluster)' : c.namespace === NS ? ' (own namespace)' : ' (other namespace)'}`;

let double: KubeApiDouble;
let controller: TestController | undefined;
let webhook: ReturnType<typeof startWebhook> | undefined;
let role: RoleObject;
let clusterRole: RoleObject;
let watched: { apiVersion: string; resource: string; referencedBy?: unknown[] }[];
const calls = new Map<string, ApiCall>();

before(async () => {
  const objects = await build('k8s/base');
  role = find<RoleObject>(objects, 'Role', 'haprx');
  clusterRole = find<RoleObject>(objects, 'ClusterRole', 'haprx');
  const shipped = find<K8sObject & { data: Record<string, string> }>(objects, 'ConfigMap', CONFIGMAP);
  const config = parse(shipped.data['config.yaml']!) as { watch: typeof watched; settings: Record<string, unknown> };
  watched = config.watch;
  // The shipped configuration, with timings short enough for a test, and drift on so that
  // the same failure repeats and its Event gets a series update.
  const settings = { ...config.settings, debounce: '20ms', debounceMaxWait: '100ms', minDeployInterval: '50ms', driftInterval: '150ms', deployTimeout: '5s' };
  const data = { ...shipped.data, 'config.yaml': JSON.stringify({ ...config, settings }) };

  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  double.create('v1', 'configmaps', { metadata: { name: CONFIGMAP, namespace: NS }, data });
  double.create('v1', 'secrets', credentialsSecret('pw'));
  double.create('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10'));
  double.create('v1', 'services', { metadata: { name: 'haproxy', namespace: NS }, spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } } });
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
  const at = pem.lastIndexOf('-----BEGIN');
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  double.create('v1', 'secrets', { metadata: { name: 'web-tls', namespace: 'apps' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(pem.slice(0, at)), 'tls.key': b64(pem.slice(at)) } });
  // Gateway API objects, for their status; a route the render skips, for its Warning Event.
  double.create('gateway.networking.k8s.io/v1', 'gatewayclasses', { metadata: { name: 'haprx' }, spec: { controllerName: 'haprx.io/gateway-controller' } });
  double.create('gateway.networking.k8s.io/v1', 'gateways', { metadata: { name: 'edge', namespace: 'apps' }, spec: { gatewayClassName: 'haprx', listeners: [{ name: 'http', port: 8080, protocol: 'HTTP' }] } });
  double.create('gateway.networking.k8s.io/v1', 'httproutes', { metadata: { name: 'bad', namespace: 'apps' }, spec: { parentRefs: [{ name: 'edge' }], rules: [{ matches: [{ method: 'BREW' }] }] } });
  double.create('networking.k8s.io/v1', 'ingresses', {
    metadata: { name: 'web', namespace: 'apps' },
    spec: {
      ingressClassName: 'haprx',
      tls: [{ hosts: ['web.example'], secretName: 'web-tls' }],
      rules: [{ host: 'web.example', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }],
    },
  });

  const deployed: Deployed[] = [];
  // The admission webhook too: it reads its serving certificate from a Secret in haprx-system.
  const admission = new Admission({ namespace: NS, configMap: CONFIGMAP });
  webhook = startWebhook({ api: apiFor(double), namespace: NS, secret: 'haprx-webhook-tls', host: '127.0.0.1', port: 0, admission, onNotice: () => undefined });
  // The first deployment goes through (the objects are served and get their status); the drift
  // redeploys that follow fail, so that the same failure repeats and its Event gets a series.
  let deploys = 0;
  controller = startController(double, 'replica-a', deployed, {
    admission,
    eventLimits: { seriesFlushMs: 50 },
    statusIntervalMs: 5,
    behaviour: async () => (deploys++ === 0 ? { ok: true, reloaded: true, runtimeOps: 0 } : { ok: false, reloaded: false, runtimeOps: 0, error: 'the Data Plane API refused the configuration' }),
  });
  const status = () => (double.get('networking.k8s.io/v1', 'ingresses', 'apps', 'web')!.status as { loadBalancer?: { ingress?: { ip?: string }[] } } | undefined)?.loadBalancer?.ingress?.[0]?.ip;
  await until('Ingress status written', () => status() === '203.0.113.10', 15_000);
  await until('the Gateway API status written', () => ['gatewayclasses', 'gateways', 'httproutes'].every((r) => double.requests.some((q) => q.method === 'PATCH' && q.path.includes(`/${r}/`))), 15_000);
  await until('a Warning Event on the skipped route', () => double.list('events.k8s.io/v1', 'events', 'apps').length > 0, 15_000);
  await until('a repeated DeployFailed Event updated with its series', () => double.requests.some((r) => r.method === 'PUT' && r.path.includes('/events/')), 15_000);
  await until('the webhook certificate Secret watched', () => double.requests.some((r) => r.watch && r.path.endsWith('/secrets') && (r.query.fieldSelector ?? '').includes('haprx-webhook-tls')), 15_000);
  await webhook.close();
  webhook = undefined;
  await controller.running.stop();
  controller = undefined;
  for (const r of double.requests) {
    const c = apiCall(r);
    calls.set(key(c), c);
  }
});
after(async () => {
  // Also when a step above timed out: nothing left running holds the test process.
  await webhook?.close();
  await controller?.running.stop();
  await double?.stop();
});

describe('RBAC of the base, against the API calls haprx run makes', () => {
  it('recorded the calls of every part: configuration, credentials, discovery, the Lease, Events, Secrets on demand, status, the webhook certificate', () => {
    const seen = [...calls.keys()].sort();
    for (const expected of [
      'watch core/configmaps (own namespace)',
      'watch core/secrets (own namespace)',
      'watch core/pods (own namespace)',
      'watch core/services (own namespace)',
      'create coordination.k8s.io/leases (own namespace)',
      'update coordination.k8s.io/leases (own namespace)',
      'create events.k8s.io/events (own namespace)',
      'update events.k8s.io/events (own namespace)',
      'get core/secrets (other namespace)',
      'watch core/secrets (other namespace)',
      'patch networking.k8s.io/ingresses/status (other namespace)',
      'patch gateway.networking.k8s.io/gatewayclasses/status (cluster)',
      'patch gateway.networking.k8s.io/gateways/status (other namespace)',
      'patch gateway.networking.k8s.io/httproutes/status (other namespace)',
      'create events.k8s.io/events (other namespace)',
      'watch networking.k8s.io/ingresses (cluster)',
    ]) {
      assert.ok(seen.includes(expected), `${expected} among ${seen.join('; ')}`);
    }
  });

  it('allows every recorded call: in haprx-system by the Role or the ClusterRole, elsewhere by the ClusterRole', () => {
    const refused = [...calls.values()].filter((c) => !(permits(clusterRole.rules, c) || (c.namespace === NS && permits(role.rules, c)))).map(key);
    assert.deepEqual(refused, [], `calls the base's RBAC refuses:\n${refused.join('\n')}`);
  });

  it('grants cluster-wide nothing beyond reading the watched sets, patching the status the templates declare, and Events', () => {
    const allowed = new Set(watched.map((w) => `${w.apiVersion.includes('/') ? w.apiVersion.split('/')[0] : ''} ${w.resource}`));
    // get only where src/k8s/on-demand.ts reads by name: the sets held on demand.
    const onDemand = new Set(watched.filter((w) => w.referencedBy?.length).map((w) => w.resource));
    for (const rule of clusterRole.rules) {
      for (const group of rule.apiGroups) {
        for (const resource of rule.resources) {
          if (resource.endsWith('/status')) {
            assert.ok(allowed.has(`${group} ${resource.slice(0, -'/status'.length)}`), `${resource}.${group}: the status of a set that is not watched`);
            assert.deepEqual(rule.verbs, ['patch'], resource);
          } else if (group === 'events.k8s.io' && resource === 'events') {
            // Warning Events on the objects, in their namespaces; get re-reads one whose series update met a 409.
            assert.deepEqual([...rule.verbs].sort(), ['create', 'get', 'update']);
          } else {
            assert.ok(allowed.has(`${group} ${resource}`), `${resource}.${group} is not a watched set`);
            for (const verb of rule.verbs) assert.ok(['list', 'watch', ...(onDemand.has(resource) ? ['get'] : [])].includes(verb), `${verb} ${resource}.${group}`);
          }
        }
      }
    }
    for (const w of watched) {
      const group = w.apiVersion.includes('/') ? w.apiVersion.split('/')[0]! : '';
      // A set held on demand by name is read with get and watch only; nothing lists it.
      const byName = onDemand.has(w.resource) && (w as { labelSelector?: string }).labelSelector === undefined;
      for (const verb of byName ? ['get', 'watch'] : ['list', 'watch']) assert.ok(permits(clusterRole.rules, { group, resource: w.resource, verb }), `${verb} ${w.resource}.${group}`);
      if (byName) assert.ok(!permits(clusterRole.rules, { group, resource: w.resource, verb: 'list' }), `list ${w.resource}.${group} is granted, and nothing needs it`);
    }
  });

  it('never lists Secrets outside its own namespace: the referenced ones are read by name', () => {
    const lists = [...calls.values()].filter((c) => c.resource === 'secrets' && c.verb === 'list' && c.namespace !== NS).map(key);
    assert.deepEqual(lists, []);
  });

  it('grants in haprx-system only verbs that some recorded call uses, or a rare path of the code needs', () => {
    // src/k8s/event-recorder.ts re-reads an Event when its series update meets a 409.
    const rare = new Set(['get events.k8s.io/events']);
    const used = new Set([...calls.values()].filter((c) => c.namespace === NS).map((c) => `${c.verb} ${c.group}/${c.resource}${c.subresource ? `/${c.subresource}` : ''}`));
    const unused = role.rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${g}/${res}`)))).filter((g) => !used.has(g) && !rare.has(g));
    assert.deepEqual(unused, [], 'the Role grants what no call needs');
  });

  it('maps requests to RBAC verbs as the API server does', () => {
    assert.deepEqual(apiCall({ method: 'GET', path: '/api/v1/namespaces/a/pods', watch: true }), { group: '', resource: 'pods', verb: 'watch', namespace: 'a' });
    assert.deepEqual(apiCall({ method: 'GET', path: '/api/v1/namespaces', watch: false }), { group: '', resource: 'namespaces', verb: 'list' });
    assert.deepEqual(apiCall({ method: 'PATCH', path: '/apis/networking.k8s.io/v1/namespaces/a/ingresses/x/status', watch: false }), { group: 'networking.k8s.io', resource: 'ingresses', subresource: 'status', verb: 'patch', namespace: 'a' });
    assert.deepEqual(apiCall({ method: 'GET', path: '/apis/coordination.k8s.io/v1/namespaces/a/leases/l', watch: false }), { group: 'coordination.k8s.io', resource: 'leases', verb: 'get', namespace: 'a' });
  });
});
