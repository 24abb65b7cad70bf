/**
 * Time from a change to traffic that shows it, through `haprx local` with the shipped
 * templates and settings and a real haproxy, in clusters of 1k and 10k Ingresses
 * (each with its own Service of 5 endpoints) plus one Service whose endpoints are
 * local echo servers:
 *
 * - endpoint: the Service's only endpoint moves to the other echo server;
 * - host: a new Ingress host on that Service's existing backend;
 * - backend: a new Service with its own Ingress (a new backend: one reload);
 * - tlshost (with TLS=1): a new Ingress host on that Service's backend with its own TLS
 *   Secret, until HTTPS serves its certificate;
 * - tlssecret (with TLS=1): the TLS Secret of an Ingress that names it arrives (as
 *   cert-manager issues one), until HTTPS serves its certificate.
 *
 * TLS=1 gives every Ingress of the cluster a certificate of its own (as
 * `TLS=1 npm run bench:render`), and adds the two TLS modes.
 *
 * Each change is polled through haproxy until it is served; changes are spaced by
 * GAP_MS, beyond the minimum deployment interval, so the figure is the path of one
 * change, not queueing. The same run measures what haproxy itself takes on the
 * configuration haprx deployed: `haproxy -c`, and a master reload to the same files,
 * the references for the backend figure. /healthz is sampled throughout.
 *
 *   npm run bench:latency   (SIZES=1000,10000 ITERATIONS=30 GAP_MS=2500 MODES=endpoint,host,backend;
 *                            about 4 minutes per size)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { get, startEcho } from '../test/support/echo-backend.ts';
import { freePort } from '../test/support/ports.ts';
import { type HealthFigures, startHealthProbe } from './health-probe.ts';
import { haproxyReferences, type LocalRun, sleep, startLocal, tempDir, until, writeChunks } from './local-run.ts';
import { type ModeResult, describeMode, measureChanges, modeColumns } from './change-latency.ts';
import { shippedRuntime } from './shipped-runtime.ts';
import { syntheticCluster, tlsPairs } from './synthetic.ts';
import { X509Certificate } from 'node:crypto';
import { servedSerial } from '../test/support/certificates.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const ITERATIONS = Number(process.env.ITERATIONS ?? 30);
const GAP_MS = Number(process.env.GAP_MS ?? 2_500);
const TLS = process.env.TLS === '1';
const MODES = (process.env.MODES ?? `endpoint,host,backend${TLS ? ',tlssecret,tlshost' : ''}`).split(',');
const root = new URL('..', import.meta.url).pathname;


const slice = (name: string, service: string, echoPort: number) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}, namespace: bench, labels: {kubernetes.io/service-name: ${service}}}
addressType: IPv4
ports: [{name: http, port: ${echoPort}}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`;
const b64 = (text: string) => Buffer.from(text).toString('base64');
const tlsSecret = (name: string, pair: { crt: string; key: string }) =>
  `apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata: {name: ${name}, namespace: bench}\ndata: {tls.crt: ${b64(pair.crt)}, tls.key: ${b64(pair.key)}}\n`;
const service = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: bench}\nspec: {ports: [{name: http, port: 80}]}\n`;
const ingress = (name: string, host: string, to: string) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: bench}
spec:
  rules: [{host: ${host}, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ${to}, port: {number: 80}}}}]}}]
`;

/** One size, as bench/results/latency.json holds it (bench/summary.ts reads it). */
export interface LatencyResult {
  ingresses: number;
  modes: ModeResult[];
  haproxyCheckMs: number;
  reloadMs: number;
  healthz: HealthFigures;
  loadAverage?: string;
}

const echoes = [await startEcho('blue'), await startEcho('green')];
const cap = await shippedRuntime();
const results: LatencyResult[] = [];
let failed: unknown;

for (const size of SIZES) {
  const tmp = await tempDir('haprx-latency-');
  const port = await freePort();
  const healthPort = await freePort();
  const metricsPort = await freePort();
  const httpsPort = await freePort();
  // With TLS, the certificates of the cluster, then one for each new TLS host.
  const pairs = TLS ? await tlsPairs(size + 2 * ITERATIONS) : [];
  const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: TLS ? size : 0, ...(TLS && { tls: pairs.slice(0, size) }) });
  await writeChunks(tmp.manifests, 'secrets', cluster.secrets);
  await writeChunks(tmp.manifests, 'services', cluster.services);
  await writeChunks(tmp.manifests, 'endpointslices', cluster.endpointslices);
  await writeChunks(tmp.manifests, 'ingresses', cluster.ingresses);
  await writeFile(join(tmp.manifests, 'app.yaml'), `${service('app')}---\n${ingress('app', 'app.bench', 'app')}`);
  // For tlssecret: TLS Ingresses whose Secrets do not exist yet.
  // Stamped as the API server stamps a new object: the shipped crt-list puts the oldest Ingress first (those of the
  // cluster, unstamped, come before), so a new host's line goes last, as in a cluster.
  const tlsIngress = (name: string, host: string) =>
    ingress(name, host, 'app').replace('spec:\n', `spec:\n  tls: [{hosts: [${host}], secretName: ${name}}]\n`).replace('namespace: bench}', `namespace: bench, creationTimestamp: "${new Date().toISOString()}"}`);
  if (TLS) await writeFile(join(tmp.manifests, 'pending.yaml'), Array.from({ length: ITERATIONS }, (_, i) => tlsIngress(`pending-${i}`, `p${i}.bench`)).join('---\n'));
  await writeFile(join(tmp.manifests, 'app-slice.yaml'), slice('app-1', 'app', echoes[0]!.port));
  const probe = startHealthProbe(healthPort);
  const haprx: LocalRun = startLocal({
    manifests: tmp.manifests,
    stateDir: tmp.stateDir,
    sets: { httpPort: port, httpsPort },
    healthPort,
    metricsPort,
    env: cap.env,
  });
  const body = async (host: string) => (await get(port, '/', host).catch(() => ({ body: '' }))).body.trim();
  try {
    await until(haprx, 'app.bench served', async () => (await body('app.bench')) === 'blue', 300_000, 25);
    await sleep(3_000);
    await probe.mark('start');
    const modes: ModeResult[] = [];
    /** Runs one kind of change ITERATIONS times; each `change(i)` returns the host and body (or certificate) that prove it is served. */
    const measure = async (label: string, change: (i: number) => Promise<{ host: string; body: string } | { host: string; serial: string }>) => {
      const result = await measureChanges({
        label,
        iterations: ITERATIONS,
        gapMs: GAP_MS,
        metricsPort,
        run: haprx,
        reloads: () => haprx.reloads(),
        change: async (i) => {
          const expect = await change(i);
          return 'serial' in expect ? async () => (await servedSerial(httpsPort, expect.host)) === expect.serial : async () => (await body(expect.host)) === expect.body;
        },
      });
      modes.push(result);
      console.log(describeMode(size, result));
    };
    if (MODES.includes('endpoint')) {
      await measure('endpoint change → traffic', async (i) => {
        const next = (i + 1) % 2;
        await writeFile(join(tmp.manifests, 'app-slice.yaml'), slice('app-1', 'app', echoes[next]!.port));
        return { host: 'app.bench', body: next === 0 ? 'blue' : 'green' };
      });
    }
    if (MODES.includes('host')) {
      await measure('new host on an existing backend', async (i) => {
        await writeFile(join(tmp.manifests, `host-${i}.yaml`), ingress(`host-${i}`, `h${i}.bench`, 'app'));
        return { host: `h${i}.bench`, body: await body('app.bench') };
      });
    }
    if (MODES.includes('backend')) {
      await measure('new backend (one reload)', async (i) => {
        await writeFile(join(tmp.manifests, `backend-${i}.yaml`), `${service(`svc-${i}`)}---\n${slice(`svc-${i}-1`, `svc-${i}`, echoes[0]!.port)}---\n${ingress(`backend-${i}`, `b${i}.bench`, `svc-${i}`)}`);
        return { host: `b${i}.bench`, body: 'blue' };
      });
    }
    if (MODES.includes('tlshost')) {
      if (!TLS) throw new Error('the tlshost mode needs TLS=1');
      await measure('new TLS host on an existing backend', async (i) => {
        const pair = pairs[size + i]!;
        await writeFile(join(tmp.manifests, `tls-host-${i}.yaml`), `${tlsSecret(`tls-host-${i}`, pair)}---\n${tlsIngress(`tls-host-${i}`, `t${i}.bench`)}`);
        return { host: `t${i}.bench`, serial: new X509Certificate(pair.crt).serialNumber };
      });
    }
    if (MODES.includes('tlssecret')) {
      if (!TLS) throw new Error('the tlssecret mode needs TLS=1');
      await measure('TLS Secret of an existing host arrives', async (i) => {
        const pair = pairs[size + ITERATIONS + i]!;
        await writeFile(join(tmp.manifests, `pending-secret-${i}.yaml`), tlsSecret(`pending-${i}`, pair));
        return { host: `p${i}.bench`, serial: new X509Certificate(pair.crt).serialNumber };
      });
    }
    const health = await probe.mark('changes');
    const references = await haproxyReferences(tmp.stateDir);
    console.log(`${size} Ingresses, on the deployed configuration: haproxy -c ${references.checkMs} ms, master reload ${references.reloadMs} ms; /healthz max ${health.maxMs} ms (p99 ${health.p99Ms} ms, ${health.over100ms} of ${health.n} over 100 ms)`);
    results.push({ ingresses: size, modes, haproxyCheckMs: references.checkMs, reloadMs: references.reloadMs, healthz: health, loadAverage: loadavg().map((l) => l.toFixed(2)).join(', ') });
  } catch (err) {
    failed = err;
  } finally {
    await probe.stop();
    await haprx.stop();
    await tmp.remove();
  }
  if (failed !== undefined) break;
}

const table: Record<string, Record<string, string>> = {};
for (const r of results) {
  const column = modeColumns(r.modes);
  column['haproxy -c on the same output'] = `${r.haproxyCheckMs} ms`;
  column['master reload to the same output'] = `${r.reloadMs} ms`;
  column['/healthz max while changes ran'] = `${r.healthz.maxMs} ms`;
  table[`${r.ingresses} Ingresses`] = column;
}
if (results.length > 0) console.table(table);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/latency.json`, `${JSON.stringify(results, null, 2)}\n`);
await Promise.all(echoes.map((e) => e.close()));
if (failed !== undefined) {
  console.error(`bench:latency failed: ${failed instanceof Error ? failed.message : String(failed)}`);
  process.exitCode = 1;
}
