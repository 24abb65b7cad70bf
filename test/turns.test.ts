/**
 * Work that goes on in turns of the event loop (src/turns.ts): several such pieces of
 * work at once (a first list per watched set, the fill of the render thread) take one
 * slice per turn between them, not one each, so what waits (a /healthz request) waits
 * for one slice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Steps } from '../src/steps.ts';
import { nextTurn, runInTurns } from '../src/turns.ts';

/** Steps that each keep the thread busy for `ms`. */
function* busy(steps: number, ms: number): Steps<number> {
  for (let i = 0; i < steps; i++) {
    const until = performance.now() + ms;
    while (performance.now() < until);
    yield;
  }
  return steps;
}

/** The longest time between two timers of a chain of zero-delay timers, until stopped. */
function timerGaps(): { stop(): number } {
  let last = performance.now();
  let longest = 0;
  let stopped = false;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (!stopped) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  return {
    stop: () => {
      stopped = true;
      return longest;
    },
  };
}

describe('turns', () => {
  it('runs one slice per turn of the event loop, however many pieces of work are in turns at once', async () => {
    const gaps = timerGaps();
    // Four pieces of work of 48 ms each, in slices of 10 ms (a slice ends after the step that
    // reaches it: 12 ms), each started in a turn of its own, as the lists of four watched sets arrive.
    const done = await Promise.all(
      Array.from({ length: 4 }, async () => {
        await nextTurn();
        return runInTurns(busy(16, 3), 10);
      }),
    );
    const longest = gaps.stop();
    assert.deepEqual(done, [16, 16, 16, 16]);
    // One slice per turn: about 12 ms between timers. Four slices a turn would be about 48.
    assert.ok(longest < 30, `timers waited up to ${longest.toFixed(1)} ms`);
  });

  it('lets each piece of work have its turns in order, and a lone wait still ends at the next turn', async () => {
    const order: string[] = [];
    const work = async (name: string) => {
      for (let i = 0; i < 3; i++) {
        order.push(`${name}${i}`);
        await nextTurn();
      }
    };
    await Promise.all([work('a'), work('b')]);
    assert.deepEqual(order, ['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
    let turned = false;
    setImmediate(() => (turned = true));
    await nextTurn();
    assert.ok(turned, 'what was queued before the wait ran first');
  });
});
