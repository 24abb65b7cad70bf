/** A small cluster in the API server double, and an in-cluster controller against it with recording targets. */
import type { TargetOptions, InClusterOptions, RunningController, TargetFactory } from '../../src/cli/run.ts';
import { startInCluster } from '../../src/cli/run.ts';
import type { ControllerEvent, InstanceOutcome } from '../../src/events.ts';
import assert from 'node:assert/strict';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { rawToConfigMapData } from '../../src/k8s/config-map.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import type { KubeApiDouble, Obj } from '../support/kube-api-double/index.ts';
import { apiFor } from './helpers.ts';

export const NS = 'haprx-system';
export const CONFIGMAP = 'haprx';
export const SECRET = 'haprx-dataplane';
export const LEASE = 'haprx-leader';

/** One line per Service: what a render of the cluster says, so a deployment shows what it saw. */
export const TEMPLATE = `global
  log stdout format raw local0
<% for (const svc of resources.services.list()) { -%>
# service <%- svc.metadata.namespace %>/<%- svc.metadata.name %> port <%- svc.spec.ports[0].port %>
<% } -%>
`;

export function controllerConfig(overrides: { template?: string; settings?: Record<string, unknown>; watch?: unknown[] } = {}): Record<string, string> {
  return rawToConfigMapData({
    watch: overrides.watch ?? [{ name: 'services', apiVersion: 'v1', resource: 'services', namespace: 'apps' }],
    settings: {
      debounce: '20ms',
      debounceMaxWait: '100ms',
      minDeployInterval: '50ms',
      driftInterval: 0,
      deployTimeout: '5s',
      haproxy: { podSelector: 'app.kubernetes.io/name=haproxy', dataplane: { container: 'dataplane', port: 5555, scheme: 'https' } },
      ...overrides.settings,
    },
    templates: { 'haproxy.cfg': overrides.template ?? TEMPLATE },
  });
}

/** The shipped template library as the controller ConfigMap's data, with timings short enough for a test. */
export async function shippedConfigMapData(haproxy: Record<string, unknown> = {}): Promise<Record<string, string>> {
  const folder = await readTemplateDir(new URL('../../templates', import.meta.url).pathname);
  assert.ok(folder.ok);
  const raw = folder.raw as { settings?: Record<string, unknown> };
  raw.settings = {
    ...raw.settings,
    debounce: '20ms',
    debounceMaxWait: '100ms',
    minDeployInterval: '50ms',
    driftInterval: 0,
    haproxy: { podSelector: 'app.kubernetes.io/name=haproxy', dataplane: { container: 'dataplane', port: 5555, scheme: 'https' }, ...haproxy },
  };
  return rawToConfigMapData(raw as Record<string, unknown>);
}

export function service(name: string, port = 80): Obj {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'apps' }, spec: { ports: [{ port }] } };
}

export function haproxyPod(name: string, ip: string, ready = true): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { 'app.kubernetes.io/name': 'haproxy' } },
    spec: { containers: [{ name: 'haproxy' }, { name: 'dataplane' }] },
    status: {
      phase: 'Running',
      podIP: ip,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: [
        { name: 'haproxy', ready: true },
        { name: 'dataplane', ready },
      ],
    },
  };
}

export function credentialsSecret(password: string): Obj {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: SECRET, namespace: NS }, data: { username: Buffer.from('admin').toString('base64'), password: Buffer.from(password).toString('base64') } };
}

/** Seeds the controller ConfigMap, the credentials, two HAProxy pods and two Services. */
export function seed(double: KubeApiDouble): void {
  double.create('v1', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CONFIGMAP, namespace: NS }, data: controllerConfig() });
  double.create('v1', 'secrets', credentialsSecret('first'));
  double.create('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10'));
  double.create('v1', 'pods', haproxyPod('haproxy-1', '10.0.0.11'));
  double.create('v1', 'services', service('web'));
  double.create('v1', 'services', service('api', 8080));
}

export function editConfigMap(double: KubeApiDouble, data: Record<string, string>): void {
  const current = double.get('v1', 'configmaps', NS, CONFIGMAP)!;
  double.apply('v1', 'configmaps', { ...current, data });
}

export interface Deployed {
  controller: string;
  instance: string;
  username: string;
  password: string;
  hash: string;
  main: string;
  at: number;
}

export interface TestController {
  name: string;
  running: RunningController;
  events: ControllerEvent[];
  /** Every factory call: one per target created (a new client). */
  targetsCreated: TargetOptions[];
  /** The baseUrl of every target closed. */
  targetsClosed: string[];
  leader: boolean;
}

/** Records every deploy of every controller into `log`; `behaviour` may delay or fail it. */
export function recordingTargets(
  name: string,
  log: Deployed[],
  created: TargetOptions[],
  closed: string[],
  behaviour: (config: RenderedConfig, signal: AbortSignal | undefined) => Promise<InstanceOutcome> = async () => ({ ok: true, reloaded: false, runtimeOps: 1 }),
): TargetFactory {
  return (options) => {
    created.push(options);
    return {
      async deploy(config, signal) {
        const outcome = await behaviour(config, signal);
        log.push({ controller: name, instance: options.baseUrl, username: options.username, password: options.password, hash: config.hash, main: config.main, at: Date.now() });
        return outcome;
      },
      async close() {
        closed.push(options.baseUrl);
      },
    };
  };
}

export function startController(
  double: KubeApiDouble,
  name: string,
  deployed: Deployed[],
  extra: Partial<InClusterOptions> & { token?: string; behaviour?: Parameters<typeof recordingTargets>[4] } = {},
): TestController {
  const events: ControllerEvent[] = [];
  const targetsCreated: TargetOptions[] = [];
  const targetsClosed: string[] = [];
  const { token, behaviour, ...options } = extra;
  const controller: TestController = { name, events, targetsCreated, targetsClosed, leader: false, running: undefined as unknown as RunningController };
  controller.running = startInCluster({
    api: apiFor(double, token ?? 'test-token'),
    namespace: NS,
    configMap: CONFIGMAP,
    credentialsSecret: SECRET,
    lease: LEASE,
    identity: name,
    leaseTimings: { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 },
    validator: { validate: async () => ({ ok: true, warnings: [], durationMs: 0, cached: false }) },
    targets: recordingTargets(name, deployed, targetsCreated, targetsClosed, behaviour),
    drainTimeoutMs: 2_000,
    listWatch: { backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 }, minWatchMs: 0 },
    eventLimits: { seriesFlushMs: 100 },
    observer: { record: (event) => events.push(event) },
    ...options,
  });
  controller.running.leader$.subscribe((leader) => (controller.leader = leader));
  return controller;
}

/** The Events in the double that regard the controller ConfigMap. */
export function clusterEvents(double: KubeApiDouble): { type: string; reason: string; note: string; regarding: { uid?: string; name: string }; series?: { count: number }; reportingInstance: string }[] {
  return double.list('events.k8s.io/v1', 'events', NS) as never;
}
