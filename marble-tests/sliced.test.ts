import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { merge, tap } from 'rxjs';
import type { Steps } from '../src/steps.ts';
import { sliced } from '../streams/operators/sliced.ts';
import { marbles } from './helpers.ts';

/** Work of `n` steps, each taking `stepMs` by a clock of its own; records which steps ran, and whether it was closed. */
function work(n: number, stepMs: number, failAt = 0) {
  let clock = 0;
  const ran: number[] = [];
  const state = { closed: false };
  function* steps(): Steps<string> {
    try {
      for (let i = 1; i <= n; i++) {
        if (i === failAt) throw new Error(`step ${i} failed`);
        clock += stepMs;
        ran.push(i);
        yield;
      }
      return `done after ${n}`;
    } finally {
      state.closed = true;
    }
  }
  return { steps, ran, state, now: () => clock };
}

describe('sliced', () => {
  it('finishes at once what fits the budget', () => {
    const w = work(3, 2);
    const scheduler = marbles();
    scheduler.run(({ expectObservable }) => {
      expectObservable(sliced(w.steps, { scheduler, budgetMs: 10, now: w.now })).toBe('(a|)', { a: 'done after 3' });
    });
    assert.deepEqual(w.ran, [1, 2, 3]);
  });

  it('runs longer work in slices of the budget, each a task of its own, and what waits runs in between', () => {
    const w = work(10, 4);
    const seen: string[] = [];
    const scheduler = marbles();
    scheduler.run(({ cold, expectObservable }) => {
      // Three steps (12 ms by the work's clock) reach the 10 ms budget: slices of 1-3, 4-6, 7-9 and 10, a frame apart.
      const other$ = cold('-x-y').pipe(tap((v) => seen.push(`${v} after step ${w.ran.length}`)));
      const work$ = sliced(w.steps, { scheduler, budgetMs: 10, now: w.now, gapMs: 1 });
      expectObservable(merge(other$, work$)).toBe('-x-(ya)', { x: 'x', y: 'y', a: 'done after 10' });
    });
    assert.deepEqual(seen, ['x after step 3', 'y after step 9']);
    assert.ok(w.state.closed);
  });

  it('abandons the work between two steps when unsubscribed', () => {
    const w = work(10, 4);
    const scheduler = marbles();
    scheduler.run(({ expectObservable }) => {
      expectObservable(sliced(w.steps, { scheduler, budgetMs: 10, now: w.now, gapMs: 1 }), '^-!').toBe('--');
    });
    assert.deepEqual(w.ran, [1, 2, 3, 4, 5, 6]);
    assert.ok(w.state.closed, 'the generator was closed');
  });

  it('errors with what a step threw', () => {
    const w = work(10, 4, 5);
    const scheduler = marbles();
    scheduler.run(({ expectObservable }) => {
      expectObservable(sliced(w.steps, { scheduler, budgetMs: 10, now: w.now, gapMs: 1 })).toBe('-#', undefined, new Error('step 5 failed'));
    });
    assert.deepEqual(w.ran, [1, 2, 3, 4]);
  });
});
