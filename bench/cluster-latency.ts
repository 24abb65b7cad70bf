/**
 * Time from a change in the cluster to traffic that shows it, through `haprx run` as a
 * cluster runs it: the real @kubernetes/client-node lists and watches the API server
 * double (test/support/kube-api-double), the shipped templates and settings come from
 * the controller ConfigMap, and every deployment goes through the Data Plane API double,
 * which drives a real haproxy. The double of the API server runs in this process; the
 * Data Plane API double and haprx each run in their own, as they would on their own
 * machines. Clusters of 1k and 10k Ingresses as bench/endpoint-latency.ts builds them
 * (each with its own Service of 5 endpoints), plus one Service whose endpoints are
 * local echo servers:
 *
 * - endpoint: that Service's EndpointSlice moves to the other echo server (one watch event);
 * - host: a new Ingress host on that Service's existing backend.
 *
 * Here a change reaches haprx as a watch event, with no file to settle: this is the path
 * of a change in a cluster, where bench:latency measures local mode's. Each change is
 * polled through haproxy until it is served, GAP_MS apart (beyond the minimum deployment
 * interval). /healthz is sampled throughout; haprx's resident memory is read after the
 * initial sync and at the end.
 *
 * haprx runs with the heap cap the manifests give it: the base's 512Mi limit, and from 5k
 * Ingresses on the production overlay's 1Gi, as docs/kubernetes.md asks (HEAP_CAP_MIB overrides).
 *
 *   npm run bench:cluster-latency   (SIZES=1000,10000 ITERATIONS=30 GAP_MS=2500 MODES=endpoint,host)
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { readTemplateDir } from '../src/config/template-dir.ts';
import { rawToConfigMapData } from '../src/k8s/config-map.ts';
import type { KubeObject } from '../src/k8s/resource.ts';
import { startRemoteDouble } from '../test/support/dataplane-double/remote.ts';
import { get, startEcho } from '../test/support/echo-backend.ts';
import { KubeApiDouble, type Obj } from '../test/support/kube-api-double/index.ts';
import { freePort } from '../test/support/ports.ts';
import { type HealthFigures, startHealthProbe } from './health-probe.ts';
import { sleep, spawnHaprx, tempDir, until } from './local-run.ts';
import { type ModeResult, describeMode, measureChanges, modeColumns } from './change-latency.ts';
import { shippedRuntime } from './shipped-runtime.ts';
import { syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const ITERATIONS = Number(process.env.ITERATIONS ?? 30);
const GAP_MS = Number(process.env.GAP_MS ?? 2_500);
const MODES = (process.env.MODES ?? 'endpoint,host').split(',');
const root = new URL('..', import.meta.url).pathname;
const NS = 'haprx-system';
const TOKEN = 'bench-token';
const AUTH = { username: 'admin', password: 'adminpwd' };
const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);

/** One size, as bench/results/cluster-latency.json holds it. */
export interface ClusterLatencyResult {
  ingresses: number;
  /** The V8 heap cap haprx ran with, and where it came from (bench/shipped-runtime.ts). */
  heapCap: { mib: number; source: string };
  /** From haprx's start to the first change served (list, render, check, the first deployment with its reload). */
  firstServedMs: number;
  modes: ModeResult[];
  rssMib: { afterSync: number; end: number };
  /** The heaps in use and held, of the main thread and the render thread, by haprx's own metrics. */
  heapMib: { afterSync: HeapFigures; end: HeapFigures };
  healthz: { start: HealthFigures; changes: HealthFigures };
  loadAverage: string;
}

interface HeapFigures {
  main: { used: number; total: number };
  render: { used: number; total: number };
}

/** The heaps as haprx's metrics give them: nodejs_heap_* (the main thread) and haprx_render_thread_heap_bytes (after the last render). */
async function heapFigures(metricsPort: number): Promise<HeapFigures> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const value = (series: string) => mib(Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} ([\\d.e+]+)$`, 'm').exec(text)?.[1] ?? NaN));
  return {
    main: { used: value('nodejs_heap_size_used_bytes'), total: value('nodejs_heap_size_total_bytes') },
    render: { used: value('haprx_render_thread_heap_bytes{figure="used"}'), total: value('haprx_render_thread_heap_bytes{figure="total"}') },
  };
}

const slice = (name: string, service: string, echoPort: number): Obj => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name, namespace: 'bench', labels: { 'kubernetes.io/service-name': service } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: echoPort }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});
const ingress = (name: string, host: string, to: string): Obj => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: 'bench' },
  spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: to, port: { number: 80 } } } }] } }] },
});
const apiVersionAndResource: Record<string, [string, string]> = {
  Service: ['v1', 'services'],
  EndpointSlice: ['discovery.k8s.io/v1', 'endpointslices'],
  Ingress: ['networking.k8s.io/v1', 'ingresses'],
};

/** The shipped template library as the controller ConfigMap: its own settings, with haproxy found at the Data Plane double. */
async function controllerConfigMap(dataplanePort: number, httpPort: number, httpsPort: number): Promise<Obj> {
  const folder = await readTemplateDir(join(root, 'templates'));
  if (!folder.ok) throw new Error(folder.message);
  const raw = folder.raw as { settings?: Record<string, unknown>; values?: Record<string, unknown> };
  raw.values = { ...raw.values, bindAddress: '127.0.0.1', httpPort, httpsPort };
  raw.settings = { ...raw.settings, haproxy: { podSelector: 'app.kubernetes.io/name=haproxy', dataplane: { container: 'dataplane', port: dataplanePort, scheme: 'http' } } };
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'haprx', namespace: NS }, data: rawToConfigMapData(raw as Record<string, unknown>) };
}

const haproxyPod: Obj = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'haproxy-0', namespace: NS, labels: { 'app.kubernetes.io/name': 'haproxy' } },
  spec: { containers: [{ name: 'haproxy' }, { name: 'dataplane' }] },
  status: { phase: 'Running', podIP: '127.0.0.1', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'haproxy', ready: true }, { name: 'dataplane', ready: true }] },
};
const b64 = (text: string) => Buffer.from(text).toString('base64');
const credentials: Obj = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'haprx-dataplane', namespace: NS }, data: { username: b64(AUTH.username), password: b64(AUTH.password) } };

/** `haprx run` against the double, as the image runs it, with its resident memory. */
function startRun(kubeconfig: string, healthPort: number, metricsPort: number, env: NodeJS.ProcessEnv) {
  const { KUBERNETES_SERVICE_HOST: _host, ...inherited } = env;
  const haprx = spawnHaprx(
    ['run', '--kubeconfig', kubeconfig, '--configmap', 'haprx', '--credentials-secret', 'haprx-dataplane', '--lease', 'haprx-leader', '--identity', 'bench-0', '--health-port', String(healthPort), '--metrics-port', String(metricsPort), '--debug-port', '0'],
    inherited,
  );
  return Object.assign(haprx, {
    async rssMib() {
      const kib = /^VmRSS:\s+(\d+) kB$/m.exec(await readFile(`/proc/${haprx.child.pid}/status`, 'utf8').catch(() => ''));
      return kib ? mib(Number(kib[1]) * 1024) : 0;
    },
  });
}

const echoes = [await startEcho('blue'), await startEcho('green')];
const results: ClusterLatencyResult[] = [];
let failed: unknown;

for (const size of SIZES) {
  const runtime = await shippedRuntime(size >= 5_000 ? 'production' : undefined);
  const tmp = await tempDir('haprx-cluster-latency-');
  const [httpPort, httpsPort, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  // reload_delay as k8s/base/haproxy/dataplaneapi.yaml ships it; only the first deployment reloads here.
  const dataplane = await startRemoteDouble({ ...AUTH, reloadDelayMs: 5_000 });
  const api = await KubeApiDouble.start({ token: TOKEN });
  const probe = startHealthProbe(healthPort);
  let run: ReturnType<typeof startRun> | undefined;
  try {
    api.create('v1', 'configmaps', await controllerConfigMap(Number(new URL(dataplane.url).port), httpPort, httpsPort));
    api.create('v1', 'secrets', credentials);
    api.create('v1', 'pods', haproxyPod);
    const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: 0 });
    for (const object of [...cluster.services, ...cluster.endpointslices, ...cluster.ingresses] as (KubeObject & Obj)[]) {
      const [apiVersion, resource] = apiVersionAndResource[object.kind!]!;
      api.create(apiVersion, resource, object);
    }
    api.create('v1', 'services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'app', namespace: 'bench' }, spec: { ports: [{ name: 'http', port: 80 }] } });
    api.create('discovery.k8s.io/v1', 'endpointslices', slice('app-1', 'app', echoes[0]!.port));
    api.create('networking.k8s.io/v1', 'ingresses', ingress('app', 'app.bench', 'app'));
    // The double serves plain HTTP, which the client allows only with TLS verification off.
    const kubeconfig = join(tmp.dir, 'kubeconfig.yaml');
    await writeFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: double, cluster: {server: "${api.url}", insecure-skip-tls-verify: true}}]
users: [{name: haprx, user: {token: ${TOKEN}}}]
contexts: [{name: double, context: {cluster: double, user: haprx, namespace: ${NS}}}]
current-context: double
`,
    );
    const started = performance.now();
    run = startRun(kubeconfig, healthPort, metricsPort, runtime.env);
    const body = async (host: string) => (await get(httpPort, '/', host).catch(() => ({ body: '' }))).body.trim();
    await until(run, 'app.bench served', async () => (await body('app.bench')) === 'blue', 300_000, 25);
    const firstServedMs = Math.round(performance.now() - started);
    console.log(`${size} Ingresses: first served ${firstServedMs} ms after haprx started`);
    // The Ingress status writes and Events that follow the first deployment, then quiet.
    await sleep(5_000);
    const health = { start: await probe.mark('start') };
    const rssAfterSync = await run.rssMib();
    const heapAfterSync = await heapFigures(metricsPort);
    const modes: ModeResult[] = [];
    const measure = async (label: string, change: (i: number) => { host: string; body: string }) => {
      const result = await measureChanges({
        label,
        iterations: ITERATIONS,
        gapMs: GAP_MS,
        metricsPort,
        run: run!,
        reloads: async () => (await dataplane.reloadCounts()).reloads,
        change: async (i) => {
          const expect = change(i);
          return async () => (await body(expect.host)) === expect.body;
        },
      });
      modes.push(result);
      console.log(describeMode(size, result));
    };
    if (MODES.includes('endpoint')) {
      await measure('endpoint change → traffic', (i) => {
        const next = (i + 1) % 2;
        api.apply('discovery.k8s.io/v1', 'endpointslices', slice('app-1', 'app', echoes[next]!.port));
        return { host: 'app.bench', body: next === 0 ? 'blue' : 'green' };
      });
    }
    if (MODES.includes('host')) {
      // The last endpoint change adds its server before it deletes the old one: once
      // that deployment is done, one backend answers.
      await sleep(GAP_MS);
      const served = await body('app.bench');
      await measure('new host on an existing backend', (i) => {
        api.create('networking.k8s.io/v1', 'ingresses', ingress(`host-${i}`, `h${i}.bench`, 'app'));
        return { host: `h${i}.bench`, body: served };
      });
    }
    results.push({
      ingresses: size,
      heapCap: { mib: runtime.mib, source: runtime.source },
      firstServedMs,
      modes,
      rssMib: { afterSync: rssAfterSync, end: await run.rssMib() },
      heapMib: { afterSync: heapAfterSync, end: await heapFigures(metricsPort) },
      healthz: { ...health, changes: await probe.mark('changes') },
      loadAverage: loadavg().map((l) => l.toFixed(2)).join(', '),
    });
    const r = results.at(-1)!;
    const heaps = (h: HeapFigures) => `main ${h.main.used} of ${h.main.total}, render thread ${h.render.used} of ${h.render.total}`;
    console.log(`${size} Ingresses: RSS ${r.rssMib.afterSync} MiB after the sync, ${r.rssMib.end} MiB at the end; heaps in use of held (MiB) after the sync: ${heaps(r.heapMib.afterSync)}; at the end: ${heaps(r.heapMib.end)}; /healthz max ${r.healthz.start.maxMs} ms at the start, ${r.healthz.changes.maxMs} ms during the changes`);
  } catch (err) {
    failed = err;
  } finally {
    await probe.stop();
    await run?.stop();
    await api.stop();
    await dataplane.stop();
    await tmp.remove();
  }
  if (failed !== undefined) break;
}

const table: Record<string, Record<string, string>> = {};
for (const r of results) {
  const column: Record<string, string> = { 'first served after the start': `${r.firstServedMs} ms`, ...modeColumns(r.modes) };
  column['RSS after the sync / at the end'] = `${r.rssMib.afterSync} / ${r.rssMib.end} MiB`;
  column['/healthz max while changes ran'] = `${r.healthz.changes.maxMs} ms`;
  table[`${r.ingresses} Ingresses`] = column;
}
if (results.length > 0) console.table(table);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/cluster-latency.json`, `${JSON.stringify(results, null, 2)}\n`);
await Promise.all(echoes.map((e) => e.close()));
if (failed !== undefined) {
  console.error(`bench:cluster-latency failed: ${failed instanceof Error ? failed.message : String(failed)}`);
  process.exitCode = 1;
}
