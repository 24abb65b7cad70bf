/** Secrets held on demand: only those the watched Ingresses and Gateways reference reach the store. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { decodeControllerConfig } from '../../src/config/controller-config.ts';
import { ReferenceIndex, referencedKeys } from '../../src/k8s/references.ts';
import type { KubeObject, ResourceChange } from '../../src/k8s/resource.ts';
import { kubeChanges } from '../../src/k8s/sources.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { apiFor, fold, record, sleep, until } from './helpers.ts';

const ingress = (name: string, secrets: string[], namespace = 'apps'): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace },
  spec: { tls: secrets.map((secretName) => ({ hosts: ['x.example'], secretName })) },
});
const secret = (name: string, namespace = 'apps', payload = 'cert'): KubeObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'kubernetes.io/tls', data: { 'tls.crt': Buffer.from(payload).toString('base64') } });

describe('referencedKeys and ReferenceIndex', () => {
  it('reads names in the referencing namespace, and {name, namespace} references', () => {
    assert.deepEqual(referencedKeys(ingress('i', ['a', 'b', 'a']), '$.spec.tls[*].secretName'), ['apps/a', 'apps/b']);
    const gateway: KubeObject = { metadata: { name: 'g', namespace: 'gw' }, spec: { listeners: [{ tls: { certificateRefs: [{ name: 'c1' }, { name: 'c2', namespace: 'certs' }] } }] } };
    assert.deepEqual(referencedKeys(gateway, '$.spec.listeners[*].tls.certificateRefs[*]'), ['gw/c1', 'certs/c2']);
    assert.deepEqual(referencedKeys(ingress('i', []), '$.spec.tls[*].secretName'), []);
  });

  it('reads a namespace/name text only in the referencing namespace', () => {
    const annotated: KubeObject = { metadata: { name: 'i', namespace: 'apps', annotations: { a: 'apps/users', b: 'kube-system/users', c: 'plain', d: 'apps/x/y' } } };
    const at = (key: string) => referencedKeys(annotated, `$.metadata.annotations["${key}"]`);
    assert.deepEqual(at('a'), ['apps/users']);
    assert.deepEqual(at('b'), [], 'another namespace is never read');
    assert.deepEqual(at('c'), ['apps/plain']);
    assert.deepEqual(at('d'), [], 'not a name');
  });

  it('counts references, so that a key shared by two objects stays referenced until both let go', () => {
    const index = new ReferenceIndex([{ set: 'ing', path: '$.spec.tls[*].secretName' }]);
    assert.deepEqual(index.apply({ type: 'replace', resource: 'ing', objects: [ingress('one', ['shared', 'only-one']), ingress('two', ['shared'])] }), { added: ['apps/shared', 'apps/only-one'], removed: [] });
    assert.deepEqual(index.apply({ type: 'delete', resource: 'ing', object: ingress('one', []) }), { added: [], removed: ['apps/only-one'] });
    assert.ok(index.has('apps/shared'));
    assert.deepEqual(index.apply({ type: 'upsert', resource: 'ing', object: ingress('two', ['other']) }), { added: ['apps/other'], removed: ['apps/shared'] });
    assert.deepEqual(index.apply({ type: 'replace', resource: 'ing', objects: [] }), { added: [], removed: ['apps/other'] });
    assert.deepEqual(index.apply({ type: 'upsert', resource: 'elsewhere', object: ingress('x', ['y']) }), { added: [], removed: [] });
  });

  it('is configured with referencedBy, which must name another set that is not itself on demand', () => {
    const base = { templates: { 'haproxy.cfg': '' } };
    const ok = decodeControllerConfig({
      ...base,
      watch: [
        { name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' },
        { name: 'secrets', apiVersion: 'v1', resource: 'secrets', referencedBy: [{ set: 'ingresses', path: '$.spec.tls[*].secretName' }] },
      ],
    });
    assert.ok(ok.ok);
    const bad = decodeControllerConfig({
      ...base,
      watch: [
        { name: 'a', apiVersion: 'v1', resource: 'secrets', referencedBy: [{ set: 'b', path: '$.x' }, { set: 'a', path: 'spec.x' }, { set: 'nope', path: '$.x' }] },
        { name: 'b', apiVersion: 'v1', resource: 'configmaps', referencedBy: [{ set: 'c', path: '$.y' }] },
        { name: 'c', apiVersion: 'v1', resource: 'pods' },
      ],
    });
    assert.ok(!bad.ok);
    assert.deepEqual(bad.errors.map((e) => e.path), ['watch[0].referencedBy[0].set', 'watch[0].referencedBy[1].set', 'watch[0].referencedBy[1].path', 'watch[0].referencedBy[2].set']);
  });
});

const WATCH = (secrets: Record<string, unknown> = {}) => [
  { name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' },
  { name: 'secrets', apiVersion: 'v1', resource: 'secrets', referencedBy: [{ set: 'ingresses', path: '$.spec.tls[*].secretName' }], ...secrets },
];
/** Requests that read Secrets as a collection (a list), rather than one by name. */
const secretLists = (double: KubeApiDouble) => double.requestsFor('secrets', { watch: false }).filter((r) => !/\/secrets\/[^/]+$/.test(r.path));

describe('a set held on demand, by name', () => {
  it('when the referencing set lists late, reads what it points at before syncing, and never lists the set', async () => {
    const double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
    try {
      double.create('networking.k8s.io/v1', 'ingresses', ingress('a', ['tls-a']));
      double.create('v1', 'secrets', secret('tls-a'));
      // The Ingress list fails once.
      double.failNext({ path: /ingresses/, watch: false, status: 500 });
      const { items, subscription } = record(kubeChanges(apiFor(double), WATCH(), { backoff: { initialMs: 50, maxMs: 200, jitter: 0 }, minWatchMs: 0 }));
      await until('secrets synced', () => items.some((c) => c.type === 'synced' && c.resource === 'secrets'));
      const syncedAt = items.findIndex((c) => c.type === 'synced' && c.resource === 'secrets');
      const secretChanges = items.slice(0, syncedAt).filter((c) => c.type !== 'problem' && c.resource === 'secrets');
      assert.deepEqual(secretChanges.map((c) => c.type), ['upsert'], 'the Secret, read by name');
      assert.deepEqual([...fold(secretChanges).keys()], ['apps/tls-a']);
      assert.equal(double.requests.filter((r) => r.path === '/api/v1/namespaces/apps/secrets/tls-a').length, 1);
      assert.deepEqual(secretLists(double), []);
      subscription.unsubscribe();
    } finally {
      await double.stop();
    }
  });

  it('retries a read that fails, and re-reads after a 410 on its watch, holding the object throughout', async () => {
    const double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
    try {
      double.create('networking.k8s.io/v1', 'ingresses', ingress('a', ['tls-a']));
      double.create('v1', 'secrets', secret('tls-a'));
      double.failNext({ path: /secrets\/tls-a$/, watch: false, status: 500 });
      const { items, subscription } = record(kubeChanges(apiFor(double), WATCH(), { backoff: { initialMs: 20, maxMs: 100, jitter: 0 }, minWatchMs: 0 }));
      await until('secrets synced', () => items.some((c) => c.type === 'synced' && c.resource === 'secrets'));
      assert.ok(items.some((c) => c.type === 'problem' && c.resource === 'secrets' && /get tls-a failed: HTTP 500/.test(c.message)), 'the failure is reported');
      assert.deepEqual([...fold(items.filter((c) => c.resource === 'secrets')).keys()], ['apps/tls-a']);
      await until('watching the Secret', () => double.openWatches('secrets') === 1);
      double.apply('v1', 'secrets', secret('tls-a', 'apps', 'renewed'));
      double.compact();
      double.dropWatches('secrets');
      await until('read again', () => double.requests.filter((r) => r.path === '/api/v1/namespaces/apps/secrets/tls-a' && !r.watch).length >= 3, 5_000);
      const held = fold(items.filter((c) => c.resource === 'secrets'));
      assert.deepEqual([...held.keys()], ['apps/tls-a']);
      assert.deepEqual(secretLists(double), []);
      subscription.unsubscribe();
    } finally {
      await double.stop();
    }
  });
});

describe('a set held on demand, by a label the user sets', () => {
  it('lists and watches only the labelled objects, and keeps the referenced ones among them', async () => {
    const double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
    try {
      const labelled = (name: string) => ({ ...secret(name), metadata: { name, namespace: 'apps', labels: { 'haprx.io/tls': 'true' } } });
      double.create('networking.k8s.io/v1', 'ingresses', ingress('a', ['tls-a', 'unlabelled']));
      double.create('v1', 'secrets', labelled('tls-a'));
      double.create('v1', 'secrets', labelled('labelled-unreferenced'));
      double.create('v1', 'secrets', secret('unlabelled'));
      const { items, subscription } = record(kubeChanges(apiFor(double), WATCH({ labelSelector: 'haprx.io/tls=true' }), { minWatchMs: 0 }));
      await until('secrets synced', () => items.some((c) => c.type === 'synced' && c.resource === 'secrets'));
      assert.deepEqual([...fold(items.filter((c) => c.resource === 'secrets')).keys()], ['apps/tls-a']);
      const lists = secretLists(double);
      assert.equal(lists.length, 1);
      assert.equal(lists[0]!.query.labelSelector, 'haprx.io/tls=true', 'only labelled Secrets cross the network');
      subscription.unsubscribe();
    } finally {
      await double.stop();
    }
  });
});

describe('a set held on demand, against the API double', () => {
  let double: KubeApiDouble;
  let changes: ResourceChange[];
  let stop: () => void;
  const secretsOnly = () => changes.filter((c) => c.type !== 'problem' && c.resource === 'secrets');
  const heldSecrets = () => [...fold(secretsOnly()).keys()].sort();

  beforeEach(async () => {
    double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
    double.create('networking.k8s.io/v1', 'ingresses', ingress('a', ['tls-a']));
    double.create('v1', 'secrets', secret('tls-a'));
    double.create('v1', 'secrets', secret('tls-b'));
    double.create('v1', 'secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sh.helm.release.v1.big.v1', namespace: 'apps' }, data: { release: Buffer.from('x'.repeat(100_000)).toString('base64') } });
    const source = kubeChanges(
      apiFor(double),
      [
        { name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' },
        { name: 'secrets', apiVersion: 'v1', resource: 'secrets', referencedBy: [{ set: 'ingresses', path: '$.spec.tls[*].secretName' }] },
      ],
      { backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 }, minWatchMs: 0 },
    );
    const recorded = record(source);
    changes = recorded.items;
    stop = () => recorded.subscription.unsubscribe();
    await until('both synced', () => changes.filter((c) => c.type === 'synced').length === 2);
    await until('both watching', () => double.openWatches() === 2);
  });
  afterEach(async () => {
    stop();
    await double.stop();
  });

  it('holds only the referenced objects, and syncs with them in', () => {
    const syncedAt = changes.findIndex((c) => c.type === 'synced' && c.resource === 'secrets');
    assert.deepEqual([...fold(secretsOnly().slice(0, syncedAt)).keys()], ['apps/tls-a'], 'in before synced');
    assert.ok(!JSON.stringify(changes).includes('helm'), 'an unreferenced Secret never leaves the source');
    assert.equal(double.requestsFor('ingresses', { watch: false }).length, 1, 'the Ingresses are listed once for both uses');
  });

  it('reads and watches the referenced Secrets by name, and never lists Secrets', () => {
    assert.deepEqual(secretLists(double), []);
    const watches = double.requestsFor('secrets', { watch: true });
    assert.deepEqual(watches.map((r) => `${r.path} ${r.query.fieldSelector}`), ['/api/v1/namespaces/apps/secrets metadata.name=tls-a']);
  });

  it('fetches an object when it becomes referenced, and drops it when no longer referenced', async () => {
    double.create('networking.k8s.io/v1', 'ingresses', ingress('b', ['tls-b']));
    await until('tls-b held', () => heldSecrets().includes('apps/tls-b'));
    assert.equal(double.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/namespaces/apps/secrets/tls-b').length, 1);
    double.remove('networking.k8s.io/v1', 'ingresses', 'apps', 'a');
    await until('tls-a dropped', () => !heldSecrets().includes('apps/tls-a'));
    assert.deepEqual(heldSecrets(), ['apps/tls-b']);
    await until('only the watch of tls-b left', () => double.openWatches('secrets') === 1);
  });

  it('passes changes of referenced objects only', async () => {
    const before = secretsOnly().length;
    double.apply('v1', 'secrets', secret('tls-b', 'apps', 'rotated but unreferenced'));
    await sleep(150);
    assert.equal(secretsOnly().length, before);
    double.apply('v1', 'secrets', secret('tls-a', 'apps', 'renewed'));
    await until('the renewed certificate', () => secretsOnly().length === before + 1);
    const last = secretsOnly().at(-1)!;
    assert.equal(last.type === 'upsert' && Buffer.from((last.object.data as Record<string, string>)['tls.crt']!, 'base64').toString(), 'renewed');
  });

  it('waits for a referenced object that does not exist yet, and takes it when it is created', async () => {
    double.create('networking.k8s.io/v1', 'ingresses', ingress('c', ['later']));
    await sleep(150);
    assert.ok(!heldSecrets().includes('apps/later'));
    double.create('v1', 'secrets', secret('later'));
    await until('later held', () => heldSecrets().includes('apps/later'));
  });
});
