import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { interval, map, of, take, timer } from 'rxjs';
import { latestWins } from '../streams/operators/latest-wins.ts';
import { marbles } from './helpers.ts';

/** Each value takes 300 ms to project, then gives its letter in upper case. */
const slow = (value: string) => timer(300).pipe(map(() => value.toUpperCase()));

describe('latestWins', () => {
  it('lets a newer value cancel the running projection while values have waited less than maxWait', () => {
    marbles().run(({ cold, expectObservable }) => {
      const source = cold('a 99ms b');
      expectObservable(source.pipe(latestWins(slow, { maxWaitMs: 1_000 }))).toBe('400ms B');
    });
  });

  it('starves no projection: once values have waited maxWait, the running one finishes and the newest waiting goes next', () => {
    marbles().run(({ cold, expectObservable }) => {
      // A value every 100 ms, each projection 300 ms: switchMap would cancel every one of them.
      // a@0 b@100 c@200 cancel their predecessors (waited 0-200 ms); d@300 and e@400 find a
      // wait of 300 ms or more, so c finishes at 500 and e (the newest) goes next, alone;
      // g@700 has waited too when it comes, so e finishes at 800, and g follows.
      const source = cold('a 99ms b 99ms c 99ms d 99ms e 299ms g');
      expectObservable(source.pipe(latestWins(slow, { maxWaitMs: 250 }))).toBe('500ms C 299ms E 299ms G');
    });
  });

  it('gives each value its own wait: the first value that has waited its own stops the cancelling', () => {
    marbles().run(({ cold, expectObservable }) => {
      // x may wait 250 ms, the others 1 s. Until x has waited its 250 ms (at 550 ms), newer
      // values cancel; f@600 and g@700 find it has, so e (started at 500) finishes and g follows.
      const source = cold('a 99ms b 99ms c 99ms x 99ms d 99ms e 99ms f 99ms g');
      expectObservable(source.pipe(latestWins(slow, { maxWaitMs: (v) => (v === 'x' ? 250 : 1_000) }))).toBe('800ms E 299ms G');
      // With 1 s for every value, all are cancelled but the last.
      expectObservable(source.pipe(latestWins(slow, { maxWaitMs: 1_000 }))).toBe('1000ms G');
    });
  });

  it('under sustained churn, completes a projection at least every maxWait plus two projections', () => {
    const completed: number[] = [];
    const scheduler = marbles();
    scheduler.run(({ flush }) => {
      interval(100)
        .pipe(
          take(100),
          latestWins((i) => timer(300).pipe(map(() => i)), { maxWaitMs: 2_000 }),
        )
        .subscribe(() => completed.push(scheduler.now()));
      flush();
    });
    const gaps = completed.slice(1).map((at, i) => at - completed[i]!);
    assert.ok(completed.length >= 4, `only ${completed.length} projections completed in 10 s`);
    assert.ok(completed[0]! <= 100 + 2_000 + 2 * 300, `the first completed at ${completed[0]} ms`);
    assert.ok(Math.max(...gaps) <= 2_000 + 2 * 300, `gaps ${gaps.join(', ')}`);
  });

  it('completes once the source has and the running projection is done; projections that end at once are fine', () => {
    marbles().run(({ cold, expectObservable }) => {
      expectObservable(cold('a 99ms b|').pipe(latestWins(slow, { maxWaitMs: 1_000 }))).toBe('400ms (B|)');
      expectObservable(cold('a-b-c|').pipe(latestWins((v) => of(v.toUpperCase()), { maxWaitMs: 0 }))).toBe('A-B-C|');
    });
  });

  it('lets a projection that says it only waits to try again give way to a newer value at once; any other result gives none', () => {
    marbles().run(({ cold, expectObservable }) => {
      const project = (value: string) => {
        // a says "retrying" every 100 ms and never ends; p gives a plain result, then ends.
        if (value === 'a') return cold('100ms r 99ms r 99ms r 99ms r 99ms r', { r: 'a?' });
        if (value === 'p') return cold('260ms x 39ms (y|)');
        // q works 300 ms, then only waits to try again.
        if (value === 'q') return cold('300ms r 99ms r', { r: 'q?' });
        return cold('50ms v|', { v: value.toUpperCase() });
      };
      const options = { maxWaitMs: 200, givesWay: (result: string) => result.endsWith('?') };
      // a has waited its 200 ms when b comes at 250, but it only waits to try again: b goes at once.
      expectObservable(cold('a 249ms b').pipe(latestWins(project, options))).toBe('100ms r 99ms r 99ms B', { r: 'a?', B: 'B' });
      // Without the option a keeps b waiting for ever.
      expectObservable(cold('a 249ms b').pipe(latestWins(project, { maxWaitMs: 200 })), '^ 1s !').toBe('100ms r 99ms r 99ms r 99ms r 99ms r', { r: 'a?' });
      // b, started so, is at work: c@260 waits for it (a waited its 200 ms long ago), and goes once b has ended (301).
      expectObservable(cold('a 249ms b 9ms c').pipe(latestWins(project, options))).toBe('100ms r 99ms r 99ms B 50ms C', { r: 'a?', B: 'B', C: 'C' });
      // b@250 has to wait for q, which is at work; when q says it waits to try again (300), b goes.
      expectObservable(cold('q 249ms b').pipe(latestWins(project, options))).toBe('300ms r 49ms B', { r: 'q?', B: 'B' });
      // p's plain result while b waits gives no way: p finishes, then b.
      expectObservable(cold('p 249ms b').pipe(latestWins(project, options))).toBe('260ms x 39ms y 49ms B');
    });
  });

  it('passes an error of a projection on', () => {
    marbles().run(({ cold, expectObservable }) => {
      expectObservable(cold('a').pipe(latestWins(() => cold('10ms #', {}, new Error('boom')), { maxWaitMs: 1_000 }))).toBe('10ms #', {}, new Error('boom'));
    });
  });
});
