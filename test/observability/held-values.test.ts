import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeldValues } from '../../src/observability/held-values.ts';

/** Base64 of a PEM block: every one starts (and ends) with the same characters. */
const pemBase64 = (seed: number) => Buffer.from(`-----BEGIN PRIVATE KEY-----\n${`body-${seed}-`.padEnd(96, 'q')}\n-----END PRIVATE KEY-----\n`).toString('base64');

describe('held values', () => {
  it('finds each of many values that share their first characters and their length, and no value that differs in one character', () => {
    const held = new HeldValues();
    const values = Array.from({ length: 2_000 }, (_, i) => pemBase64(i));
    assert.equal(new Set(values.map((v) => v.length)).size, 1, 'all of one length');
    for (const v of values) held.add(v);
    assert.equal(held.size, 2_000);
    for (const i of [0, 1, 777, 1_999]) assert.deepEqual(held.find(`key=${values[i]}.`), [[4, 4 + values[i]!.length]], `value ${i}`);
    // One character changed at the end (outside the middle the table keys on), or at the start.
    const last = values[5]!;
    assert.deepEqual(held.find(`${last.slice(0, -2)}x${last.slice(-1)}`), []);
    assert.deepEqual(held.find(`x${last.slice(1)}`), []);
    assert.deepEqual(held.find(last.slice(0, -1)), [], 'a value cut short');
  });

  it('gives each stretch once: the longest value at a position, overlapping values merged, every occurrence', () => {
    const held = new HeldValues();
    for (const v of ['abcdefghij', 'abcdefgh', 'ghijklmnop', 'zzzzzzzz', 'short']) held.add(v);
    assert.deepEqual(held.find('abcdefghij'), [[0, 10]]);
    assert.deepEqual(held.find('abcdefghijklmnop!'), [[0, 16]], 'two overlapping values are one stretch');
    assert.deepEqual(held.find('zzzzzzzzzz'), [[0, 10]], 'a value overlapping itself');
    assert.deepEqual(held.find('1 zzzzzzzz 2 zzzzzzzz'), [[2, 10], [13, 21]]);
    assert.deepEqual(held.find('short and abcdefg'), [], 'too short to hold, and a near miss');
    assert.equal(held.size, 4);
    // Whichever was learned first, the longest value at a position is its stretch.
    for (const v of ['longer-value', 'longer-value-123', 'value-12345', 'value-1']) held.add(v);
    assert.deepEqual(held.find('longer-value-1234'), [[0, 16]]);
    assert.deepEqual(held.find('value-123456'), [[0, 11]]);
  });

  it('holds a value while anyone holds it, reuses the places of values gone, and keeps the chains whole', () => {
    const held = new HeldValues();
    const a = held.add('shared-password');
    assert.equal(held.add('shared-password'), a, 'the same value is one entry');
    held.release(a);
    assert.deepEqual(held.find('shared-password'), [[0, 15]], 'still held once');
    held.release(a);
    assert.deepEqual(held.find('shared-password'), []);
    assert.equal(held.size, 0);
    // Values of one start, released from the middle, the head and the tail of their chain.
    const ids = Array.from({ length: 5 }, (_, i) => held.add(`same-start-${i}`));
    for (const i of [2, 4, 0]) held.release(ids[i]!);
    assert.deepEqual(held.find('same-start-1 same-start-3'), [[0, 12], [13, 25]]);
    assert.deepEqual(held.find('same-start-0 same-start-2 same-start-4'), []);
    // Churn: places are reused, nothing is left behind.
    for (let i = 0; i < 10_000; i++) held.release(held.add(`churning-value-${i}`));
    assert.equal(held.size, 2);
    assert.deepEqual(held.find('churning-value-9999'), []);
    const many = Array.from({ length: 3_000 }, (_, i) => held.add(`many-values-${i}`));
    const places = held.places;
    for (const id of many) held.release(id);
    for (let i = 0; i < 3_000; i++) held.add(`other-values-${i}`);
    assert.equal(held.places, places, 'the second 3,000 took the places the first left');
    assert.equal(held.size, 3_002);
  });
});
