/**
 * Admission review latency: AdmissionReview requests over HTTPS against the webhook of
 * a controller holding a synthetic cluster of 1k and 10k Ingresses (5 endpoints each),
 * rendered with the shipped templates. The requests mix a new valid Ingress, one that
 * shares a host with an existing Ingress, one the render skips (refused), and an
 * UPDATE of an existing Ingress.
 *
 *   npm run bench:admission        (SIZES=1000,10000 REQUESTS=400 by default)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../src/k8s/resource.ts';
import { Store } from '../src/k8s/store.ts';
import { Admission } from '../src/webhook/admission.ts';
import { certificateFromSecret } from '../src/webhook/certificate.ts';
import { startWebhookServer } from '../src/webhook/server.ts';
import { shippedTemplates, syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const REQUESTS = Number(process.env.REQUESTS ?? 400);
const root = new URL('..', import.meta.url).pathname;

const { config, templates } = await shippedTemplates();

// A throwaway self-signed serving certificate.
const dir = mkdtempSync(join(tmpdir(), 'haprx-bench-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', 'k.pem', '-out', 'c.pem'], { cwd: dir, stdio: 'ignore' });
const pem = { cert: readFileSync(join(dir, 'c.pem'), 'utf8'), key: readFileSync(join(dir, 'k.pem'), 'utf8') };
rmSync(dir, { recursive: true, force: true });
const b64 = (s: string) => Buffer.from(s).toString('base64');
const certificate = certificateFromSecret({ metadata: { name: 'tls' }, data: { 'tls.crt': b64(pem.cert), 'tls.key': b64(pem.key) } }, 'tls');
if (!certificate.ok) throw new Error(certificate.message);

const ingress = (name: string, host: string, service: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: 'ns-1', ...extra },
  spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }] } }] },
});
const body = (i: number, operation: 'CREATE' | 'UPDATE', object: KubeObject, oldObject?: KubeObject) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
    resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' },
    namespace: 'ns-1',
    name: object.metadata.name,
    operation,
    object,
    oldObject: oldObject ?? null,
  },
});

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const rows: Record<string, unknown>[] = [];
for (const n of SIZES) {
  const cluster = syntheticCluster({ ingresses: n, endpointsPerService: 5, tlsSecrets: 0 });
  const stores = new Map(config.watch.map((w) => [w.name, new Store(w.name, w)]));
  for (const [name, objects] of Object.entries(cluster)) for (const object of objects) stores.get(name)?.apply({ type: 'upsert', resource: name, object });
  for (const [name, store] of stores) store.apply({ type: 'synced', resource: name });
  const admission = new Admission({ namespace: 'haprx-system', configMap: 'haprx' });
  admission.setBasis({ config, templates, values: config.values, resources: stores });
  const server = await startWebhookServer({ host: '127.0.0.1', port: 0, review: (r) => admission.review(r) }, certificate.certificate);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = (payload: unknown) =>
    new Promise<{ allowed: boolean }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: server.port, path: '/validate', method: 'POST', ca: pem.cert, agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve((JSON.parse(text) as { response: { allowed: boolean } }).response));
      });
      req.on('error', reject);
      req.end(JSON.stringify(payload));
    });
  const times: number[] = [];
  let refused = 0;
  for (let i = 0; i < REQUESTS + 20; i++) {
    const k = i % n;
    const existing = cluster.ingresses[k]!;
    const payload = [
      () => body(i, 'CREATE', ingress(`new-${i}`, `new-${i}.example.com`, `svc-${k}`)),
      () => body(i, 'CREATE', ingress(`shared-${i}`, `app-${k}.example.com`, `svc-${(k + 1) % n}`)),
      () => body(i, 'CREATE', ingress(`bad-${i}`, `bad host ${i}`, `svc-${k}`)),
      () => body(i, 'UPDATE', { ...existing, metadata: { ...existing.metadata, labels: { touched: String(i) } } }, existing),
    ][i % 4]!();
    const t0 = performance.now();
    const answer = await post(payload);
    if (i >= 20) times.push(performance.now() - t0); // the first requests warm up the TLS session and the JIT
    if (!answer.allowed) refused++;
  }
  agent.destroy();
  await server.close();
  times.sort((a, b) => a - b);
  rows.push({
    ingresses: n,
    requests: times.length,
    refused: refused,
    'p50 ms': percentile(times, 50).toFixed(1),
    'p99 ms': percentile(times, 99).toFixed(1),
    'max ms': times.at(-1)!.toFixed(1),
  });
}
console.table(rows);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/admission.json`, `${JSON.stringify(rows, null, 2)}\n`);
