/**
 * Which Ingress changes reload haproxy, row by row as docs/templates.md states them:
 * the shipped templates are rendered after each change and deployed through the
 * Data Plane API double to its real haproxy, whose master counts the reloads
 * (`show proc`); a request then shows the change took effect.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReloadsRig } from './reloads-rig.ts';

const SERVICES = ['web', 'api', 'docs', 'fresh'] as const;

interface Path {
  path: string;
  type: 'Prefix' | 'Exact';
  service: (typeof SERVICES)[number];
}

describe('Ingress changes and reloads, through the Data Plane API double with the shipped templates', () => {
  let rig: ReloadsRig<(typeof SERVICES)[number]>;
  // The Ingress "routes"; "other" keeps the web, api and docs backends in use throughout.
  let rules: Record<string, Path[]> = {};
  /** Whether the other Ingress routes other.test/w to web. */
  let webInOther = true;

  const manifests = () => {
    const paths = (list: Path[]) => list.map((p) => `          - {path: ${p.path}, pathType: ${p.type}, backend: {service: {name: ${p.service}, port: {number: 80}}}}`).join('\n');
    const ingress = (name: string, byHost: Record<string, Path[]>) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop}
spec:
  rules:
${Object.entries(byHost)
  .map(([host, list]) => `    - host: ${host}\n      http:\n        paths:\n${paths(list)}`)
  .join('\n')}
`;
    return [...rig.services(), ingress('routes', rules), ingress('other', { 'other.test': [{ path: '/', type: 'Prefix', service: 'api' }, { path: '/d', type: 'Prefix', service: 'docs' }, ...(webInOther ? [{ path: '/w', type: 'Prefix' as const, service: 'web' as const }] : [])] })].join('---\n');
  };

  const deploy = () => rig.deploy(manifests());
  const who = (host: string, path: string) => rig.who(host, path);

  before(async () => {
    rig = await ReloadsRig.start('ingress-reloads', SERVICES);
    rules = { 'shop.test': [{ path: '/', type: 'Prefix', service: 'web' }] };
    const first = await deploy();
    assert.equal(first.reloads, 1, 'the first deployment reloads once');
    assert.equal(await who('shop.test', '/x'), 'web');
  });

  after(async () => {
    await rig?.close();
  });

  it('a host added, with Prefix / to a backend in use: no reload', async () => {
    rules['new.test'] = [{ path: '/', type: 'Prefix', service: 'api' }];
    const result = await deploy();
    assert.deepEqual(result, { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('new.test', '/anything'), 'api');
  });

  it('a path added under / of an existing host: no reload', async () => {
    rules['shop.test']!.push({ path: '/docs', type: 'Prefix', service: 'docs' });
    const result = await deploy();
    assert.deepEqual(result, { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('shop.test', '/docs/guide'), 'docs');
    assert.equal(await who('shop.test', '/doc'), 'web');
  });

  it('a host added with a new prefix (/v1): no reload, and the longest prefix still wins', async () => {
    rules['v1.test'] = [
      { path: '/v1', type: 'Prefix', service: 'api' },
      { path: '/v1/admin', type: 'Prefix', service: 'docs' },
    ];
    const result = await deploy();
    assert.deepEqual(result, { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('v1.test', '/v1/orders'), 'api');
    assert.equal(await who('v1.test', '/v1/admin/users'), 'docs');
    assert.equal(await who('v1.test', '/v2'), 'status 404');
    // A shorter prefix added after the longer ones: the longest still wins.
    rules['v1.test']!.push({ path: '/', type: 'Prefix', service: 'web' });
    assert.deepEqual(await deploy(), { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('v1.test', '/v1/admin/users'), 'docs');
    assert.equal(await who('v1.test', '/other'), 'web');
  });

  it('a path type changed (Prefix to Exact): no reload', async () => {
    rules['shop.test']![1] = { path: '/docs', type: 'Exact', service: 'docs' };
    const result = await deploy();
    assert.deepEqual(result, { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('shop.test', '/docs'), 'docs');
    assert.equal(await who('shop.test', '/docs/guide'), 'web', 'Exact no longer matches below it');
  });

  it('a backend changed to another backend in use: no reload', async () => {
    rules['shop.test']![0] = { path: '/', type: 'Prefix', service: 'api' };
    const result = await deploy();
    assert.deepEqual(result, { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('shop.test', '/x'), 'api');
  });

  it('a path removed: no reload', async () => {
    rules['shop.test']!.splice(1, 1);
    const result = await deploy();
    assert.deepEqual(result, { reloads: 0, mode: 'runtime', reasons: [] });
    assert.equal(await who('shop.test', '/docs'), 'api');
  });

  it('a backend changed, leaving the old one used by no Ingress: one reload (the backend is removed)', async () => {
    // The last two routes to web: v1.test's /, and /w of the other Ingress.
    rules['v1.test']![2] = { path: '/', type: 'Prefix', service: 'api' };
    webInOther = false;
    const result = await deploy();
    assert.equal(result.reloads, 1);
    assert.ok(result.reasons.some((r) => /backend be_shop_web_80 was removed/.test(r)), result.reasons.join('; '));
    assert.equal(await who('v1.test', '/other'), 'api');
  });

  it('a backend changed to a Service no Ingress used before: one reload (a new backend)', async () => {
    rules['shop.test']![0] = { path: '/', type: 'Prefix', service: 'fresh' };
    const result = await deploy();
    assert.equal(result.reloads, 1);
    assert.equal(result.mode, 'reload');
    assert.ok(result.reasons.some((r) => /backend .*fresh.* is new/.test(r)), result.reasons.join('; '));
    assert.equal(await who('shop.test', '/x'), 'fresh');
  });
});
