/**
 * Soak: `haprx run` as a process, with the shipped templates, against the API server
 * double, under steady churn for SOAK_MS: ten ticks a second, each writing several
 * objects (an Ingress with a new host, a referenced Secret with new values, an
 * EndpointSlice), and every two seconds a new HAProxy pod while an old one goes.
 * The pods' Data Plane API refuses connections, so every deployment fails: per-pod
 * metric series and DeployFailed Events keep coming.
 *
 * What must stay flat: the controller's heap after a full garbage collection (the
 * child runs with --expose-gc and collects on SIGUSR2 before each reading) and the
 * number of metric series, in particular those labelled with an endpoint. Figures
 * are reported as diagnostics.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { rawToConfigMapData } from '../../src/k8s/config-map.ts';
import { makeSiteCertificate } from '../support/dataplane-double/certs.ts';
import { KubeApiDouble, type Obj } from '../support/kube-api-double/index.ts';
import { freePort } from '../support/ports.ts';
import { until } from '../support/until.ts';
import { CONFIGMAP, NS, credentialsSecret, haproxyPod } from './cluster-fixture.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const GC_ON_SIGNAL = new URL('../support/gc-on-signal.ts', import.meta.url).pathname;
const SOAK_MS = 40_000;
const TICK_MS = 100;
const INGRESSES = 40;
const SERVICES = 30;
const SECRETS = 10;

const b64 = (s: string) => Buffer.from(s).toString('base64');

interface Sample {
  at: number;
  heap: number;
  series: number;
  endpointSeries: number;
  /** Distinct endpoint label values. */
  endpoints: number;
  pods: number;
}

describe('soak: 10 ticks a second against haprx run', () => {
  let double: KubeApiDouble;
  let dir: string;
  let child: ChildProcess | undefined;
  let output = '';
  let metricsPort: number;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-soak-'));
    double = await KubeApiDouble.start({ token: 'soak-token' });
    const folder = await readTemplateDir(new URL('../../templates', import.meta.url).pathname);
    assert.ok(folder.ok);
    const raw = folder.raw as { settings?: Record<string, unknown> };
    const closed = await freePort();
    raw.settings = {
      ...raw.settings,
      debounce: '100ms',
      debounceMaxWait: '500ms',
      minDeployInterval: '200ms',
      driftInterval: 0,
      deployTimeout: '2s',
      haproxy: { podSelector: 'app.kubernetes.io/name=haproxy', service: 'haproxy', dataplane: { container: 'dataplane', port: closed, scheme: 'http' } },
    };
    double.create('v1', 'configmaps', { metadata: { name: CONFIGMAP, namespace: NS }, data: rawToConfigMapData(raw as Record<string, unknown>) });
    double.create('v1', 'secrets', credentialsSecret('pw'));
    double.create('v1', 'services', { metadata: { name: 'haproxy', namespace: NS }, spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } } });
    double.create('v1', 'namespaces', { metadata: { name: 'apps' } });
    double.create('networking.k8s.io/v1', 'ingressclasses', { metadata: { name: 'haprx' }, spec: { controller: 'haprx.io/ingress-controller' } });
    for (let i = 0; i < SERVICES; i++) {
      double.create('v1', 'services', { metadata: { name: `svc-${i}`, namespace: 'apps' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
      double.create('discovery.k8s.io/v1', 'endpointslices', slice(i, 0));
    }
    const pems = await Promise.all(Array.from({ length: 3 }, (_, i) => makeSiteCertificate(`site-${i}.example`)));
    certs = pems.map((pem) => {
      const at = pem.lastIndexOf('-----BEGIN');
      return { crt: pem.slice(0, at), key: pem.slice(at) };
    });
    for (let i = 0; i < SECRETS; i++) {
      double.create('v1', 'secrets', tlsSecret(i, 0));
      double.create('v1', 'secrets', usersSecret(i, 0));
    }
    for (let i = 0; i < INGRESSES; i++) double.create('networking.k8s.io/v1', 'ingresses', ingress(i, i));
    for (let p = 0; p < 3; p++) double.create('v1', 'pods', haproxyPod(`haproxy-${p}`, '127.0.0.1'));
    const kubeconfig = join(dir, 'kubeconfig.yaml');
    await writeFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: double, cluster: {server: "${double.url}", insecure-skip-tls-verify: true}}]
users: [{name: soak, user: {token: soak-token}}]
contexts: [{name: double, context: {cluster: double, user: soak, namespace: ${NS}}}]
current-context: double
`,
    );
    metricsPort = await freePort();
    const { KUBERNETES_SERVICE_HOST: _host, ...inherited } = process.env;
    child = spawn(process.execPath, ['--expose-gc', '--import', GC_ON_SIGNAL, MAIN, 'run', '--kubeconfig', kubeconfig, '--health-port', '0', '--debug-port', '0', '--webhook-port', '0', '--metrics-port', String(metricsPort), '--identity', 'soak-1'], {
      env: { ...inherited, HAPRX_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-20_000)));
    child.stderr!.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-20_000)));
  });

  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    await double?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  let certs: { crt: string; key: string }[] = [];
  function tlsSecret(i: number, version: number): Obj {
    const cert = certs[version % certs.length]!;
    return { apiVersion: 'v1', kind: 'Secret', metadata: { name: `tls-${i}`, namespace: 'apps' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(cert.crt), 'tls.key': b64(cert.key) } };
  }
  function usersSecret(i: number, version: number): Obj {
    // A new password hash each time: values the scrubber must learn, and forget again.
    return { apiVersion: 'v1', kind: 'Secret', metadata: { name: `users-${i}`, namespace: 'apps' }, data: { auth: b64(`user${i}:$apr1$soak${version}$${'x'.repeat(22)}\n`), note: b64(`rotation-number-${version}-of-${i}`) } };
  }
  function ingress(i: number, version: number): Obj {
    const backend = { service: { name: `svc-${version % (SERVICES * 2)}`, port: { number: 80 } } };
    const host = `h${version}.example`;
    return {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: `ing-${i}`, namespace: 'apps', annotations: { 'haprx.io/auth-type': 'basic', 'haprx.io/auth-secret': `users-${i % SECRETS}` } },
      spec: {
        ingressClassName: 'haprx',
        tls: [{ hosts: [host], secretName: `tls-${i % SECRETS}` }],
        rules: [{ host, http: { paths: [{ path: `/p${version % 7}`, pathType: 'Prefix', backend }] } }],
      },
    };
  }
  function slice(i: number, version: number): Obj {
    return {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `svc-${i}-1`, namespace: 'apps', labels: { 'kubernetes.io/service-name': `svc-${i}` } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: [`10.1.${i}.${(version % 200) + 1}`], conditions: { ready: true } }],
    };
  }

  async function sample(started: number): Promise<Sample> {
    // A full collection first: the heap read is what live objects hold.
    child!.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 150));
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    const heap = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1]);
    return {
      at: Date.now() - started,
      heap,
      series: lines.length,
      endpointSeries: lines.filter((l) => l.includes('endpoint="')).length,
      endpoints: new Set(lines.map((l) => /endpoint="([^"]*)"/.exec(l)?.[1]).filter((e) => e !== undefined)).size,
      pods: double.list('v1', 'pods', NS).length,
    };
  }

  it('keeps heap and metric series flat while objects and HAProxy pods churn', async (t) => {
    await until('the first failed deployment counted', async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return /haprx_instance_deploys_total\{endpoint="haproxy-0",result="failed"\} [1-9]/.test(text) ? true : undefined;
    }, 30_000, () => output);

    const started = Date.now();
    const samples: Sample[] = [];
    let tick = 0;
    let writes = 0;
    let nextPod = 3;
    const timer = setInterval(() => {
      tick++;
      const i = tick % INGRESSES;
      double.apply('networking.k8s.io/v1', 'ingresses', ingress(i, INGRESSES + tick));
      double.apply('v1', 'secrets', usersSecret(tick % SECRETS, tick));
      double.apply('v1', 'secrets', tlsSecret(tick % SECRETS, tick));
      double.apply('discovery.k8s.io/v1', 'endpointslices', slice(tick % SERVICES, tick));
      writes += 4;
      if (tick % 20 === 0) {
        double.create('v1', 'pods', haproxyPod(`haproxy-${nextPod}`, '127.0.0.1'));
        double.remove('v1', 'pods', NS, `haproxy-${nextPod - 3}`);
        nextPod++;
        writes += 2;
      }
    }, TICK_MS);
    try {
      while (Date.now() - started < SOAK_MS) {
        await new Promise((r) => setTimeout(r, 1_000));
        samples.push(await sample(started));
      }
    } finally {
      clearInterval(timer);
    }
    assert.equal(child!.exitCode, null, output);

    const window = (from: number, to: number) => samples.filter((s) => s.at >= from * SOAK_MS && s.at < to * SOAK_MS);
    const minHeap = (w: Sample[]) => Math.min(...w.map((s) => s.heap));
    const early = window(0.2, 0.45);
    const late = window(0.75, 1.01);
    const last = samples.at(-1)!;
    const podsSeen = nextPod;
    t.diagnostic(`${tick} ticks, ${writes} object writes in ${Math.round(SOAK_MS / 1000)} s; ${podsSeen} HAProxy pods came, ${last.pods} are left`);
    t.diagnostic(`heap after a full collection (lowest in each window): ${(minHeap(early) / 2 ** 20).toFixed(1)} MiB at 20-45 %, ${(minHeap(late) / 2 ** 20).toFixed(1)} MiB at 75-100 %`);
    t.diagnostic(`metric series: ${early[0]!.series} at 20 %, ${last.series} at the end; with an endpoint label: ${early[0]!.endpointSeries} and ${last.endpointSeries} (endpoints ${early[0]!.endpoints} and ${last.endpoints})`);
    if (process.env.SOAK_DEBUG) {
      t.diagnostic(samples.map((s) => `${s.at} ${(s.heap / 2 ** 20).toFixed(1)} ${s.series} ${s.endpointSeries}`).join(' | '));
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      t.diagnostic(text.split('\n').filter((l) => l.includes('endpoint=') || l.startsWith('haprx_events_total') || l.startsWith('haprx_reconciliation')).join(' | '));
      t.diagnostic(output.slice(-3000));
    }
    assert.ok(early.length >= 5 && late.length >= 5, `${samples.length} samples`);

    // Series labelled with an endpoint belong to the pods that exist (and one just gone, not yet noticed).
    assert.ok(last.endpoints <= last.pods + 1, `series for ${last.endpoints} endpoints with ${last.pods} pods (${podsSeen} ever)`);
    const perPod = 6; // instance_deploys ok/failed, instance_updates reload/runtime/none, runtime_operations
    assert.ok(Math.max(...late.map((s) => s.endpointSeries)) <= Math.max(...early.map((s) => s.endpointSeries)) + perPod, 'endpoint series do not grow with every pod that came');
    // Every other series exists from early on: the total moves only with the endpoint series.
    assert.ok(last.series - last.endpointSeries <= early[0]!.series - early[0]!.endpointSeries + 5, `series ${early[0]!.series} -> ${last.series}`);
    // The heap that survives garbage collection does not grow with the churn.
    assert.ok(minHeap(late) <= minHeap(early) * 1.25 + 4 * 2 ** 20, `heap ${minHeap(early)} -> ${minHeap(late)}`);
  });
});
