import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { interval, map, take } from 'rxjs';
import { debounceBatch } from '../streams/operators/debounce-batch.ts';
import { marbles } from './helpers.ts';

describe('debounceBatch', () => {
  it('emits one batch for a burst, once the source has been quiet for the debounce', () => {
    marbles().run(({ cold, expectObservable }) => {
      const source = cold('a 99ms b 99ms c 999ms d');
      //                   a@0, b@100, c@200, d@1200 → [a,b,c] at 200+500, [d] at 1700
      expectObservable(source.pipe(debounceBatch({ dueTime: 500, maxWait: 2000 }), map((batch) => batch.join('')))).toBe('700ms x 999ms y', {
        x: 'abc',
        y: 'd',
      });
    });
  });

  it('emits at least every maxWait under continuous churn, losing nothing', () => {
    const emitted: { at: number; values: number[] }[] = [];
    const scheduler = marbles();
    scheduler.run(({ flush }) => {
      // A change every 100 ms for 10 s: a plain trailing debounce would emit once, at the end.
      interval(100)
        .pipe(take(100), debounceBatch({ dueTime: 500, maxWait: 2000 }))
        .subscribe((values) => emitted.push({ at: scheduler.now(), values }));
      flush();
    });
    const gaps = emitted.slice(1).map((e, i) => e.at - emitted[i]!.at);
    assert.ok(emitted.length >= 5, `only ${emitted.length} batches in 10 s`);
    assert.ok(emitted[0]!.at <= 2100, `first batch only at ${emitted[0]!.at} ms`);
    assert.ok(gaps.every((gap) => gap <= 2000), `gaps between batches: ${gaps.join(', ')} ms`);
    assert.deepEqual(emitted.flatMap((e) => e.values), [...Array(100).keys()], 'every value, once, in order');
  });

  it('never lets a value wait longer than maxWait after a quiet period', () => {
    marbles().run(({ cold, expectObservable }) => {
      // Values every 300 ms, each within the 500 ms debounce of the last: only the
      // deadline, 2000 ms after the first, ends the batch.
      const source = cold('a 299ms b 299ms c 299ms d 299ms e 299ms f 299ms g 299ms h 299ms i|');
      expectObservable(source.pipe(debounceBatch({ dueTime: 500, maxWait: 2000 }), map((batch) => batch.join('')))).toBe('2000ms x 400ms (y|)', {
        x: 'abcdefg',
        y: 'hi',
      });
    });
  });

  it('with dueTime 0 passes every value at once as its own batch', () => {
    marbles().run(({ cold, expectObservable }) => {
      const source = cold('ab-c|');
      expectObservable(source.pipe(debounceBatch({ dueTime: 0, maxWait: 2000 }), map((batch) => batch.join('')))).toBe('ab-c|');
    });
  });

  it('closes a batch at once on an immediate value, and counts the deadline from there', () => {
    marbles().run(({ cold, expectObservable }) => {
      // b is immediate: [a,b] goes at 100 without waiting for quiet; c starts a batch whose
      // deadline is 2000 ms after that emission (at 2100), though c came at 300.
      const source = cold('a 99ms b 199ms c 349ms d 349ms e 349ms f 349ms g 349ms h 349ms i 349ms j');
      const batches = source.pipe(debounceBatch({ dueTime: 500, maxWait: 2000, immediate: (v) => v === 'b' }), map((b) => b.join('')));
      expectObservable(batches).toBe('100ms x 1999ms y 1149ms z', { x: 'ab', y: 'cdefgh', z: 'ij' });
    });
  });

  it('flushes the pending batch when the source completes', () => {
    const batches: string[][] = [];
    marbles().run(({ cold, flush }) => {
      cold('ab|').pipe(debounceBatch({ dueTime: 500, maxWait: 2000 })).subscribe((b) => batches.push(b));
      flush();
    });
    assert.deepEqual(batches, [['a', 'b']]);
  });

  describe('leading (adaptive)', () => {
    const leading = { dueTime: 500, maxWait: 2000, leading: true };

    it('lets the first value after a quiet period go at once, alone, and batches those that follow it', () => {
      marbles().run(({ cold, expectObservable }) => {
        // a after quiet: at once; b and c follow within 500 ms: one batch 500 ms after c;
        // d comes 1000 ms after c, after quiet again: at once.
        const source = cold('a 99ms b 99ms c 999ms d');
        expectObservable(source.pipe(debounceBatch(leading), map((batch) => batch.join('')))).toBe('a 699ms x 499ms y', { a: 'a', x: 'bc', y: 'd' });
      });
    });

    it('puts the values that arrive in the same turn as the first into its batch, still at once', () => {
      marbles().run(({ cold, expectObservable }) => {
        // a, b and c come together (one file's objects): one batch at once, not a then bc 500 ms later.
        const source = cold('(abc) 999ms d');
        expectObservable(source.pipe(debounceBatch(leading), map((batch) => batch.join('')))).toBe('x 1003ms d', { x: 'abc', d: 'd' });
      });
    });

    it('debounces a value one frame after the first, as before', () => {
      marbles().run(({ cold, expectObservable }) => {
        const source = cold('ab 999ms c');
        expectObservable(source.pipe(debounceBatch(leading), map((batch) => batch.join('')))).toBe('a 500ms b 499ms c');
      });
    });

    it('closes the leading batch at an immediate value, and when the source ends in the same turn', () => {
      marbles().run(({ cold, expectObservable }) => {
        const closing = { ...leading, immediate: (v: string) => v === 'z' };
        expectObservable(cold('(azb) 999ms c').pipe(debounceBatch(closing), map((batch) => batch.join('')))).toBe('x 499ms y 503ms c', { x: 'az', y: 'b', c: 'c' });
        expectObservable(cold('(ab|)').pipe(debounceBatch(leading), map((batch) => batch.join('')))).toBe('(x|)', { x: 'ab' });
      });
    });

    it('takes a lone change at once each time it comes alone', () => {
      marbles().run(({ cold, expectObservable }) => {
        const source = cold('a 599ms b 599ms c');
        expectObservable(source.pipe(debounceBatch(leading), map((batch) => batch.join('')))).toBe('a 599ms b 599ms c');
      });
    });

    it('keeps the maximum wait for what follows the first value under churn', () => {
      const emitted: { at: number; values: number[] }[] = [];
      const scheduler = marbles();
      scheduler.run(({ flush }) => {
        interval(100)
          .pipe(take(60), debounceBatch(leading))
          .subscribe((values) => emitted.push({ at: scheduler.now(), values }));
        flush();
      });
      // The first value (at 100) goes at once; the others come every 100 ms, never quiet,
      // so batches close at the deadlines 2000 ms apart, and the rest when the source ends.
      assert.deepEqual(emitted.map((e) => e.at), [100, 2100, 4100, 6000]);
      assert.deepEqual(emitted[0]!.values, [0]);
      assert.deepEqual(emitted.flatMap((e) => e.values), [...Array(60).keys()], 'every value, once, in order');
    });
  });
});
