/**
 * The kustomize overlays as `kubectl apply -k` would apply them: each builds, every
 * object is valid against the Kubernetes schemas, and what the base promises (a
 * secure controller Deployment, HAProxy with its Data Plane API, the generated
 * controller ConfigMap) is in the output.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { decodeControllerConfig } from '../../src/config/controller-config.ts';
import { configMapToRaw } from '../../src/k8s/config-map.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { CONTROLLER_CONFIG_PATH, controllerConfigManifest } from '../../scripts/manifests.ts';
import { OVERLAYS, ROOT, build, find, type K8sObject } from './kustomize.ts';
import { schemaProblem } from './schemas.ts';

type Container = {
  name: string;
  image: string;
  ports?: { name?: string; containerPort: number }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  readinessProbe?: { httpGet?: { port: string | number } };
  livenessProbe?: { httpGet?: { port: string | number } };
  volumeMounts?: { name: string; mountPath: string }[];
  env?: { name: string; value?: string }[];
};
type PodSpec = { containers: Container[]; initContainers?: Container[]; securityContext?: Record<string, unknown>; volumes?: { name: string; emptyDir?: unknown; configMap?: { name: string } }[]; affinity?: unknown };
type Workload = K8sObject & { spec: { replicas: number; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };

const KINDS = ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment', 'Service', 'ConfigMap', 'Secret', 'StatefulSet', 'IngressClass', 'GatewayClass', 'PodDisruptionBudget', 'NetworkPolicy', 'ServiceMonitor'];

for (const overlay of OVERLAYS) {
  describe(`kubectl kustomize ${overlay}`, () => {
    it('builds, and every object validates against its Kubernetes schema', async () => {
      const objects = await build(overlay);
      for (const kind of KINDS) assert.ok(objects.some((o) => o.kind === kind), `a ${kind}`);
      const problems: string[] = [];
      for (const o of objects) {
        const problem = await schemaProblem(o);
        if (problem) problems.push(`${o.kind}/${o.metadata.name}: ${problem}`);
      }
      assert.deepEqual(problems, []);
      for (const o of objects) if (!['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'IngressClass', 'GatewayClass', 'ValidatingWebhookConfiguration'].includes(o.kind)) assert.equal(o.metadata.namespace, 'haprx-system', `${o.kind}/${o.metadata.name}`);
    });

    it('runs the controller non-root on a read-only root filesystem, with probes on :8080 and bounded resources', async () => {
      const objects = await build(overlay);
      const deployment = find<Workload>(objects, 'Deployment', 'haprx');
      const pod = deployment.spec.template.spec;
      const [c] = pod.containers;
      assert.equal(pod.securityContext?.runAsNonRoot, true);
      assert.deepEqual(pod.securityContext?.seccompProfile, { type: 'RuntimeDefault' });
      assert.equal(c!.securityContext?.readOnlyRootFilesystem, true);
      assert.equal(c!.securityContext?.allowPrivilegeEscalation, false);
      assert.deepEqual((c!.securityContext?.capabilities as { drop: string[] }).drop, ['ALL']);
      const tmp = c!.volumeMounts?.find((m) => m.mountPath === '/tmp');
      assert.ok(tmp && pod.volumes?.find((v) => v.name === tmp.name)?.emptyDir, 'an emptyDir at /tmp for haproxy -c');
      const health = c!.ports!.find((p) => p.name === 'health')!;
      assert.equal(health.containerPort, 8080);
      for (const probe of [c!.readinessProbe, c!.livenessProbe]) assert.equal(probe?.httpGet?.port, 'health');
      assert.ok(c!.resources?.requests && c!.resources.limits);
      // The heap cap follows the container's memory limit (Node.js reads the cgroup), never a size of its own.
      const nodeOptions = c!.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
      assert.match(nodeOptions, /--max-old-space-size-percentage=\d+\b/);
      assert.doesNotMatch(nodeOptions, /--max-old-space-size=/);
      const service = find<K8sObject & { spec: { ports: { port: number }[]; selector: Record<string, string> } }>(objects, 'Service', 'haprx');
      assert.deepEqual(service.spec.ports.map((p) => p.port).sort(), [8080, 9090]);
      assert.deepEqual(service.spec.selector, { 'app.kubernetes.io/name': 'haprx' });
    });

    it('runs HAProxy with the Data Plane API the controller is configured to find, sharing /etc/haproxy', async () => {
      const objects = await build(overlay);
      const configMap = find<KubeObject>(objects, 'ConfigMap', 'haprx');
      const decoded = decodeControllerConfig((configMapToRaw(configMap, 'haprx') as { raw: unknown }).raw);
      assert.ok(decoded.ok, JSON.stringify(decoded));
      const settings = decoded.value.settings.haproxy!;
      const sts = find<Workload>(objects, 'StatefulSet', 'haproxy');
      const labels = sts.spec.template.metadata.labels;
      const [key, value] = settings.podSelector.split('=');
      assert.equal(labels[key!], value, 'the podSelector selects the StatefulSet pods');
      const dataplane = sts.spec.template.spec.containers.find((c) => c.name === settings.dataplane.container);
      assert.ok(dataplane, `a container named ${settings.dataplane.container}`);
      assert.match(dataplane.image, /^haproxytech\/[a-z-]+:\d+\.\d+\.\d+$/, 'a pinned image');
      assert.ok(dataplane.ports!.some((p) => p.containerPort === settings.dataplane.port));
      for (const c of sts.spec.template.spec.containers) {
        assert.ok(c.volumeMounts?.some((m) => m.mountPath === '/etc/haproxy'), `${c.name} mounts /etc/haproxy`);
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, c.name);
        assert.equal(c.securityContext?.allowPrivilegeEscalation, false, c.name);
      }
      const lb = find<K8sObject & { spec: { type: string; selector: Record<string, string> } }>(objects, 'Service', settings.service!);
      assert.equal(lb.spec.type, 'LoadBalancer');
      assert.equal(lb.spec.selector[key!], value);
      // The Data Plane API configuration: the storage directories haprx uses, the master socket.
      const bootstrap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('haproxy-bootstrap')) as K8sObject & { data: Record<string, string> };
      assert.ok(sts.spec.template.spec.volumes!.some((v) => v.configMap?.name === bootstrap.metadata.name), 'the StatefulSet mounts the bootstrap ConfigMap by its hashed name');
      const api = parse(bootstrap.data['dataplaneapi.yaml']!) as { dataplaneapi: { port: number; resources: Record<string, string> }; haproxy: { config_file: string; master_runtime: string } };
      assert.equal(api.dataplaneapi.port, settings.dataplane.port);
      assert.deepEqual(api.dataplaneapi.resources, { maps_dir: '/etc/haproxy/maps', ssl_certs_dir: '/etc/haproxy/ssl', general_storage_dir: '/etc/haproxy/general' });
      assert.equal(api.haproxy.config_file, '/etc/haproxy/haproxy.cfg');
      const haproxy = sts.spec.template.spec.containers.find((c) => c.name === 'haproxy') as Container & { command: string[] };
      assert.ok(haproxy.command.join(' ').includes(api.haproxy.master_runtime), 'haproxy opens the master socket the API reloads through');
      const secret = find<K8sObject & { stringData: Record<string, string> }>(objects, 'Secret', 'haprx-dataplane');
      assert.deepEqual(Object.keys(secret.stringData).sort(), ['password', 'username']);
    });

    it('lets only the controller reach the Data Plane port, and anyone HTTP and HTTPS', async () => {
      const objects = await build(overlay);
      type Policy = K8sObject & { spec: { podSelector: { matchLabels: Record<string, string> }; ingress: { from?: { podSelector: { matchLabels: Record<string, string> } }[]; ports: { port: number }[] }[] } };
      const haproxy = find<Policy>(objects, 'NetworkPolicy', 'haproxy');
      const open = haproxy.spec.ingress.filter((r) => !r.from).flatMap((r) => r.ports.map((p) => p.port));
      assert.deepEqual(open.sort(), [443, 80]);
      const dataplane = haproxy.spec.ingress.find((r) => r.ports.some((p) => p.port === 5555))!;
      assert.deepEqual(dataplane.from, [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'haprx' } } }]);
      const controller = find<Policy>(objects, 'NetworkPolicy', 'haprx');
      const webhook = overlay !== 'k8s/overlays/no-webhook';
      assert.deepEqual(controller.spec.ingress.flatMap((r) => r.ports.map((p) => p.port)).sort(), webhook ? [8080, 9090, 9443] : [8080, 9090], 'never the debug port');
    });

    it('keeps /debug/vars on loopback: no container port, Service port or policy rule for it, and no flag that moves it', async () => {
      const objects = await build(overlay);
      const [c] = find<Workload>(objects, 'Deployment', 'haprx').spec.template.spec.containers as (Container & { args?: string[] })[];
      assert.ok(!c!.ports!.some((p) => p.containerPort === 8081));
      assert.ok(!(c!.args ?? []).some((a) => /^--debug-(address|port)/.test(a)), JSON.stringify(c!.args));
    });

    it(overlay === 'k8s/overlays/no-webhook' ? 'leaves the admission webhook out, and turns it off' : 'registers the admission webhook: Ingresses, every route kind and the controller ConfigMap, failing open, v1 only', async () => {
      const objects = await build(overlay);
      const [c] = find<Workload>(objects, 'Deployment', 'haprx').spec.template.spec.containers as (Container & { args?: string[] })[];
      const configurations = objects.filter((o) => o.kind === 'ValidatingWebhookConfiguration');
      if (overlay === 'k8s/overlays/no-webhook') {
        assert.deepEqual(configurations, []);
        assert.ok(!objects.some((o) => o.kind === 'Service' && o.metadata.name === 'haprx-webhook'));
        assert.ok(c!.args!.includes('--webhook-port=0'));
        return;
      }
      type Hook = { name: string; failurePolicy: string; sideEffects: string; admissionReviewVersions: string[]; timeoutSeconds: number; clientConfig: { service: { name: string; namespace: string; path: string; port: number } }; rules: { apiGroups: string[]; resources: string[]; operations: string[] }[]; objectSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: { matchLabels: Record<string, string> } };
      const [vwc] = configurations as (K8sObject & { webhooks: Hook[] })[];
      const service = find<K8sObject & { spec: { ports: { port: number; targetPort: string }[]; selector: Record<string, string> } }>(objects, 'Service', 'haprx-webhook');
      assert.deepEqual(service.spec.ports.map((p) => [p.port, p.targetPort]), [[443, 'webhook']]);
      assert.equal(c!.ports!.find((p) => p.name === 'webhook')?.containerPort, 9443, 'the default of --webhook-port');
      for (const hook of vwc!.webhooks) {
        assert.equal(hook.failurePolicy, 'Ignore', `${hook.name}: an outage never blocks the cluster`);
        assert.equal(hook.sideEffects, 'None');
        assert.deepEqual(hook.admissionReviewVersions, ['v1']);
        assert.ok(hook.timeoutSeconds <= 10);
        assert.deepEqual(hook.clientConfig.service, { name: 'haprx-webhook', namespace: 'haprx-system', path: '/validate', port: 443 });
        for (const rule of hook.rules) assert.deepEqual(rule.operations, ['CREATE', 'UPDATE']);
      }
      const resources = vwc!.webhooks.flatMap((h) => h.rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.map((res) => `${g}/${res}`))));
      assert.deepEqual(resources.sort(), ['/configmaps', 'gateway.networking.k8s.io/grpcroutes', 'gateway.networking.k8s.io/httproutes', 'gateway.networking.k8s.io/tcproutes', 'gateway.networking.k8s.io/tlsroutes', 'gateway.networking.k8s.io/udproutes', 'networking.k8s.io/ingresses']);
      // Every route kind the shipped configuration watches is registered.
      const configMap = find<KubeObject>(objects, 'ConfigMap', 'haprx');
      const decoded = decodeControllerConfig((configMapToRaw(configMap, 'haprx') as { raw: unknown }).raw);
      assert.ok(decoded.ok);
      for (const w of decoded.value.watch.filter((w) => w.resource === 'ingresses' || w.resource.endsWith('routes'))) assert.ok(resources.includes(`${w.apiVersion.split('/')[0]}/${w.resource}`), w.resource);
      const config = vwc!.webhooks.find((h) => h.rules.some((r) => r.resources.includes('configmaps')))!;
      assert.deepEqual(config.namespaceSelector, { matchLabels: { 'kubernetes.io/metadata.name': 'haprx-system' } });
      assert.deepEqual(config.objectSelector!.matchLabels, { 'app.kubernetes.io/name': configMap.metadata.labels!['app.kubernetes.io/name'] });
      if (overlay === 'k8s/overlays/production') {
        const certificate = find<K8sObject & { spec: { secretName: string; dnsNames: string[] } }>(objects, 'Certificate', 'haprx-webhook');
        assert.equal(certificate.spec.secretName, 'haprx-webhook-tls', 'the default of --webhook-secret');
        assert.ok(certificate.spec.dnsNames.includes('haprx-webhook.haprx-system.svc'));
        assert.equal((vwc!.metadata as { annotations?: Record<string, string> }).annotations?.['cert-manager.io/inject-ca-from'], 'haprx-system/haprx-webhook');
      }
    });
  });
}

describe('overlays', () => {
  it('dev runs one controller replica with debug logs; production two, spread over nodes, with more resources', async () => {
    const dev = find<Workload>(await build('k8s/overlays/dev'), 'Deployment', 'haprx');
    const prod = find<Workload>(await build('k8s/overlays/production'), 'Deployment', 'haprx');
    assert.equal(dev.spec.replicas, 1);
    assert.equal(dev.spec.template.spec.containers[0]!.env!.find((e) => e.name === 'HAPRX_LOG_LEVEL')?.value, 'debug');
    assert.equal(prod.spec.replicas, 2);
    assert.ok(prod.spec.template.spec.affinity, 'anti-affinity');
    assert.equal(prod.spec.template.spec.containers[0]!.env!.find((e) => e.name === 'HAPRX_LOG_LEVEL')?.value, 'info');
    assert.deepEqual(prod.spec.template.spec.containers[0]!.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } });
    assert.equal(dev.spec.template.spec.containers[0]!.resources!.requests!.cpu, '100m');
  });

  it('the base Deployment requests 100m/128Mi and is limited to 500m/512Mi', async () => {
    const base = find<Workload>(await build('k8s/base'), 'Deployment', 'haprx');
    assert.deepEqual(base.spec.template.spec.containers[0]!.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '512Mi' } });
    assert.equal(base.spec.replicas, 2);
  });
});

describe('the schema check', () => {
  it('refuses an object that breaks its schema, and a kind it has no schema for', async () => {
    const bad = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 'two', selector: {}, template: { spec: { containers: [{ name: 'a' }] } } } };
    assert.match((await schemaProblem(bad as never)) ?? '', /replicas/);
    assert.match((await schemaProblem({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'x' } })) ?? '', /no schema/);
  });
});

describe(CONTROLLER_CONFIG_PATH, () => {
  it('is what npm run manifests writes from templates/ (run it after changing a template)', async () => {
    const committed = await readFile(join(ROOT, CONTROLLER_CONFIG_PATH), 'utf8');
    assert.equal(committed, await controllerConfigManifest(), `${CONTROLLER_CONFIG_PATH} is stale: run npm run manifests`);
  });
});
