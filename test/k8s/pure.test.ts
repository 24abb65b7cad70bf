/** Unit tests of the pure parts of the Kubernetes integration. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadControllerConfig } from '../../src/cli/load-config.ts';
import { decodeControllerConfig } from '../../src/config/controller-config.ts';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { resourcePath } from '../../src/k8s/api.ts';
import { backoffDelay } from '../../src/backoff.ts';
import { configMapToRaw, rawToConfigMapData } from '../../src/k8s/config-map.ts';
import { credentialsFromSecret } from '../../src/k8s/credentials.ts';
import { EndpointSet, podEndpoint } from '../../src/k8s/discovery.ts';
import { normaliseAddresses, serviceAddresses } from '../../src/k8s/addresses.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('resourcePath', () => {
  it('puts core resources under /api and grouped ones under /apis, with namespace, name and status', () => {
    assert.equal(resourcePath({ apiVersion: 'v1', resource: 'configmaps' }), '/api/v1/configmaps');
    assert.equal(resourcePath({ apiVersion: 'v1', resource: 'configmaps', namespace: 'ns', name: 'c' }), '/api/v1/namespaces/ns/configmaps/c');
    assert.equal(
      resourcePath({ apiVersion: 'networking.k8s.io/v1', resource: 'ingresses', namespace: 'ns', name: 'i', subresource: 'status' }),
      '/apis/networking.k8s.io/v1/namespaces/ns/ingresses/i/status',
    );
    assert.equal(resourcePath({ apiVersion: 'example.com/v1', resource: 'widgets', name: 'a b' }), '/apis/example.com/v1/widgets/a%20b');
  });
});

describe('backoffDelay', () => {
  const options = { initialMs: 100, maxMs: 1_000, jitter: 0.5 };
  it('doubles from the initial delay up to the cap', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, options, () => 0)), [100, 200, 400, 800, 1000, 1000]);
  });
  it('stretches each delay by up to the jitter fraction', () => {
    assert.equal(backoffDelay(1, options, () => 0.999), 300);
    assert.equal(backoffDelay(1, options, () => 0.5), 250);
  });
});

describe('configMapToRaw', () => {
  const cm = (data: Record<string, string>, extra: Partial<KubeObject> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'haprx', namespace: 'sys' }, data, ...extra });

  it('reads config.yaml, haproxy.cfg and the dotted template keys into the template-folder shape', () => {
    const raw = configMapToRaw(
      cm({
        'config.yaml': 'watch: []\nsettings: {debounce: 1s}\nvalues: {port: 80}\n',
        'haproxy.cfg': 'global\n',
        'maps.hosts.map': '<%# hosts %>',
        'general.errors.http': 'x',
        'ssl.default.pem': 'y',
        'snippets.backend': 'z',
      }),
      'sys/haprx',
    );
    assert.ok(raw.ok);
    assert.deepEqual(raw.raw, {
      watch: [],
      settings: { debounce: '1s' },
      values: { port: 80 },
      templates: { 'haproxy.cfg': 'global\n', maps: { 'hosts.map': '<%# hosts %>' }, files: { 'errors.http': 'x' }, certs: { 'default.pem': 'y' }, snippets: { backend: 'z' } },
    });
  });

  it('names the key of every problem', () => {
    const cases: [KubeObject | undefined, string, RegExp][] = [
      [undefined, '(ConfigMap)', /does not exist/],
      [cm({ 'config.yaml': 'watch: [', 'haproxy.cfg': '' }), 'data["config.yaml"]', /./],
      [cm({ 'config.yaml': '- a list', 'haproxy.cfg': '' }), 'data["config.yaml"]', /mapping/],
      [cm({ 'config.yaml': 'templates: {}', 'haproxy.cfg': '' }), 'data["config.yaml"].templates', /keys of the ConfigMap/],
      [cm({ 'config.yaml': 'watch: []' }), 'data["haproxy.cfg"]', /no haproxy.cfg/],
      [cm({ 'haproxy.cfg': '', 'map.hosts.map': '' }), 'data["map.hosts.map"]', /unknown key/],
      [cm({ 'haproxy.cfg': '', 'maps.': '' }), 'data["maps."]', /unknown key/],
      [cm({ 'haproxy.cfg': '' }, { binaryData: { 'x.bin': 'AA==' } }), 'binaryData["x.bin"]', /binaryData/],
    ];
    for (const [object, path, message] of cases) {
      const raw = configMapToRaw(object, 'sys/haprx');
      assert.ok(!raw.ok, path);
      assert.equal(raw.path, path);
      assert.match(raw.message, message);
    }
  });

  it('carries the shipped template library: folder → ConfigMap data → the same configuration', async () => {
    const folder = await readTemplateDir(new URL('../../templates', import.meta.url).pathname);
    assert.ok(folder.ok);
    const data = rawToConfigMapData(folder.raw as Record<string, unknown>);
    assert.ok(Object.keys(data).every((k) => /^[-._a-zA-Z0-9]+$/.test(k)), 'valid ConfigMap keys');
    const back = configMapToRaw(cm(data), 'haprx-system/haprx');
    assert.ok(back.ok);
    assert.deepEqual(back.raw, folder.raw);
    assert.ok(loadControllerConfig(back.raw).ok);
  });

  it('round-trips with rawToConfigMapData', () => {
    const raw = { watch: [{ name: 's', apiVersion: 'v1', resource: 'services' }], values: { a: 1 }, templates: { 'haproxy.cfg': 'global\n', maps: { 'a.map': 'm' }, snippets: { s: 'x' } } };
    const data = rawToConfigMapData(raw);
    assert.deepEqual(Object.keys(data).sort(), ['config.yaml', 'haproxy.cfg', 'maps.a.map', 'snippets.s']);
    const back = configMapToRaw(cm(data), 'x');
    assert.ok(back.ok);
    assert.deepEqual(back.raw, raw);
  });
});

describe('credentialsFromSecret', () => {
  const secret = (data: Record<string, string>): KubeObject => ({ metadata: { name: 'dp', namespace: 'sys' }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) });

  it('decodes username, password and the optional TLS material', () => {
    const result = credentialsFromSecret(secret({ username: 'admin', password: 's3cret', 'ca.crt': 'CA', 'tls.crt': 'CERT', 'tls.key': 'KEY' }), 'sys/dp');
    assert.ok(result.ok);
    assert.equal(result.credentials.username, 'admin');
    assert.equal(result.credentials.password, 's3cret');
    assert.deepEqual([result.credentials.ca, result.credentials.cert, result.credentials.key], ['CA', 'CERT', 'KEY']);
  });

  it('gives a version that changes with the content and reveals nothing of it', () => {
    const a = credentialsFromSecret(secret({ username: 'admin', password: 'one' }), 'x');
    const b = credentialsFromSecret(secret({ username: 'admin', password: 'two' }), 'x');
    const a2 = credentialsFromSecret(secret({ username: 'admin', password: 'one' }), 'x');
    assert.ok(a.ok && b.ok && a2.ok);
    assert.notEqual(a.credentials.version, b.credentials.version);
    assert.equal(a.credentials.version, a2.credentials.version);
    assert.ok(!a.credentials.version.includes('one'));
  });

  it('says what is missing, without values', () => {
    const cases: [KubeObject | undefined, RegExp][] = [
      [undefined, /does not exist/],
      [secret({ username: 'admin' }), /no password/],
      [secret({}), /no username and no password/],
      [secret({ username: 'a', password: 'p', 'tls.crt': 'C' }), /tls.crt but no tls.key/],
    ];
    for (const [object, message] of cases) {
      const result = credentialsFromSecret(object, 'sys/dp');
      assert.ok(!result.ok);
      assert.match(result.message, message);
    }
  });
});

describe('pod discovery', () => {
  const pod = (name: string, opts: { ip?: string; phase?: string; ready?: boolean; container?: string; deleting?: boolean; uid?: string; restarts?: number } = {}): KubeObject => ({
    metadata: { name, namespace: 'sys', uid: opts.uid ?? `uid-${name}`, ...(opts.deleting && { deletionTimestamp: '2026-01-01T00:00:00Z' }) },
    status: {
      phase: opts.phase ?? 'Running',
      ...(opts.ip !== undefined ? { podIP: opts.ip } : { podIP: '10.0.0.1' }),
      conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }],
      containerStatuses: [
        { name: 'haproxy', ready: true, restartCount: opts.restarts ?? 0 },
        { name: opts.container ?? 'dataplane', ready: opts.ready !== false, restartCount: 0 },
      ],
    },
  });
  const addressing = { container: 'dataplane', port: 5555, scheme: 'https' as const };

  it('makes a Running pod with an IP and a Ready Data Plane container an endpoint', () => {
    assert.deepEqual(podEndpoint(pod('p1', { ip: '10.1.2.3' }), addressing), { id: 'p1', address: 'https://10.1.2.3:5555', incarnation: 'uid-p1/0' });
    assert.deepEqual(podEndpoint(pod('p6', { ip: 'fd00::7' }), addressing), { id: 'p6', address: 'https://[fd00::7]:5555', incarnation: 'uid-p6/0' });
  });

  it('gives a pod that came back a new incarnation: a container restarted, or a new pod of the same name', () => {
    const first = podEndpoint(pod('p', { uid: 'u1' }), addressing)!;
    const restarted = podEndpoint(pod('p', { uid: 'u1', restarts: 1 }), addressing)!;
    const replaced = podEndpoint(pod('p', { uid: 'u2' }), addressing)!;
    assert.deepEqual([first.id, restarted.id, replaced.id], ['p', 'p', 'p']);
    assert.equal(new Set([first.incarnation, restarted.incarnation, replaced.incarnation]).size, 3);
    const set = new EndpointSet(addressing);
    set.apply({ type: 'replace', resource: 'pods', objects: [pod('p', { uid: 'u1' })] });
    set.apply({ type: 'synced', resource: 'pods' });
    assert.deepEqual(set.apply({ type: 'upsert', resource: 'pods', object: pod('p', { uid: 'u1', restarts: 1 }) })?.map((e) => e.incarnation), ['u1/1'], 'a restart is an endpoint change');
  });

  it('leaves out pods that cannot take a deployment', () => {
    assert.equal(podEndpoint(pod('p', { ready: false }), addressing), undefined);
    assert.equal(podEndpoint(pod('p', { ip: '' }), addressing), undefined);
    assert.equal(podEndpoint(pod('p', { phase: 'Pending' }), addressing), undefined);
    assert.equal(podEndpoint(pod('p', { deleting: true }), addressing), undefined);
    assert.equal(podEndpoint(pod('p', { container: 'other' }), addressing), undefined, 'no container of that name');
  });

  it('uses the Ready condition when no container is named', () => {
    assert.ok(podEndpoint(pod('p', { container: 'other' }), { port: 5555, scheme: 'http' }));
    assert.equal(podEndpoint(pod('p', { ready: false }), { port: 5555, scheme: 'http' }), undefined);
  });

  it('folds pod changes into the endpoint list, reporting only real changes, and nothing before the first list', () => {
    const set = new EndpointSet(addressing);
    assert.equal(set.apply({ type: 'replace', resource: 'pods', objects: [pod('b', { ip: '10.0.0.2' }), pod('a', { ip: '10.0.0.1' })] }), undefined);
    assert.deepEqual(set.apply({ type: 'synced', resource: 'pods' })?.map((e) => e.id), ['a', 'b']);
    assert.equal(set.apply({ type: 'upsert', resource: 'pods', object: { ...pod('a', { ip: '10.0.0.1' }), metadata: { name: 'a', namespace: 'sys', uid: 'uid-a', labels: { x: 'y' } } } }), undefined);
    assert.deepEqual(set.apply({ type: 'upsert', resource: 'pods', object: pod('a', { ready: false }) })?.map((e) => e.id), ['b']);
    assert.deepEqual(set.apply({ type: 'upsert', resource: 'pods', object: pod('c', { ip: '10.0.0.3' }) })?.map((e) => e.address), ['https://10.0.0.2:5555', 'https://10.0.0.3:5555']);
    assert.deepEqual(set.apply({ type: 'delete', resource: 'pods', object: pod('b') })?.map((e) => e.id), ['c']);
    assert.equal(set.apply({ type: 'problem', source: 'pods', message: 'x' }), undefined);
  });

  it('reports an empty list once synced with no pods', () => {
    const set = new EndpointSet(addressing);
    set.apply({ type: 'replace', resource: 'pods', objects: [] });
    assert.deepEqual(set.apply({ type: 'synced', resource: 'pods' }), []);
  });
});

describe('Ingress status addresses', () => {
  it('takes the load balancer addresses of the Service, else its external IPs, else none', () => {
    assert.deepEqual(serviceAddresses({ metadata: { name: 's' }, status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }, { hostname: 'lb.example', ports: [] }] } } } as KubeObject), [
      { hostname: 'lb.example' },
      { ip: '1.2.3.4' },
    ]);
    assert.deepEqual(serviceAddresses({ metadata: { name: 's' }, spec: { externalIPs: ['5.6.7.8', '5.6.7.8'] } } as KubeObject), [{ ip: '5.6.7.8' }]);
    assert.deepEqual(serviceAddresses({ metadata: { name: 's' }, spec: { type: 'ClusterIP', clusterIP: '10.96.0.1' } } as KubeObject), []);
  });

  it('normalises addresses whatever their order, repeats and extra fields', () => {
    const list = [{ ip: '2.2.2.2' }, { ip: '1.1.1.1', ports: [{ port: 80 }] }, { ip: '2.2.2.2' }, {}];
    assert.deepEqual(normaliseAddresses(list), [{ ip: '1.1.1.1' }, { ip: '2.2.2.2' }]);
  });
});

describe('in-cluster settings in the controller configuration', () => {
  const minimal = { watch: [], templates: { 'haproxy.cfg': '' } };
  it('defaults the HAProxy pod selector and the Data Plane port and scheme', () => {
    const result = decodeControllerConfig(minimal);
    assert.ok(result.ok);
    assert.deepEqual(result.value.settings.haproxy, { podSelector: 'app.kubernetes.io/name=haproxy', dataplane: { port: 5555, scheme: 'http' } });
  });

  it('reads them', () => {
    const result = decodeControllerConfig({
      ...minimal,
      settings: { haproxy: { podSelector: 'app=lb,tier in (edge)', namespace: 'edge', service: 'lb', dataplane: { container: 'dpapi', port: 5556, scheme: 'https' } } },
    });
    assert.ok(result.ok);
    assert.deepEqual(result.value.settings.haproxy, { podSelector: 'app=lb,tier in (edge)', namespace: 'edge', service: 'lb', dataplane: { container: 'dpapi', port: 5556, scheme: 'https' } });
  });

  it('names the path of a bad selector, port or scheme', () => {
    const result = decodeControllerConfig({ ...minimal, settings: { haproxy: { podSelector: 'app in (', dataplane: { port: 70000 } } } });
    assert.ok(!result.ok);
    assert.deepEqual(result.errors.map((e) => e.path), ['settings.haproxy.podSelector', 'settings.haproxy.dataplane.port']);
    const scheme = decodeControllerConfig({ ...minimal, settings: { haproxy: { dataplane: { scheme: 'ftp' } } } });
    assert.ok(!scheme.ok);
    assert.equal(scheme.errors[0]!.path, 'settings.haproxy.dataplane.scheme');
    const empty = decodeControllerConfig({ ...minimal, settings: { haproxy: { podSelector: ' ' } } });
    assert.ok(!empty.ok);
    assert.match(empty.errors[0]!.message, /every pod/);
  });
});
