import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ObjectStatus } from '../../src/status/types.ts';
import { StatusDeltaReceiver, StatusDeltaSender } from '../../src/templating/status-delta.ts';

function status(name: string, message = 'ok'): ObjectStatus {
  return { ref: { kind: 'Ingress', namespace: 'shop', name }, conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message }], entries: [], fields: {} };
}

/** A sender and a receiver, with every statuses list passed through a structured clone as between threads. */
function pair() {
  const sender = new StatusDeltaSender();
  const receiver = new StatusDeltaReceiver();
  return (statuses: ObjectStatus[]) => {
    const delta = structuredClone(sender.delta(statuses));
    return { delta, statuses: receiver.take(delta) };
  };
}

describe('status delta between the render thread and the main thread', () => {
  it('sends everything the first time, then only what changed, and puts the same list together', () => {
    const send = pair();
    const first = send([status('a'), status('b'), status('c')]);
    assert.equal(first.delta.changed.length, 3);
    assert.deepEqual(first.statuses, [status('a'), status('b'), status('c')]);

    const second = send([status('a'), status('b', 'changed'), status('c')]);
    assert.deepEqual(second.delta.changed, [status('b', 'changed')]);
    assert.equal(second.delta.order, undefined, 'the same keys in the same order are not sent again');
    assert.deepEqual(second.statuses, [status('a'), status('b', 'changed'), status('c')]);
    // What did not change is the very object received before.
    assert.equal(second.statuses[0], first.statuses[0]);
    assert.equal(second.statuses[2], first.statuses[2]);
    assert.notEqual(second.statuses[1], first.statuses[1]);
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

  it('gives equal digests for equal statuses and different ones otherwise', () => {
    const send = pair();
    const one = send([status('a'), status('b')]).delta.digest;
    const same = send([status('a'), status('b')]).delta.digest;
    const other = send([status('a'), status('b', 'x')]).delta.digest;
    const fewer = send([status('a')]).delta.digest;
    assert.equal(one, same);
    assert.notEqual(one, other);
    assert.notEqual(one, fewer);
    assert.equal(new StatusDeltaSender().delta([status('a'), status('b')]).digest, one, 'a new sender (a new render thread) gives the same digest');
  });
});
