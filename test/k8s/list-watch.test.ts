/**
 * The list/watch loop with the real @kubernetes/client-node against the API server
 * double: what each list/watch behaviour does to the stream of changes, and which
 * requests reach the API server.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { KubeApi } from '../../src/k8s/api.ts';
import { type ListWatchDiagnostic, type ListWatchOptions, type WatchSpec, listWatch } from '../../src/k8s/list-watch.ts';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { heapAfterGc } from '../support/heap.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { apiFor, configMap, fold, record, sleep, until } from './helpers.ts';

const FAST: ListWatchOptions = { backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 }, minWatchMs: 0 };
const CONFIGMAPS: WatchSpec = { name: 'cms', apiVersion: 'v1', resource: 'configmaps' };

let double: KubeApiDouble;
let api: KubeApi;
const stops: (() => void)[] = [];

beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  api = apiFor(double);
});
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await double.stop();
});

function start(spec: WatchSpec = CONFIGMAPS, options: ListWatchOptions = {}) {
  const diagnostics: ListWatchDiagnostic[] = [];
  const { items, subscription } = record(listWatch(api, spec, { ...FAST, ...options, onDiagnostic: (d) => diagnostics.push(d) }));
  stops.push(() => subscription.unsubscribe());
  return { changes: items, diagnostics, subscription };
}

/** The server's state for the set, as the store should see it: key → resourceVersion. */
function serverState(resource = 'configmaps', apiVersion = 'v1'): Map<string, string> {
  return new Map(double.list(apiVersion, resource).map((o) => [`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.resourceVersion!]));
}

const lists = () => double.requestsFor('configmaps', { method: 'GET', watch: false });
const watches = () => double.requestsFor('configmaps', { method: 'GET', watch: true });
const upserts = (changes: ResourceChange[], name: string) => changes.filter((c) => c.type === 'upsert' && c.object.metadata.name === name);

describe('listWatch', () => {
  it('lists in pages, passes the whole set as one replace, then synced, then watches from the list resourceVersion', async () => {
    for (const n of ['a', 'b', 'c', 'd', 'e']) double.create('v1', 'configmaps', configMap(n, { n }));
    const { changes } = start(CONFIGMAPS, { pageSize: 2 });
    await until('synced', () => changes.some((c) => c.type === 'synced'));
    assert.deepEqual(changes.map((c) => c.type), ['replace', 'synced']);
    const replace = changes[0] as Extract<ResourceChange, { type: 'replace' }>;
    assert.deepEqual(replace.objects.map((o) => o.metadata.name), ['a', 'b', 'c', 'd', 'e']);
    // List items come without kind and apiVersion; the source restores them from the list.
    assert.ok(replace.objects.every((o) => o.kind === 'ConfigMap' && o.apiVersion === 'v1'));
    assert.equal(lists().length, 3, 'five objects in pages of two');
    assert.ok(lists()[1]!.query.continue, 'the second page continues the first');
    await until('a watch', () => watches().length === 1);
    assert.equal(watches()[0]!.query.resourceVersion, double.list('v1', 'configmaps').map((o) => o.metadata.resourceVersion).sort().at(-1));
    assert.equal(watches()[0]!.query.allowWatchBookmarks, 'true');
    assert.ok(Number(watches()[0]!.query.timeoutSeconds) >= 300 && Number(watches()[0]!.query.timeoutSeconds) <= 600);
  });

  it('turns watch events into upserts and deletes, and strips the configured fields', async () => {
    const { changes } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    const created = double.create('v1', 'configmaps', {
      ...configMap('x', { k: 'v' }),
      metadata: { name: 'x', namespace: 'default', managedFields: [{ manager: 'kubectl' }], annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{…}', keep: 'yes' } },
    });
    double.apply('v1', 'configmaps', { ...created, data: { k: 'w' } });
    double.remove('v1', 'configmaps', 'default', 'x');
    await until('the delete', () => changes.some((c) => c.type === 'delete'));
    assert.deepEqual(changes.map((c) => c.type), ['replace', 'synced', 'upsert', 'upsert', 'delete']);
    const first = changes[2] as Extract<ResourceChange, { type: 'upsert' }>;
    assert.equal(first.object.metadata.managedFields, undefined);
    assert.deepEqual(first.object.metadata.annotations, { keep: 'yes' });
    assert.deepEqual((changes[3] as Extract<ResourceChange, { type: 'upsert' }>).object.data, { k: 'w' });
  });

  it('resumes from the last resourceVersion when the API server ends the watch: what changed meanwhile arrives once, with no relist', async () => {
    double.create('v1', 'configmaps', configMap('a'));
    const { changes, diagnostics } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    double.create('v1', 'configmaps', configMap('b'));
    await until('b', () => upserts(changes, 'b').length === 1);
    const rvAfterB = double.resourceVersion;
    // Held off: the changes happen while no watch is open.
    double.failNext({ path: /configmaps/, watch: true, status: 503 });
    double.endWatches();
    double.create('v1', 'configmaps', configMap('c'));
    double.remove('v1', 'configmaps', 'default', 'a');
    await until('c and the delete of a', () => upserts(changes, 'c').length === 1 && changes.some((c) => c.type === 'delete'));
    await sleep(100);
    assert.equal(lists().length, 1, 'never relisted');
    assert.equal(upserts(changes, 'b').length, 1, 'b is not replayed');
    assert.equal(upserts(changes, 'c').length, 1);
    assert.deepEqual(fold(changes), serverState());
    assert.equal(watches().at(-1)!.query.resourceVersion, rvAfterB, 'the last watch resumed where the previous one ended');
    assert.ok(diagnostics.some((d) => d.type === 'watch-ended' && d.reason === 'closed'));
    assert.ok(changes.some((c) => c.type === 'problem' && /503/.test(c.message)), 'the failed re-watch is reported');
  });

  it('resumes after a dropped connection, and reports it', async () => {
    const { changes } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    assert.equal(double.dropWatches(), 1);
    double.create('v1', 'configmaps', configMap('during-drop'));
    await until('the object created while disconnected', () => upserts(changes, 'during-drop').length === 1);
    assert.equal(lists().length, 1);
    assert.ok(changes.some((c) => c.type === 'problem' && /watch failed/.test(c.message)));
    assert.deepEqual(fold(changes), serverState());
  });

  for (const goneAs of ['event', 'http'] as const) {
    it(`relists on 410 Gone (${goneAs === 'event' ? 'an ERROR event in the stream' : 'an HTTP 410'}): the replace drops what was deleted meanwhile`, async () => {
      await double.stop();
      double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0, watchGoneAs: goneAs });
      api = apiFor(double);
      for (const n of ['keep', 'change', 'gone']) double.create('v1', 'configmaps', configMap(n, { v: '1' }));
      const { changes, diagnostics } = start();
      await until('watching', () => double.openWatches('configmaps') === 1);
      // While the watch is down: changes, then a compaction that forgets them.
      double.failNext({ path: /configmaps/, watch: true, status: 503 });
      double.endWatches();
      double.apply('v1', 'configmaps', { ...double.get('v1', 'configmaps', 'default', 'change')!, data: { v: '2' } });
      double.remove('v1', 'configmaps', 'default', 'gone');
      double.create('v1', 'configmaps', configMap('new'));
      double.compact();
      await until('a second list', () => changes.filter((c) => c.type === 'replace').length === 2);
      await until('watching again', () => double.openWatches('configmaps') === 1);
      assert.ok(diagnostics.some((d) => d.type === 'watch-ended' && d.reason === 'gone'));
      assert.equal(lists().length, 2);
      assert.deepEqual(fold(changes), serverState());
      assert.equal(changes.filter((c) => c.type === 'synced').length, 1, 'synced only once');

      // What a store makes of it: only effective changes.
      const store = new Store('cms');
      const effective = changes.filter((c) => store.apply(c));
      const lastReplace = effective.at(-1)!;
      assert.equal(lastReplace.type, 'replace', 'the relist changed the store');
      assert.deepEqual(store.list().map((o) => o.metadata.name), ['change', 'keep', 'new']);
      assert.equal(store.first('default', 'change')!.data !== undefined && (store.first('default', 'change')!.data as { v: string }).v, '2');
    });
  }

  it('a relist that finds nothing new changes nothing in a store', async () => {
    for (const n of ['a', 'b']) double.create('v1', 'configmaps', configMap(n));
    const { changes } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    double.failNext({ path: /configmaps/, watch: true, status: 503 });
    double.endWatches();
    double.create('v1', 'secrets', { metadata: { name: 'elsewhere', namespace: 'default' } });
    double.compact();
    await until('a relist', () => changes.filter((c) => c.type === 'replace').length === 2);
    const store = new Store('cms');
    const effective = changes.filter((c) => store.apply(c)).map((c) => c.type);
    assert.deepEqual(effective, ['replace', 'synced'], 'the second replace brought nothing new');
  });

  it('advances the resourceVersion with bookmarks, so a resume after a compaction needs no relist', async () => {
    await double.stop();
    double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 40 });
    api = apiFor(double);
    const { diagnostics } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    // Other resources move the shared resourceVersion on; only a bookmark tells this watch.
    for (let i = 0; i < 5; i++) double.create('v1', 'secrets', { metadata: { name: `s${i}`, namespace: 'default' } });
    const latest = double.resourceVersion;
    await sleep(150);
    double.compact();
    double.endWatches();
    await until('watching again', () => watches().length === 2 && double.openWatches('configmaps') === 1);
    assert.equal(watches()[1]!.query.resourceVersion, latest, 'resumed from the bookmark');
    assert.equal(lists().length, 1, 'no relist');
    assert.ok(!diagnostics.some((d) => d.type === 'watch-ended' && d.reason === 'gone'));
  });

  it('without bookmarks, the same compaction forces a relist', async () => {
    const { diagnostics } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    for (let i = 0; i < 5; i++) double.create('v1', 'secrets', { metadata: { name: `s${i}`, namespace: 'default' } });
    double.compact();
    double.endWatches();
    await until('a relist', () => lists().length === 2);
    assert.ok(diagnostics.some((d) => d.type === 'watch-ended' && d.reason === 'gone'));
  });

  it('retries failed lists with growing, jittered delays, reporting each failure, and syncs once the API answers', async () => {
    double.failNext({ path: /configmaps/, watch: false, status: 500, times: 3 });
    const { changes, diagnostics } = start(CONFIGMAPS, { backoff: { initialMs: 40, maxMs: 1_000, jitter: 0.5 } });
    await until('synced', () => changes.some((c) => c.type === 'synced'));
    const problems = changes.filter((c) => c.type === 'problem');
    assert.equal(problems.length, 3);
    assert.match((problems[0] as { message: string }).message, /list failed: HTTP 500/);
    const retries = diagnostics.filter((d): d is Extract<ListWatchDiagnostic, { type: 'retry' }> => d.type === 'retry');
    assert.deepEqual(retries.map((r) => r.attempt), [0, 1, 2]);
    for (const r of retries) {
      const base = 40 * 2 ** r.attempt;
      assert.ok(r.delayMs >= base && r.delayMs <= base * 1.5, `attempt ${r.attempt}: ${r.delayMs} ms within [${base}, ${base * 1.5}]`);
    }
    // The three list requests are spread by the delays.
    const times = lists().map((r) => r.at);
    assert.ok(times[3]! - times[0]! >= 40 + 80 + 160 - 15);
  });

  it('asks the API server for the label selector; an object relabelled out of it becomes a delete, and back in an upsert', async () => {
    double.create('v1', 'configmaps', configMap('in', {}, 'default', { app: 'web' }));
    double.create('v1', 'configmaps', configMap('out', {}, 'default', { app: 'db' }));
    const { changes } = start({ ...CONFIGMAPS, labelSelector: 'app in (web,api)' });
    await until('watching', () => double.openWatches('configmaps') === 1);
    assert.deepEqual((changes[0] as Extract<ResourceChange, { type: 'replace' }>).objects.map((o) => o.metadata.name), ['in']);
    assert.equal(lists()[0]!.query.labelSelector, 'app in (web,api)');
    assert.equal(watches()[0]!.query.labelSelector, 'app in (web,api)');
    const current = double.get('v1', 'configmaps', 'default', 'in')!;
    double.apply('v1', 'configmaps', { ...current, metadata: { ...current.metadata, labels: { app: 'db' } } });
    await until('the delete', () => changes.some((c) => c.type === 'delete'));
    const out = double.get('v1', 'configmaps', 'default', 'out')!;
    double.apply('v1', 'configmaps', { ...out, metadata: { ...out.metadata, labels: { app: 'api' } } });
    await until('out comes in', () => upserts(changes, 'out').length === 1);
    assert.deepEqual([...fold(changes).keys()], ['default/out']);
  });

  it('applies the field filter here: an object that stops matching becomes a delete', async () => {
    const ingress = (name: string, cls: string) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'default' }, spec: { ingressClassName: cls } });
    double.create('networking.k8s.io/v1', 'ingresses', ingress('mine', 'haprx'));
    double.create('networking.k8s.io/v1', 'ingresses', ingress('theirs', 'nginx'));
    const { changes } = start({ name: 'ing', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses', fieldSelector: 'spec.ingressClassName=haprx' });
    await until('watching', () => double.openWatches('ingresses') === 1);
    assert.deepEqual((changes[0] as Extract<ResourceChange, { type: 'replace' }>).objects.map((o) => o.metadata.name), ['mine']);
    assert.equal(double.requestsFor('ingresses')[0]!.query.fieldSelector, undefined, 'not sent to the API server, which could not apply it');
    double.apply('networking.k8s.io/v1', 'ingresses', { ...double.get('networking.k8s.io/v1', 'ingresses', 'default', 'theirs')!, spec: { ingressClassName: 'haprx' } });
    await until('theirs comes in', () => upserts(changes, 'theirs').length === 1);
    double.apply('networking.k8s.io/v1', 'ingresses', { ...double.get('networking.k8s.io/v1', 'ingresses', 'default', 'mine')!, spec: { ingressClassName: 'nginx' } });
    await until('mine goes', () => changes.some((c) => c.type === 'delete' && c.object.metadata.name === 'mine'));
    // Deleting an object that was filtered out emits nothing.
    double.remove('networking.k8s.io/v1', 'ingresses', 'default', 'mine');
    await sleep(50);
    assert.equal(changes.filter((c) => c.type === 'delete').length, 1);
    assert.deepEqual([...fold(changes).keys()], ['default/theirs']);
  });

  it('reports an object its field filter cannot be evaluated on, by name, and passes the others on', async () => {
    let deep: unknown = { host: 'a.example' };
    for (let i = 0; i < 300; i++) deep = { a: deep };
    const ingress = (name: string, spec: unknown) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'default' }, spec });
    double.create('networking.k8s.io/v1', 'ingresses', ingress('plain', { host: 'a.example' }));
    double.create('networking.k8s.io/v1', 'ingresses', ingress('deep', deep));
    const { changes } = start({ name: 'ing', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses', fieldSelector: '$..host=a.example' });
    await until('watching', () => double.openWatches('ingresses') === 1);
    assert.deepEqual((changes.find((c) => c.type === 'replace') as Extract<ResourceChange, { type: 'replace' }>).objects.map((o) => o.metadata.name), ['plain']);
    const problem = changes.find((c) => c.type === 'problem');
    assert.ok(problem?.type === 'problem');
    assert.deepEqual(problem.object, { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'default', name: 'deep' });
    assert.match(problem.message, /^Ingress default\/deep: fieldSelector JSONPath \$\.\.host: /);
    double.create('networking.k8s.io/v1', 'ingresses', ingress('later', { host: 'a.example' }));
    await until('later comes in', () => upserts(changes, 'later').length === 1);
  });

  it('watches one namespace only when asked', async () => {
    double.create('v1', 'configmaps', configMap('here', {}, 'team-a'));
    double.create('v1', 'configmaps', configMap('there', {}, 'team-b'));
    const { changes } = start({ ...CONFIGMAPS, namespace: 'team-a' });
    await until('watching', () => double.openWatches('configmaps') === 1);
    double.create('v1', 'configmaps', configMap('there-too', {}, 'team-b'));
    double.create('v1', 'configmaps', configMap('here-too', {}, 'team-a'));
    await until('here-too', () => upserts(changes, 'here-too').length === 1);
    assert.deepEqual([...fold(changes).keys()], ['team-a/here', 'team-a/here-too']);
    assert.ok(lists().every((r) => r.path === '/api/v1/namespaces/team-a/configmaps'));
  });

  it('watches any apiVersion and resource: Gateway API routes and a cluster-scoped CRD', async () => {
    double.addResource({ group: 'example.com', version: 'v1alpha1', resource: 'widgets', kind: 'Widget', namespaced: false });
    double.create('example.com/v1alpha1', 'widgets', { metadata: { name: 'w1' }, spec: { size: 3 } });
    double.create('gateway.networking.k8s.io/v1', 'httproutes', { metadata: { name: 'r1', namespace: 'default' }, spec: { hostnames: ['a.example'] } });
    const widgets = start({ name: 'widgets', apiVersion: 'example.com/v1alpha1', resource: 'widgets' });
    const routes = start({ name: 'routes', apiVersion: 'gateway.networking.k8s.io/v1', resource: 'httproutes' });
    await until('both synced', () => widgets.changes.some((c) => c.type === 'synced') && routes.changes.some((c) => c.type === 'synced'));
    const w = (widgets.changes[0] as Extract<ResourceChange, { type: 'replace' }>).objects[0]!;
    assert.equal(w.kind, 'Widget');
    assert.equal(w.apiVersion, 'example.com/v1alpha1');
    assert.equal(double.requestsFor('widgets')[0]!.path, '/apis/example.com/v1alpha1/widgets');
    assert.equal(double.requestsFor('httproutes')[0]!.path, '/apis/gateway.networking.k8s.io/v1/httproutes');
    await until('watching widgets', () => double.openWatches('widgets') === 1);
    double.create('example.com/v1alpha1', 'widgets', { metadata: { name: 'w2' } });
    await until('w2', () => upserts(widgets.changes, 'w2').length === 1);
  });

  it('counts a resource the API server does not serve (a CRD not installed) as an empty, synced set, and picks it up once served', async () => {
    const { changes } = start({ name: 'gadgets', apiVersion: 'example.com/v1', resource: 'gadgets' });
    await until('synced', () => changes.some((c) => c.type === 'synced'));
    const problem = changes.find((c) => c.type === 'problem') as { message: string } | undefined;
    assert.match(problem?.message ?? '', /HTTP 404.*does not serve gadgets; counted as empty/);
    assert.deepEqual(
      changes.filter((c) => c.type !== 'problem').map((c) => (c.type === 'replace' ? `replace ${c.objects.length}` : c.type)),
      ['replace 0', 'synced'],
    );
    double.addResource({ group: 'example.com', version: 'v1', resource: 'gadgets', kind: 'Gadget', namespaced: false });
    double.create('example.com/v1', 'gadgets', { metadata: { name: 'g1' } });
    await until('g1 listed', () => changes.some((c) => c.type === 'replace' && c.objects.some((o) => o.metadata.name === 'g1')));
    assert.equal(changes.filter((c) => c.type === 'synced').length, 1, 'synced once');
  });

  it('reports a refused token, and never syncs without a list', async () => {
    api = apiFor(double, 'wrong-token');
    const { changes } = start();
    await until('two problems', () => changes.filter((c) => c.type === 'problem').length >= 2);
    assert.match((changes[0] as { message: string }).message, /HTTP 401/);
    assert.ok(!changes.some((c) => c.type === 'synced'));
  });

  it('holds nothing of a list once it is passed on: only the receivers keep the objects', async () => {
    // A list held on through the watch that follows was a second copy of the whole set
    // (at 10k Ingresses, tens of MiB) beside the stores'. The objects of this list are
    // the test's own, watched through WeakRefs; the receiver here keeps none of them.
    const listed: WeakRef<object>[] = [];
    let watching!: () => void;
    const watched = new Promise<void>((resolve) => (watching = resolve));
    const fake = {
      async request() {
        const items = Array.from({ length: 50 }, (_, i) => {
          const data = { n: String(i) };
          listed.push(new WeakRef(data));
          return { metadata: { name: `cm-${i}`, namespace: 'a', resourceVersion: '7' }, data };
        });
        return { ok: true, status: 200, body: { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items } };
      },
      // A watch that stays open, as a healthy one does for minutes.
      watch() {
        watching();
        return Promise.resolve(new AbortController());
      },
    } as unknown as KubeApi;
    const types: string[] = [];
    const subscription = listWatch(fake, CONFIGMAPS, FAST).subscribe((c) => types.push(c.type));
    stops.push(() => subscription.unsubscribe());
    await watched;
    assert.deepEqual(types, ['replace', 'synced']);
    assert.equal(listed.length, 50);
    // A WeakRef keeps its object until the job that read it ends: collect across turns.
    for (let i = 0; i < 3; i++) {
      await sleep(0);
      heapAfterGc();
    }
    const alive = listed.filter((ref) => ref.deref() !== undefined).length;
    assert.equal(alive, 0, `${alive} of 50 listed objects are still held while the watch runs`);
  });

  it('passes a large first list on as a replace of its first objects and upserts of the rest, giving the event loop turns', async () => {
    // As one replace, 10k objects held the loop for about a second while the receivers took them.
    const fake = {
      async request() {
        const items = Array.from({ length: 2_000 }, (_, i) => ({ metadata: { name: `cm-${i}`, namespace: 'a', resourceVersion: '3' } }));
        return { ok: true, status: 200, body: { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '3' }, items } };
      },
      watch: () => new Promise<AbortController>(() => undefined),
    } as unknown as KubeApi;
    const changes: ResourceChange[] = [];
    let timerFired = false;
    let upsertsBeforeTimer = 0;
    const subscription = listWatch(fake, CONFIGMAPS, FAST).subscribe((c) => {
      if (changes.length === 0) setTimeout(() => (timerFired = true), 0);
      changes.push(c);
      if (c.type === 'upsert' && !timerFired) upsertsBeforeTimer++;
      // A receiver that takes its time with each object, as the stores do at 10k.
      const until = performance.now() + (c.type === 'upsert' ? 0.05 : 0);
      while (performance.now() < until);
    });
    stops.push(() => subscription.unsubscribe());
    await until('synced', () => changes.at(-1)?.type === 'synced');
    const replace = changes[0] as Extract<ResourceChange, { type: 'replace' }>;
    assert.equal(replace.type, 'replace');
    assert.equal(replace.objects.length, 200);
    assert.deepEqual([...new Set(changes.slice(1, -1).map((c) => c.type))], ['upsert']);
    assert.deepEqual([...fold(changes).keys()].sort(), Array.from({ length: 2_000 }, (_, i) => `a/cm-${i}`).sort(), 'every object, once');
    assert.ok(upsertsBeforeTimer < 1_800, `a timer ran while the list was passed on (after ${upsertsBeforeTimer} of 1,800 upserts)`);
  });

  it('closes its watch when unsubscribed', async () => {
    const { subscription } = start();
    await until('watching', () => double.openWatches('configmaps') === 1);
    subscription.unsubscribe();
    await until('no watch open', () => double.openWatches('configmaps') === 0);
  });
});
