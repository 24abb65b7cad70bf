/**
 * Which changes of ingress-nginx Ingresses reload haproxy (docs/ingress-nginx.md,
 * "Reloads"): the shipped templates with `ingressNginx`, rendered after each change
 * and deployed through the Data Plane API double to its real haproxy, whose master
 * counts the reloads; a request then shows the change took effect. Route changes of
 * Ingresses without annotations are map entries, ingress-nginx's path rules included;
 * an annotation is configuration, so adding, changing or removing one reloads once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type RunningServer, startServer } from '../../src/cli/fixture-servers.ts';
import { send } from '../templates/support.ts';
import { ReloadsRig } from './reloads-rig.ts';

const SERVICES = ['web', 'api', 'docs'] as const;

interface Path {
  path: string;
  type: 'Prefix' | 'Exact' | 'ImplementationSpecific';
  service: (typeof SERVICES)[number];
}

interface Ingress {
  annotations: Record<string, string>;
  hosts: Record<string, Path[]>;
}

describe('ingress-nginx Ingress changes and reloads, through the Data Plane API double with the shipped templates', () => {
  let rig: ReloadsRig<(typeof SERVICES)[number]>;
  const ingresses: Record<string, Ingress> = {};
  let auth: RunningServer | undefined;
  const reloads: Record<string, number> = {};

  const manifests = () => {
    const ingress = (name: string, i: Ingress) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}
  namespace: shop
  annotations: ${JSON.stringify(Object.fromEntries(Object.entries(i.annotations).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v])))}
spec:
  ingressClassName: nginx
  rules:
${Object.entries(i.hosts)
  .map(([host, list]) => `    - host: ${host}\n      http:\n        paths:\n${list.map((p) => `          - {path: ${JSON.stringify(p.path)}, pathType: ${p.type}, backend: {service: {name: ${p.service}, port: {number: 80}}}}`).join('\n')}`)
  .join('\n')}
`;
    return [...rig.services(), ...Object.entries(ingresses).map(([name, i]) => ingress(name, i))].join('---\n');
  };

  /** Renders the current manifests, deploys them, and says how many reloads that took. */
  const deploy = async () => (await rig.deploy(manifests())).reloads;
  const reply = (host: string, path: string, headers?: Record<string, string>) => send(rig.port, { host, path, ...(headers && { headers }) });
  const who = (host: string, path: string, headers?: Record<string, string>) => rig.who(host, path, headers);

  before(async () => {
    rig = await ReloadsRig.start('nginx-reloads', SERVICES, { ingressNginx: true });
    // Every Service already has a backend of an ingress-nginx Ingress without annotations.
    ingresses['routes'] = { annotations: {}, hosts: { 'shop.test': [{ path: '/', type: 'Prefix', service: 'web' }] } };
    ingresses['keep'] = { annotations: {}, hosts: { 'keep.test': [{ path: '/a', type: 'Prefix', service: 'api' }, { path: '/d', type: 'Prefix', service: 'docs' }, { path: '/w', type: 'Prefix', service: 'web' }] } };
    assert.equal(await deploy(), 1, 'the first deployment reloads once');
    assert.equal(await who('shop.test', '/x'), 'web');
  });

  after(async (t) => {
    t.diagnostic(`reloads: ${JSON.stringify(reloads)}`);
    await rig?.close();
    await auth?.close();
  });

  const count = async (what: string) => (reloads[what] = await deploy());

  it('Ingresses without annotations: hosts, paths of every type, trailing-slash redirects and backends in use change at runtime, with no reload', async () => {
    ingresses['routes']!.hosts['new.test'] = [{ path: '/', type: 'Prefix', service: 'api' }];
    assert.equal(await count('a host added'), 0);
    assert.equal(await who('new.test', '/x'), 'api');

    ingresses['routes']!.hosts['shop.test']!.push({ path: '/docs', type: 'ImplementationSpecific', service: 'docs' });
    assert.equal(await count('an ImplementationSpecific path added'), 0);
    assert.equal(await who('shop.test', '/docsearch'), 'docs', 'a plain string prefix');

    ingresses['routes']!.hosts['shop.test']!.push({ path: '/folder/', type: 'Exact', service: 'api' });
    assert.equal(await count('an Exact path ending in / added'), 0);
    const redirect = await reply('shop.test', '/folder?q=1');
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.location, 'http://shop.test/folder/?q=1');
    assert.equal(await who('shop.test', '/folder/'), 'api');

    ingresses['routes']!.hosts['shop.test']![1] = { path: '/docs', type: 'Prefix', service: 'docs' };
    assert.equal(await count('a path type changed'), 0);
    assert.equal(await who('shop.test', '/docsearch'), 'web', 'Prefix matches element by element');

    ingresses['routes']!.hosts['shop.test']![0] = { path: '/', type: 'Prefix', service: 'api' };
    assert.equal(await count('a backend changed to one in use'), 0);
    assert.equal(await who('shop.test', '/x'), 'api');

    ingresses['routes']!.hosts['shop.test']!.splice(2, 1);
    assert.equal(await count('a path removed'), 0);
    assert.equal((await reply('shop.test', '/folder/')).echo?.name, 'api', 'now the / route');
  });

  it('an annotation added, changed or removed reloads once', async () => {
    ingresses['auth'] = { annotations: { 'whitelist-source-range': '10.0.0.0/8' }, hosts: { 'auth.test': [{ path: '/', type: 'Prefix', service: 'web' }] } };
    assert.equal(await count('an Ingress with an annotation added'), 1);
    assert.equal((await reply('auth.test', '/')).status, 403);

    ingresses['auth']!.annotations['whitelist-source-range'] = '127.0.0.1';
    assert.equal(await count('an annotation value changed'), 1);
    assert.equal(await who('auth.test', '/'), 'web');

    ingresses['auth']!.annotations['rewrite-target'] = '/inside';
    assert.equal(await count('rewrite-target added'), 1);
    assert.equal((await reply('auth.test', '/x')).echo?.url, '/inside');

    ingresses['auth']!.annotations = {};
    assert.equal(await count('the annotations removed'), 1);
    assert.equal((await reply('auth.test', '/x')).echo?.url, '/x');
  });

  it('external authentication deploys (its Lua script among the general files), and asks the auth service on every request', async () => {
    auth = await startServer({ name: 'auth', protocol: 'http', auth: { allow: { header: 'authorization', value: 'Bearer ok' } } });
    ingresses['ext'] = { annotations: { 'auth-url': `http://127.0.0.1:${auth.port}/verify` }, hosts: { 'ext.test': [{ path: '/', type: 'Prefix', service: 'web' }] } };
    assert.equal(await count('auth-url added'), 1);
    assert.equal((await reply('ext.test', '/')).status, 401);
    assert.equal(await who('ext.test', '/', { authorization: 'Bearer ok' }), 'web');
    // The auth service gone: 500, and the other Ingresses go on.
    await auth.close();
    assert.equal((await reply('ext.test', '/', { authorization: 'Bearer ok' })).status, 500);
    assert.equal(await who('shop.test', '/x'), 'api');
  });

  it('a canary added, reweighted and removed reloads once each', async () => {
    ingresses['canary'] = { annotations: { canary: 'true', 'canary-by-header': 'x-canary' }, hosts: { 'keep.test': [{ path: '/a', type: 'Prefix', service: 'docs' }] } };
    assert.equal(await count('a canary added'), 1);
    assert.equal(await who('keep.test', '/a', { 'x-canary': 'always' }), 'docs');
    assert.equal(await who('keep.test', '/a'), 'api');

    ingresses['canary']!.annotations['canary-weight'] = '100';
    assert.equal(await count('a canary weight changed'), 1);
    assert.equal(await who('keep.test', '/a'), 'docs');

    delete ingresses['canary'];
    assert.equal(await count('a canary removed'), 1);
    assert.equal(await who('keep.test', '/a', { 'x-canary': 'always' }), 'api');
  });
});
