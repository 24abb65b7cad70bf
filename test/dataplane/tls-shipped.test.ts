/**
 * TLS through a Data Plane API instance with the shipped templates: TLS Ingresses
 * and an HTTPS Gateway listener are rendered, deployed through the Data Plane API
 * double (which stores files where the real API does: its storage directories,
 * under sanitised names) and served by its real haproxy. Real HTTPS requests check
 * the certificate haproxy presents for each SNI name against the one the Secret
 * holds, as a browser would.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { renderOnce } from '../../src/cli/render-once.ts';
import { clusterEventFor } from '../../src/k8s/cluster-events.ts';
import { DataplaneTarget } from '../../src/dataplane/target.ts';
import type { Deployment, Endpoint } from '../../src/events.ts';
import { type RenderedConfig, sealRendered } from '../../src/templating/rendered.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { gatewayYaml } from '../support/gateway-manifests.ts';
import { freePort } from '../support/ports.ts';
import { routingConfig } from '../support/routing-config.ts';
import { type Reply, send, serviceManifest, startEchoBackend } from '../templates/support.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const AUTH = { username: 'admin', password: 'adminpwd' };

function manifests(echo: { web: number; api: number }, gwPort: number): string {
  const backend = (svc: string) => `{service: {name: ${svc}, port: {number: 80}}}`;
  return `${serviceManifest('web', echo.web)}---
${serviceManifest('api', echo.api)}---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: secure, namespace: shop}
spec:
  tls: [{hosts: [tls.example, api.tls.example], secretName: tls-example}]
  rules:
    - host: tls.example
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('web')}}]}
    - host: api.tls.example
      http: {paths: [{path: /, pathType: Prefix, backend: ${backend('api')}}]}
---
${gatewayYaml({ name: 'gw', namespace: 'shop', listeners: [{ name: 'https', port: gwPort, protocol: 'HTTPS', hostname: '*.gw.example', certificate: 'gw-example' }] })}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tls, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  hostnames: [www.gw.example]
  rules: [{backendRefs: [{name: api, port: 80}]}]
`;
}

function deployment(config: RenderedConfig): Deployment {
  return { config, reconcile: { seq: 1, cause: { reason: 'resources', changes: [] }, at: Date.now() }, endpoints: [], reason: 'change' } as unknown as Deployment;
}

describe('TLS through the Data Plane API double with the shipped templates', () => {
  let dir: string;
  let double: DataplaneDouble;
  let target: DataplaneTarget;
  let config: RenderedConfig;
  const ports = { https: 0, gw: 0, http: 0 };
  const certs: Record<'tls' | 'gw', string> = { tls: '', gw: '' };
  const echo: Awaited<ReturnType<typeof startEchoBackend>>[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-dp-tls-'));
    for (const key of Object.keys(ports) as (keyof typeof ports)[]) ports[key] = await freePort();
    const web = await startEchoBackend('web');
    const api = await startEchoBackend('api');
    echo.push(web, api);
    const certificates = await readFile(join(ROOT, 'templates/tests/_certificates.yaml'), 'utf8');
    for (const doc of certificates.split('\n---\n')) {
      const secret = parse(doc) as { metadata: { name: string }; data: Record<string, string> };
      const pem = Buffer.from(secret.data['tls.crt']!, 'base64').toString('utf8');
      if (secret.metadata.name === 'tls-example') certs.tls = pem;
      if (secret.metadata.name === 'gw-example') certs.gw = pem;
    }
    await writeFile(join(dir, 'certificates.yaml'), certificates);
    await writeFile(join(dir, 'routes.yaml'), manifests({ web: web.port, api: api.port }, ports.gw));
    const rendered = await renderOnce(dir, join(ROOT, 'templates'), { bindAddress: '127.0.0.1', httpPort: ports.http, httpsPort: ports.https });
    assert.ok(rendered.ok, rendered.ok ? '' : rendered.message);
    config = rendered.config;
    double = await startDataplaneDouble({ ...AUTH, reloadDelayMs: 50 });
    target = new DataplaneTarget({ ...AUTH, baseUrl: double.url, reloadPollMs: 20 });
  });

  after(async () => {
    await target?.close();
    await double?.stop();
    await Promise.all(echo.map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('renders crt-lists that name certificates relatively, as haproxy.cfg names them', () => {
    const lists = Object.keys(config.certs).filter((n) => n.endsWith('.crtlist'));
    assert.deepEqual(lists.sort(), ['gw_' + ports.gw + '.crtlist', 'https.crtlist'].sort());
    assert.match(config.certs['https.crtlist']!, /^ssl\/shop__tls-example\.pem /m);
  });

  it('deploys, with every file reference inside the crt-lists pointing into the storage directories', async () => {
    const outcome = await target.deploy(config);
    assert.equal(outcome.error, undefined);
    assert.ok(outcome.ok);
    assert.equal(outcome.detail?.mode, 'reload');
    const running = await readFile(double.configFile, 'utf8');
    const list = /crt-list (\S+)/.exec(running)?.[1];
    assert.ok(list?.startsWith(`${double.storageDirs.general}/`), `crt-list at ${list}`);
    const stored = await readFile(list!, 'utf8');
    assert.match(stored, new RegExp(`^${double.storageDirs.ssl}/haprx-shop__tls-example\\.pem api\\.tls\\.example tls\\.example$`, 'm'));
    assert.doesNotMatch(stored, /^ssl\//m);
  });

  it('serves each SNI name the certificate of its Secret, which the client accepts', async () => {
    const https = (host: string, ca: string) => send(ports.https, { host, tls: true, ca });
    const who = (r: Reply) => r.echo?.name ?? `status ${r.status}`;
    const tls = await https('tls.example', certs.tls);
    assert.equal(tls.certificate, 'tls.example');
    assert.equal(who(tls), 'web');
    assert.equal(who(await https('api.tls.example', certs.tls)), 'api');
    const gw = await send(ports.gw, { host: 'www.gw.example', tls: true, ca: certs.gw });
    assert.equal(gw.certificate, 'gw.example');
    assert.equal(who(gw), 'api');
    // The listener's certificate is not the Ingress's: a client that trusts only that one refuses it.
    await assert.rejects(send(ports.gw, { host: 'www.gw.example', tls: true, ca: certs.tls }), /self[- ]signed|unable to verify|certificate/i);
  });

  it('a crt-list naming a certificate the render lacks fails with haproxy’s own words, in the Event too, and the last configuration keeps serving', async () => {
    const broken = sealRendered({ ...config, certs: { ...config.certs, 'https.crtlist': `ssl/missing.pem tls.example\n${config.certs['https.crtlist']!}` } });
    const outcome = await target.deploy(broken);
    assert.equal(outcome.ok, false);
    assert.match(outcome.error ?? '', /unable to stat SSL certificate|unable to load|No such file/i, outcome.error);
    const endpoint: Endpoint = { id: 'haproxy-0', address: double.url };
    const event = clusterEventFor({ type: 'InstanceDeployFailed', deployment: deployment(broken), result: { endpoint, ok: false, reloaded: false, runtimeOps: 0, durationMs: 1, error: outcome.error! } } as never);
    assert.ok(event);
    assert.match(event.note, /missing\.pem/, event.note);
    assert.ok(Buffer.byteLength(event.note) <= 1024);
    const tls = await send(ports.https, { host: 'tls.example', tls: true, ca: certs.tls });
    assert.equal(tls.certificate, 'tls.example');
    // Recovery: the good configuration deploys again.
    assert.ok((await target.deploy(config)).ok);
  });

  it('rewrites a file its template marks as naming other files, and sends it again only when what it says changes', async () => {
    const files = { 'notes.txt': 'hosts come from maps/hosts.map\n' };
    const marked = routingConfig(ports.http, { be_a: [{ name: 's1', port: echo[0]!.port }] }, { 'a.test': 'be_a' }, { files });
    const config = sealRendered({ ...marked, referencing: ['general/notes.txt'] });
    const first = await target.deploy(config);
    assert.ok(first.ok, first.error);
    const stored = await readFile(join(double.storageDirs.general, 'haprx-notes.txt'), 'utf8');
    assert.equal(stored, `hosts come from ${double.storageDirs.maps}/haprx-hosts.map\n`);
    // Unmarked, the same text is sent as rendered.
    const plain = await target.deploy(sealRendered({ ...marked, files: { 'notes.txt': 'hosts come from maps/hosts.map\n' } }));
    assert.ok(plain.ok, plain.error);
    assert.equal(await readFile(join(double.storageDirs.general, 'haprx-notes.txt'), 'utf8'), 'hosts come from maps/hosts.map\n');
    const again = await target.deploy(sealRendered({ ...config, main: `${config.main}# a change elsewhere\n` }));
    assert.equal(again.detail?.ops.uploaded, 1, 'marked again: rewritten and sent');
    const unchanged = await target.deploy(sealRendered({ ...config, main: `${config.main}# another change elsewhere\n` }));
    assert.equal(unchanged.detail?.ops.uploaded, 0, 'what it says is unchanged: not sent');
  });
});
