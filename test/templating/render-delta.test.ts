import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ObjectStatus } from '../../src/status/types.ts';
import { statusKey } from '../../src/status/types.ts';
import type { RenderResult } from '../../src/templating/engine.ts';
import { ListDeltaReceiver, ListDeltaSender } from '../../src/templating/list-delta.ts';
import type { DeclaredObject } from '../../src/templating/map-entries.ts';
import { RenderDeltaReceiver, RenderDeltaSender } from '../../src/templating/render-delta.ts';
import type { ServerSet } from '../../src/templating/rendered.ts';
import { turnCounter } from '../support/turn-counter.ts';

function status(name: string, message = 'ok'): ObjectStatus {
  return { ref: { kind: 'Ingress', namespace: 'shop', name }, conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message }], entries: [], fields: {} };
}

/** A sender and a receiver of statuses, with every delta passed through a structured clone as between threads. */
function pair() {
  const sender = new ListDeltaSender<ObjectStatus>((s) => statusKey(s.ref), { digest: true });
  const receiver = new ListDeltaReceiver<ObjectStatus>();
  return (statuses: ObjectStatus[]) => {
    const delta = structuredClone(sender.delta(statuses));
    return { delta, statuses: receiver.take(delta) };
  };
}

describe('a list sent between the render thread and the main thread as its changes', () => {
  it('sends everything the first time, then only what changed, and puts the same list together', () => {
    const send = pair();
    const first = send([status('a'), status('b'), status('c')]);
    assert.equal(first.delta.changed.length, 3);
    assert.deepEqual(first.statuses, [status('a'), status('b'), status('c')]);

    const second = send([status('a'), status('b', 'changed'), status('c')]);
    assert.deepEqual(second.delta.changed, [status('b', 'changed')]);
    assert.deepEqual(second.delta.keys, ['Ingress shop/b']);
    assert.equal(second.delta.order, undefined, 'the same keys in the same order are not sent again');
    assert.deepEqual(second.statuses, [status('a'), status('b', 'changed'), status('c')]);
    // What did not change is the very object received before.
    assert.equal(second.statuses[0], first.statuses[0]);
    assert.equal(second.statuses[2], first.statuses[2]);
    assert.notEqual(second.statuses[1], first.statuses[1]);

    // Nothing changed: the very list of the last take, which its consumers need not go through again.
    const third = send([status('a'), status('b', 'changed'), status('c')]);
    assert.deepEqual(third.delta.changed, []);
    assert.equal(third.statuses, second.statuses);
  });

  it('follows objects that come and go', () => {
    const send = pair();
    send([status('a'), status('b')]);
    const next = send([status('b'), status('d')]);
    assert.deepEqual(next.delta.order, ['Ingress shop/b', 'Ingress shop/d']);
    assert.deepEqual(next.delta.changed, [status('d')]);
    assert.deepEqual(next.statuses, [status('b'), status('d')]);
    assert.deepEqual(send([]).statuses, []);
    assert.deepEqual(send([status('a')]).statuses, [status('a')], 'a key that came back is sent again');
  });

  it('gives equal digests for equal lists and different ones otherwise, when asked for them', () => {
    const send = pair();
    const one = send([status('a'), status('b')]).delta.digest;
    const same = send([status('a'), status('b')]).delta.digest;
    const other = send([status('a'), status('b', 'x')]).delta.digest;
    const fewer = send([status('a')]).delta.digest;
    assert.equal(typeof one, 'string');
    assert.equal(one, same);
    assert.notEqual(one, other);
    assert.notEqual(one, fewer);
    assert.equal(new ListDeltaSender<ObjectStatus>((s) => statusKey(s.ref), { digest: true }).delta([status('a'), status('b')]).digest, one, 'a new sender (a new render thread) gives the same digest');
    assert.equal(new ListDeltaSender<ObjectStatus>((s) => statusKey(s.ref)).delta([status('a')]).digest, undefined);
  });

  it('sends an item keyed by its content once, however often the list holds it', () => {
    const sender = new ListDeltaSender<{ n: number }>((_, digest) => digest);
    const receiver = new ListDeltaReceiver<{ n: number }>();
    const delta = structuredClone(sender.delta([{ n: 1 }, { n: 2 }, { n: 1 }]));
    assert.deepEqual(delta.changed, [{ n: 1 }, { n: 2 }]);
    const list = receiver.take(delta);
    assert.deepEqual(list, [{ n: 1 }, { n: 2 }, { n: 1 }]);
    assert.equal(list[0], list[2]);
  });
});

const serverSet = (backend: string, start: number, end: number, endpoints = 'ns/svc'): ServerSet => ({ backend, snippet: 'servers', args: '{}', start, end, reads: [`endpointslices\u0001${endpoints}`] });
const declared = (key: string, value: string): DeclaredObject => ({ set: 'ingresses', key, maps: { 'host.map': [[`${key}.example`, value]] }, mapsOnly: true });

function rendered(sets: readonly ServerSet[], objects: readonly DeclaredObject[], statuses: readonly ObjectStatus[]): Extract<RenderResult, { ok: true }> {
  return {
    ok: true,
    config: { main: 'global\n', maps: {}, files: {}, certs: {}, hash: 'h', serverSets: { sets, reads: ['ingresses\u0001'] }, mapEntries: { sets: { ingresses: { snippet: 'routes', args: '{}' } }, objects } },
    warnings: [],
    statuses,
  };
}

describe('a render sent between the render thread and the main thread', () => {
  it('arrives whole, its unchanged records the objects received before, a moved server set at its new place', () => {
    const sender = new RenderDeltaSender();
    const receiver = new RenderDeltaReceiver();
    const send = (result: Extract<RenderResult, { ok: true }>) => {
      const shipped = structuredClone(sender.ship(result));
      assert.equal(shipped.result.config.serverSets, undefined, 'no server set goes as an object');
      assert.equal(shipped.result.config.mapEntries, undefined, 'no map entry goes as an object');
      assert.deepEqual(shipped.result.statuses, []);
      return { delta: shipped.delta, result: receiver.take(shipped.result, shipped.delta) };
    };
    const first = rendered([serverSet('be_a', 10, 20), serverSet('be_b', 30, 40)], [declared('a', 'be_a'), declared('b', 'be_b')], [status('a')]);
    const one = send(first);
    assert.deepEqual(one.result, first);

    // be_a writes one more server line: be_b moves by its length, with the same call.
    const second = rendered([serverSet('be_a', 10, 25), serverSet('be_b', 35, 45)], [declared('a', 'be_a'), declared('b', 'be_c')], [status('a')]);
    const two = send(second);
    assert.deepEqual(two.result, second);
    assert.deepEqual(two.delta.serverSets!.calls.changed, [], 'the calls are the same');
    assert.deepEqual([...two.delta.serverSets!.places], [10, 25, 35, 45]);
    assert.deepEqual(two.delta.mapEntries!.objects.keys, ['ingresses\u0001b']);
    assert.equal(two.result.config.mapEntries!.objects[0], one.result.config.mapEntries!.objects[0], 'an unchanged declaration is the object received before');
    assert.equal(two.result.statuses[0], one.result.statuses[0]);

    // A set that reads something else is a new call.
    const third = rendered([serverSet('be_a', 10, 25), serverSet('be_b', 35, 45, 'ns/other')], [declared('a', 'be_a'), declared('b', 'be_c')], []);
    const three = send(third);
    assert.deepEqual(three.result, third);
    assert.equal(three.delta.serverSets!.calls.changed.length, 1);
  });

  it('puts the lists of a render whose keys moved together on turns of their own once they take their budget', async () => {
    const sender = new RenderDeltaSender();
    const receiver = new RenderDeltaReceiver({ budgetMs: 0 });
    const names = Array.from({ length: 500 }, (_, i) => `web-${i}`);
    const make = (list: string[]) => rendered(list.map((name, i) => serverSet(`be_${name}`, i * 10, i * 10 + 5, `ns/${name}`)), list.map((name) => declared(name, `be_${name}`)), list.map((name) => status(name)));
    const first = make(names);
    const sent = structuredClone(sender.ship(first));
    assert.deepEqual(await receiver.receive(sent.result, sent.delta), first);
    // One object more, in the middle: every list sends its keys in their new order.
    const second = make([...names.slice(0, 250), 'web-new', ...names.slice(250)]);
    const shipped = structuredClone(sender.ship(second));
    assert.ok(shipped.delta.statuses.order && shipped.delta.serverSets!.calls.order && shipped.delta.mapEntries!.objects.order);
    const counter = turnCounter();
    const taken = await receiver.receive(shipped.result, shipped.delta);
    const turns = counter.stop();
    assert.deepEqual(taken, second);
    assert.ok(turns >= 2, `the event loop turned between the lists (${turns} turns)`);
  });

  it('packs the records of a large delta, reads them a part per turn, and puts the same render together', async () => {
    const sender = new RenderDeltaSender();
    const receiver = new RenderDeltaReceiver();
    const n = 2_500;
    const names = Array.from({ length: n }, (_, i) => `web-${i}`);
    const result = rendered(
      names.map((name, i) => serverSet(`be_${name}`, i * 10, i * 10 + 5, `ns/${name}`)),
      names.map((name) => declared(name, `be_${name}`)),
      names.map((name) => status(name)),
    );
    const shipped = structuredClone(sender.ship(result));
    assert.equal(shipped.delta.packed?.length, 9, '2,500 records in each of three lists, a thousand a part');
    assert.deepEqual([shipped.delta.statuses.changed, shipped.delta.serverSets!.calls.changed, shipped.delta.mapEntries!.objects.changed], [[], [], []]);
    assert.throws(() => receiver.take(shipped.result, shipped.delta), /receive\(\)/);
    const counter = turnCounter();
    const taken = await receiver.receive(shipped.result, shipped.delta);
    const turns = counter.stop();
    assert.deepEqual(taken, result);
    assert.ok(turns >= 8, `the event loop turned between the parts (${turns} turns)`);
    // The next, small delta builds on it.
    const next = rendered(result.config.serverSets!.sets, result.config.mapEntries!.objects, [...result.statuses.slice(1), status('web-0', 'changed')]);
    const small = structuredClone(sender.ship(next));
    assert.equal(small.delta.packed, undefined);
    assert.deepEqual(receiver.take(small.result, small.delta), next);
  });
});
