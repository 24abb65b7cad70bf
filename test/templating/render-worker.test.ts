import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { RenderWorker, type WorkerRender } from '../../src/templating/render-worker.ts';
import { compiled, service } from './support.ts';

const MAIN = `global
  maxconn 100
defaults
  mode http
  timeout connect 1s
  timeout client 1s
  timeout server 1s
frontend fe
  bind 127.0.0.1:8080
  default_backend <%= values.fallback %>
<% for (const svc of resources.services.list()) { -%>
backend <%= h.identifier('be', svc.metadata.namespace, svc.metadata.name) %>
  server s1 127.0.0.1:<%= svc.spec.ports[0].port %>
<% } -%>
`;

/** Lookups enough to run for seconds, unless a newer render stops it. */
const SLOW = `<% let n = 0; for (let i = 0; i < resources.services.size * 2e6; i++) n += resources.services.get('ns').length; %>${MAIN}`;

const SETS = [{ name: 'services' }];

/** The main thread's side: a store, and a worker fed every change it takes. */
function harness(main: string, values: Record<string, unknown> = { fallback: 'be_missing' }, timeoutMs = 10_000) {
  const store = new Store('services', { seal: false });
  const worker = new RenderWorker({ templates: { main }, sets: SETS, values, timeoutMs });
  const stores = new Map([['services', store]]);
  const apply = (change: ResourceChange) => {
    store.apply(change);
    worker.apply(change);
  };
  return { store, worker, stores, apply, values };
}

function ok(answer: WorkerRender) {
  assert.ok(answer.ok, `expected a render, got ${JSON.stringify(answer)}`);
  assert.ok(answer.result.ok, `expected the render to succeed, got ${JSON.stringify(answer.result)}`);
  return { config: answer.result.config, structure: answer.structure };
}

/** The nice value of each thread of this process, by thread id (Linux: /proc/self/task). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      // After the command's closing parenthesis: state is field 3, nice field 19.
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return nices;
}

describe('RenderWorker', () => {
  it('renders at a lower priority than the event loop, which keeps its own', async () => {
    const before = threadNices();
    const h = harness(MAIN);
    try {
      ok(await h.worker.render(h.stores));
      const after = threadNices();
      const lowered = [...after].filter(([tid, nice]) => !before.has(tid) && nice > 0);
      assert.deepEqual(lowered.map(([, nice]) => nice), [5], `one new thread at nice 5: ${JSON.stringify([...after])}`);
      assert.equal(after.get(process.pid), 0, 'the main thread as it was');
      assert.ok([...before].every(([tid, nice]) => after.get(tid) === undefined || after.get(tid) === nice), 'no other thread moved');
    } finally {
      await h.worker.close();
    }
  });

  it('renders what the main thread stores hold, as a render in this thread would, with the structure checked', async () => {
    const h = harness(MAIN);
    try {
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'a', 8081) });
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'b', 8082) });
      const first = ok(await h.worker.render(h.stores));
      const inThread = renderTemplates(compiled({ main: MAIN }), { resources: { services: h.store }, values: h.values });
      assert.ok(inThread.ok);
      assert.equal(first.config.hash, inThread.config.hash);
      assert.deepEqual(first.structure.map((p) => p.message), ["default_backend 'be_missing' names no backend or listen section"]);
      h.apply({ type: 'delete', resource: 'services', object: service('ns', 'a', 8081) });
      const second = ok(await h.worker.render(h.stores));
      assert.doesNotMatch(second.config.main, /be_ns_a/);
      assert.match(second.config.main, /backend be_ns_b\n {2}server s1 127\.0\.0\.1:8082/);
    } finally {
      await h.worker.close();
    }
  });

  it('stops an unfinished render when a newer one is asked for: latest wins', async () => {
    const h = harness(SLOW);
    try {
      for (let i = 0; i < 20; i++) h.apply({ type: 'upsert', resource: 'services', object: service('ns', `s${i}`, 9000 + i) });
      const slow = h.worker.render(h.stores);
      // The newer render sees a set that makes it quick; the slow one must not run on.
      for (let i = 0; i < 20; i++) h.apply({ type: 'delete', resource: 'services', object: service('ns', `s${i}`, 9000 + i) });
      const started = performance.now();
      const [older, newer] = await Promise.all([slow, h.worker.render(h.stores)]);
      assert.deepEqual(older, { ok: false, cancelled: true });
      assert.doesNotMatch(ok(newer).config.main, /^backend /m);
      assert.ok(performance.now() - started < 5_000, 'the superseded render did not run to its end');
    } finally {
      await h.worker.close();
    }
  });

  it('stops the render it was asked for when the caller abandons it', async () => {
    const h = harness(SLOW);
    try {
      for (let i = 0; i < 20; i++) h.apply({ type: 'upsert', resource: 'services', object: service('ns', `s${i}`, 9000 + i) });
      const abandon = new AbortController();
      const render = h.worker.render(h.stores, abandon.signal);
      setImmediate(() => abandon.abort());
      assert.deepEqual(await render, { ok: false, cancelled: true });
    } finally {
      await h.worker.close();
    }
  });

  it('fails the render of a worker that died, and renders again on a new one filled from the stores', async () => {
    const h = harness(SLOW);
    try {
      for (let i = 0; i < 3; i++) h.apply({ type: 'upsert', resource: 'services', object: service('ns', `s${i}`, 9000 + i) });
      const render = h.worker.render(h.stores);
      // As if it ran out of memory in the middle of the render.
      await (h.worker as unknown as { live: { worker: { terminate(): Promise<number> } } }).live.worker.terminate();
      const failed = await render;
      assert.equal(failed.ok, false);
      assert.match((failed as { message: string }).message, /the render worker stopped/);
      // Changes while it is gone are in the stores; the new worker starts from them.
      h.apply({ type: 'delete', resource: 'services', object: service('ns', 's0', 9000) });
      for (let i = 1; i < 3; i++) h.apply({ type: 'delete', resource: 'services', object: service('ns', `s${i}`, 9000 + i) });
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'after', 9100) });
      const again = ok(await h.worker.render(h.stores));
      assert.match(again.config.main, /backend be_ns_after\n {2}server s1 127\.0\.0\.1:9100/);
      assert.doesNotMatch(again.config.main, /be_ns_s\d/);
    } finally {
      await h.worker.close();
    }
  });

  it('starts from empty sets again when the main thread does (a graph rebuilt after a failure)', async () => {
    const h = harness(MAIN);
    try {
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'gone', 8081) });
      ok(await h.worker.render(h.stores));
      // The rebuilt graph has new, empty stores, and lists everything again.
      const fresh = new Store('services', { seal: false });
      h.worker.reset();
      for (const change of [{ type: 'upsert', resource: 'services', object: service('ns', 'kept', 8082) }, { type: 'synced', resource: 'services' }] as ResourceChange[]) {
        fresh.apply(change);
        h.worker.apply(change);
      }
      const after = ok(await h.worker.render(new Map([['services', fresh]])));
      assert.match(after.config.main, /backend be_ns_kept/);
      assert.doesNotMatch(after.config.main, /be_ns_gone/);
    } finally {
      await h.worker.close();
    }
  });

  it('passes the statuses on as this thread would render them, an unchanged one as the object it had before', async () => {
    const declaring = `${MAIN}<% for (const svc of resources.services.list()) { h.status(svc, { conditions: [{ type: 'Accepted', status: true, reason: 'Accepted', message: 'port ' + svc.spec.ports[0].port }] }); } -%>`;
    const h = harness(declaring);
    try {
      const statuses = (answer: WorkerRender) => {
        assert.ok(answer.ok && answer.result.ok, JSON.stringify(answer));
        return { list: answer.result.statuses, digest: answer.statusesDigest };
      };
      const inThread = () => {
        const result = renderTemplates(compiled({ main: declaring }), { resources: { services: h.store }, values: h.values });
        assert.ok(result.ok);
        return result.statuses;
      };
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'a', 8081) });
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'b', 8082) });
      const first = statuses(await h.worker.render(h.stores));
      assert.deepEqual(first.list, inThread());
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'b', 9092) });
      h.apply({ type: 'upsert', resource: 'services', object: service('ns', 'c', 8083) });
      const second = statuses(await h.worker.render(h.stores));
      assert.deepEqual(second.list, inThread());
      assert.match(JSON.stringify(second.list[1]), /port 9092/);
      assert.equal(second.list[0], first.list[0], 'the unchanged status is the same object');
      assert.notEqual(second.digest, first.digest);
      const third = statuses(await h.worker.render(h.stores));
      assert.equal(third.digest, second.digest);
      assert.deepEqual(third.list, inThread());
    } finally {
      await h.worker.close();
    }
  });

  it('keeps the time limit of the template realm', async () => {
    const h = harness('<% for (;;) {} %>', {}, 200);
    try {
      const answer = await h.worker.render(h.stores);
      assert.ok(answer.ok && !answer.result.ok);
      assert.match(answer.result.error.message, /stopped after the render time limit of 200 ms/);
    } finally {
      await h.worker.close();
    }
  });
});
