/**
 * The admission decision with the shipped templates: the submitted object rendered
 * with the cluster the controller holds, refused when the render would skip it (the
 * message names the field), accepted when valid, and never blocking what it did not
 * introduce. The ConfigMap is checked without cluster data.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { rawToConfigMapData } from '../../src/k8s/config-map.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import type { Admission } from '../../src/webhook/admission.ts';
import { type AdmissionRequest, parseAdmissionReview } from '../../src/webhook/review.ts';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { CONFIGMAP, CONFIG_MAP, HTTPROUTE, INGRESS, NS, admissionOver, fixtureObjects, httpRoute, ingress, prefix, reviewBody, shippedTemplates } from './support.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
let admission: Admission;
let existing: KubeObject;

function request(body: ReturnType<typeof reviewBody>): AdmissionRequest {
  const parsed = parseAdmissionReview(JSON.parse(JSON.stringify(body)));
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.request;
}
const create = (type: typeof INGRESS, o: KubeObject) => admission.review(request(reviewBody(type, 'CREATE', o)));
const update = (type: typeof INGRESS, o: KubeObject, old: KubeObject) => admission.review(request(reviewBody(type, 'UPDATE', o, old)));

before(async () => {
  existing = ingress('existing', { rules: [prefix('shop.example', '/', 'web')] }, { creationTimestamp: '2028-01-01T00:00:00Z' });
  const broken = ingress('broken', { rules: [prefix('broken.example', '/', 'web')] }, { annotations: { 'haprx.io/load-balance': 'fastest' } });
  const objects = [...(await fixtureObjects('_services.yaml', '_gateway.yaml', '_certificates.yaml')), existing, broken];
  ({ admission } = await admissionOver(objects));
});

describe('admission of Ingresses', () => {
  it('accepts a valid Ingress', () => {
    assert.deepEqual(create(INGRESS, ingress('new', { rules: [prefix('new.example', '/api', 'api', { name: 'http' })] })), { allowed: true });
  });

  it('refuses an Ingress the render would skip, naming the field', () => {
    const bad = create(INGRESS, ingress('bad-host', { rules: [prefix('bad host!', '/')] }));
    assert.equal(bad.allowed, false);
    assert.match(bad.message!, /^haprx would skip Ingress shop\/bad-host: .*spec\.rules\[0\]\.host "bad host!" is not a DNS name/);
    const path = create(INGRESS, ingress('bad-path', { rules: [prefix('ok.example', 'relative')] }));
    assert.match(path.message!, /spec\.rules\[0\]\.http\.paths\[0\]\.path "relative" is not an absolute URL path/);
    const annotation = create(INGRESS, ingress('bad-timeout', { rules: [prefix('ok.example', '/')] }, { annotations: { 'haprx.io/timeout-server': '10 years' } }));
    assert.equal(annotation.allowed, false);
    assert.match(annotation.message!, /haprx\.io\/timeout-server/);
  });

  it('refuses a TLS entry the render would leave out, naming it', () => {
    const verdict = create(INGRESS, ingress('tls', { tls: [{ hosts: ['ok.example'], secretName: 'Not_A_Name' }], rules: [prefix('ok.example', '/')] }));
    assert.equal(verdict.allowed, false);
    assert.match(verdict.message!, /spec\.tls\[0\]/);
  });

  it('accepts what only warns, passing the warning on: a Service that does not exist yet', () => {
    const verdict = create(INGRESS, ingress('early', { rules: [prefix('early.example', '/', 'not-yet')] }));
    assert.equal(verdict.allowed, true);
    assert.ok(verdict.warnings?.some((w) => /Service shop\/not-yet does not exist/.test(w)), JSON.stringify(verdict));
  });

  it('sees other Ingresses that share a host: a claimed host and path is a warning on the newer one', () => {
    const verdict = create(INGRESS, ingress('late', { rules: [prefix('shop.example', '/', 'api', { name: 'http' })] }));
    assert.equal(verdict.allowed, true);
    assert.ok(verdict.warnings?.some((w) => /already routed by Ingress shop\/existing/.test(w)), JSON.stringify(verdict));
  });

  it('lets an UPDATE through when the object was skipped already, and refuses one that breaks it', () => {
    const broken = ingress('broken', { rules: [prefix('broken.example', '/', 'web')] }, { annotations: { 'haprx.io/load-balance': 'fastest' } });
    const relabelled = { ...broken, metadata: { ...broken.metadata, labels: { team: 'shop' } } };
    assert.equal(update(INGRESS, relabelled, broken).allowed, true, 'a label on an Ingress that was skipped before');
    const breaking = ingress('existing', { rules: [prefix('shop.example', '/', 'web')] }, { annotations: { 'haprx.io/load-balance': 'fastest' } });
    const verdict = update(INGRESS, breaking, existing);
    assert.equal(verdict.allowed, false);
    assert.match(verdict.message!, /haprx\.io\/load-balance/);
  });

  it('accepts what it does not serve: another class, a deletion, an object on its way out, a status update', () => {
    assert.equal(create(INGRESS, ingress('theirs', { ingressClassName: 'nginx', rules: [prefix('bad host!', '/')] })).allowed, true);
    assert.equal(admission.review(request(reviewBody(INGRESS, 'DELETE', undefined, existing))).allowed, true);
    const leaving = ingress('leaving', { rules: [prefix('bad host!', '/')] }, { deletionTimestamp: '2030-01-01T00:00:00Z' });
    assert.equal(update(INGRESS, leaving, leaving).allowed, true);
    const status = request(reviewBody(INGRESS, 'UPDATE', ingress('bad', { rules: [prefix('bad host!', '/')] }), existing));
    assert.equal(admission.review({ ...status, subResource: 'status' }).allowed, true);
  });

  it('accepts everything, with a warning, before the controller has rendered', async () => {
    const { Admission } = await import('../../src/webhook/admission.ts');
    const fresh = new Admission({ namespace: NS, configMap: CONFIGMAP });
    const verdict = fresh.review(request(reviewBody(INGRESS, 'CREATE', ingress('x', { rules: [prefix('bad host!', '/')] }))));
    assert.equal(verdict.allowed, true);
    assert.match(verdict.warnings![0]!, /not rendered the cluster yet/);
  });
});

describe('admission of ingress-nginx Ingresses (ingressNginx)', () => {
  let nginx: Admission;
  before(async () => {
    const shipped = await shippedTemplates();
    const loaded = { ...shipped, config: { ...shipped.config, values: { ...shipped.config.values, ingressNginx: true } } };
    ({ admission: nginx } = await admissionOver(await fixtureObjects('_services.yaml'), loaded));
  });
  const nginxIngress = (name: string, annotations: Record<string, string>) =>
    ingress(name, { ingressClassName: 'nginx', rules: [prefix(`${name}.example`, '/')] }, { annotations: Object.fromEntries(Object.entries(annotations).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v])) });
  const review = (o: KubeObject) => nginx.review(request(reviewBody(INGRESS, 'CREATE', o)));

  it('refuses one the render would leave out, naming the annotation: a snippet, digest auth', () => {
    const snippet = review(nginxIngress('snippet', { 'configuration-snippet': 'return 200;' }));
    assert.equal(snippet.allowed, false);
    assert.match(snippet.message!, /^haprx would skip Ingress shop\/snippet: .*nginx\.ingress\.kubernetes\.io\/configuration-snippet: not supported/);
    const digest = review(nginxIngress('digest', { 'auth-type': 'digest', 'auth-secret': 'users' }));
    assert.equal(digest.allowed, false);
    assert.match(digest.message!, /auth-type: "digest" is not "basic"/);
  });

  it('admits a partly applied one, with a warning naming each annotation it does not apply', () => {
    const verdict = review(nginxIngress('partly', { 'enable-cors': 'true', 'mirror-target': 'https://mirror.example/', 'proxy-read-timeout': 'soon' }));
    assert.equal(verdict.allowed, true);
    assert.ok(verdict.warnings?.some((w) => /nginx\.ingress\.kubernetes\.io\/mirror-target: not supported: .*; ignored$/.test(w)), JSON.stringify(verdict));
    assert.ok(verdict.warnings?.some((w) => /proxy-read-timeout: "soon" is not a whole number/.test(w)), JSON.stringify(verdict));
    assert.deepEqual(review(nginxIngress('fine', { 'enable-cors': 'true' })), { allowed: true });
  });
});

describe('admission of HTTPRoutes', () => {
  it('accepts a valid route and refuses one the render would skip, naming the field', () => {
    assert.equal(create(HTTPROUTE, httpRoute('ok', { hostnames: ['r.example'], rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v1' } }], backendRefs: [{ name: 'web', port: 80 }] }] })).allowed, true);
    const bad = create(HTTPROUTE, httpRoute('bad', { hostnames: ['r.example'], rules: [{ matches: [{ path: { type: 'PathPrefix', value: 'no-slash' } }], backendRefs: [{ name: 'web', port: 80 }] }] }));
    assert.equal(bad.allowed, false, JSON.stringify(bad));
    assert.match(bad.message!, /^haprx would skip HTTPRoute shop\/bad: .*spec\.rules\[0\]\.matches\[0\]\.path/);
  });

  it("refuses in the words of the status the controller would write: the route's Accepted=False condition", async () => {
    const route = httpRoute('refused', { parentRefs: [{ name: 'gw' }], rules: [{ matches: [{ method: 'BREW' }], backendRefs: [{ name: 'web', port: 80 }] }] });
    const objects = [...(await fixtureObjects('_services.yaml', '_gateway.yaml')), route];
    const { admission: mine, stores, loaded } = await admissionOver(objects);
    const rendered = renderTemplates(loaded.templates, { resources: Object.fromEntries(stores), values: loaded.config.values });
    assert.ok(rendered.ok);
    const accepted = rendered.statuses.find((s) => s.ref.name === 'refused')?.entries[0]?.conditions.find((c) => c.type === 'Accepted');
    assert.equal(accepted?.status, 'False');
    assert.equal(accepted?.reason, 'UnsupportedValue');
    const verdict = mine.review(request(reviewBody(HTTPROUTE, 'CREATE', { ...route, metadata: { ...route.metadata, name: 'refused-again' } })));
    assert.equal(verdict.allowed, false);
    assert.ok(verdict.message!.endsWith(accepted!.message), `${verdict.message} / ${accepted!.message}`);
  });
});

describe('admission of the other route kinds', () => {
  const route = (kind: string, name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'gateway.networking.k8s.io/v1', kind, metadata: { name, namespace: 'shop' }, spec: { parentRefs: [{ name: 'gw' }], ...spec } });
  const type = (kind: string, resource: string) => ({ group: 'gateway.networking.k8s.io', version: 'v1', kind, resource });

  it('refuses a GRPCRoute, a TLSRoute or a TCPRoute the render would skip, and accepts valid ones', () => {
    const grpc = type('GRPCRoute', 'grpcroutes');
    assert.equal(create(grpc, route('GRPCRoute', 'ok', { rules: [{ matches: [{ method: { service: 'pkg.Svc', method: 'Call' } }], backendRefs: [{ name: 'web', port: 80 }] }] })).allowed, true);
    const bad = create(grpc, route('GRPCRoute', 'bad', { rules: [{ matches: [{ method: { service: 'pkg/Svc' } }], backendRefs: [{ name: 'web', port: 80 }] }] }));
    assert.equal(bad.allowed, false, JSON.stringify(bad));
    assert.match(bad.message!, /GRPCRoute shop\/bad: .*spec\.rules\[0\]\.matches\[0\]\.method\.service/);
    const tls = create(type('TLSRoute', 'tlsroutes'), route('TLSRoute', 'tls', { hostnames: ['bad host'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }));
    assert.equal(tls.allowed, false);
    assert.match(tls.message!, /spec\.hostnames\[0\]/);
    const tcp = create(type('TCPRoute', 'tcproutes'), route('TCPRoute', 'tcp', { rules: [{ backendRefs: [{ name: 'web', port: 80, weight: -1 }] }] }));
    assert.equal(tcp.allowed, false);
    assert.match(tcp.message!, /weight/);
  });

  it('refuses an HTTPRoute with a filter haproxy cannot serve, saying why', () => {
    const mirror = create(HTTPROUTE, route('HTTPRoute', 'mirror', { rules: [{ filters: [{ type: 'RequestMirror', requestMirror: { backendRef: { name: 'api', port: 80 } } }], backendRefs: [{ name: 'web', port: 80 }] }] }));
    assert.equal(mirror.allowed, false);
    assert.match(mirror.message!, /RequestMirror needs a copy of each request/);
  });
});

describe('admission of the controller ConfigMap', () => {
  const configMap = (data: Record<string, string>, name = CONFIGMAP): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data });
  let shipped: Record<string, string>;
  before(async () => {
    const raw = await readTemplateDir(`${ROOT}templates`);
    assert.ok(raw.ok);
    shipped = rawToConfigMapData(raw.raw as Record<string, unknown>);
  });

  it('accepts the shipped configuration', () => {
    assert.deepEqual(create(CONFIG_MAP, configMap(shipped)), { allowed: true });
  });

  it('refuses a configuration that does not decode or compile, naming the key, template and line', () => {
    const yaml = create(CONFIG_MAP, configMap({ ...shipped, 'config.yaml': 'watch: [' }));
    assert.equal(yaml.allowed, false);
    assert.match(yaml.message!, /data\["config\.yaml"\]/);
    const settings = create(CONFIG_MAP, configMap({ ...shipped, 'config.yaml': stringify({ watch: [], settings: { debounce: 'soon' } }) }));
    assert.match(settings.message!, /settings\.debounce/);
    const syntax = create(CONFIG_MAP, configMap({ ...shipped, 'haproxy.cfg': 'global\n<% if (true) { %>\n' }));
    assert.equal(syntax.allowed, false);
    assert.match(syntax.message!, /templates\["haproxy\.cfg"\]/);
  });

  it('leaves other ConfigMaps alone', () => {
    assert.equal(create(CONFIG_MAP, configMap({ 'haproxy.cfg': '<% if { %>' }, 'something-else')).allowed, true);
  });
});
