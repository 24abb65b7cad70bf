/**
 * Which HTTPRoute changes reload haproxy, row by row as docs/templates.md states them:
 * the shipped templates are rendered after each change and deployed through the
 * Data Plane API double to its real haproxy, whose master counts the reloads
 * (`show proc`); requests then show the change took effect.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gatewayYaml } from '../support/gateway-manifests.ts';
import { send } from '../templates/support.ts';
import { ReloadsRig } from './reloads-rig.ts';

const SERVICES = ['web', 'api', 'docs'] as const;
type Service = (typeof SERVICES)[number];

describe('HTTPRoute changes and reloads, through the Data Plane API double with the shipped templates', () => {
  let rig: ReloadsRig<Service>;
  // The routes under test, by name, as YAML specs; "keeper" keeps every backend in use throughout.
  let routes: Record<string, string> = {};

  const manifests = () => {
    // The listener is on the Ingress HTTP port: one frontend serves both.
    const gateway = gatewayYaml({ name: 'gw', namespace: 'shop', listeners: [{ name: 'http', port: rig.port, protocol: 'HTTP' }] });
    const route = (name: string, spec: string) => `apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: ${name}, namespace: shop}\nspec:\n  parentRefs: [{name: gw}]\n${spec}`;
    const keeper = route('keeper', `  hostnames: [keeper.test]\n  rules:\n${SERVICES.map((s) => `    - {matches: [{path: {value: /${s}}}], backendRefs: [{name: ${s}, port: 80}]}`).join('\n')}\n`);
    return [...rig.services(), gateway, keeper, ...Object.entries(routes).map(([name, spec]) => route(name, spec))].join('---\n');
  };

  const deploy = () => rig.deploy(manifests());
  const runtimeOnly = { reloads: 0, mode: 'runtime', reasons: [] };
  const who = (host: string, path: string, headers?: Record<string, string>) => rig.who(host, path, headers);

  before(async () => {
    rig = await ReloadsRig.start('gateway-reloads', SERVICES);
    routes = {};
    const first = await deploy();
    assert.equal(first.reloads, 1, 'the first deployment reloads once');
    assert.equal(await who('keeper.test', '/api/x'), 'api');
  });

  after(async () => {
    await rig?.close();
  });

  it('an HTTPRoute added, with a hostname and a PathPrefix, to a backend in use: no reload', async () => {
    routes.shop = '  hostnames: [shop.test]\n  rules:\n    - backendRefs: [{name: web, port: 80}]\n';
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('shop.test', '/anything'), 'web');
  });

  it('a rule added with an Exact path and a longer prefix: no reload, and the precedence holds', async () => {
    routes.shop = `  hostnames: [shop.test]
  rules:
    - backendRefs: [{name: web, port: 80}]
    - {matches: [{path: {type: Exact, value: /status}}], backendRefs: [{name: docs, port: 80}]}
    - {matches: [{path: {value: /api}}], backendRefs: [{name: api, port: 80}]}
`;
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('shop.test', '/status'), 'docs');
    assert.equal(await who('shop.test', '/status/x'), 'web');
    assert.equal(await who('shop.test', '/api/orders'), 'api');
    assert.equal(await who('shop.test', '/apis'), 'web');
  });

  it('a wildcard hostname added, and a more specific one after it: no reload', async () => {
    routes.wild = '  hostnames: ["*.wild.test"]\n  rules: [{backendRefs: [{name: docs, port: 80}]}]\n';
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('a.b.wild.test', '/'), 'docs');
    routes.deeper = '  hostnames: ["*.deep.wild.test"]\n  rules: [{matches: [{path: {value: /only}}], backendRefs: [{name: api, port: 80}]}]\n';
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('x.deep.wild.test', '/only/this'), 'api');
    assert.equal(await who('x.deep.wild.test', '/other'), 'docs', 'the wider wildcard still answers what the narrower does not');
  });

  it('weights changed: no reload', async () => {
    routes.canary = '  hostnames: [canary.test]\n  rules: [{backendRefs: [{name: web, port: 80, weight: 0}, {name: api, port: 80, weight: 1}]}]\n';
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('canary.test', '/'), 'api');
    routes.canary = '  hostnames: [canary.test]\n  rules: [{backendRefs: [{name: web, port: 80, weight: 1}, {name: api, port: 80, weight: 0}]}]\n';
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('canary.test', '/'), 'web');
  });

  it('a backend changed to another in use, and a timeout added: no reload', async () => {
    routes.shop = `  hostnames: [shop.test]
  rules:
    - backendRefs: [{name: api, port: 80}]
      timeouts: {request: 5s}
`;
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('shop.test', '/status'), 'api');
  });

  it('an HTTPRoute deleted: no reload', async () => {
    delete routes.wild;
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('a.b.wild.test', '/'), 'status 404');
    assert.equal(await who('x.deep.wild.test', '/only/this'), 'api');
  });

  it('a header match added: one reload (the match is an ACL)', async () => {
    routes.header = '  hostnames: [header.test]\n  rules: [{matches: [{headers: [{name: x-v, value: "2"}]}], backendRefs: [{name: docs, port: 80}]}]\n';
    const result = await deploy();
    assert.equal(result.reloads, 1);
    assert.equal(await who('header.test', '/', { 'x-v': '2' }), 'docs');
    assert.equal(await who('header.test', '/'), 'status 404');
  });

  it('with ACL matches in place, a hostname-and-path route added before them: no reload', async () => {
    routes.first = '  hostnames: [header.test]\n  rules: [{matches: [{path: {type: Exact, value: /exact}}], backendRefs: [{name: api, port: 80}]}]\n';
    assert.deepEqual(await deploy(), runtimeOnly);
    assert.equal(await who('header.test', '/exact'), 'api');
    assert.equal(await who('header.test', '/', { 'x-v': '2' }), 'docs');
  });

  it('a filter added: one reload (filters are configuration lines)', async () => {
    routes.filtered = '  hostnames: [filtered.test]\n  rules: [{filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-f, value: "1"}]}}], backendRefs: [{name: web, port: 80}]}]\n';
    const result = await deploy();
    assert.equal(result.reloads, 1);
    const reply = await send(rig.port, { host: 'filtered.test', path: '/' });
    assert.equal(reply.echo?.headers['x-f'], '1');
  });
});
