import { describe, it } from 'node:test';
import { defer, map } from 'rxjs';
import { stageName, supervise } from '../streams/operators/supervise.ts';
import { marbles } from './helpers.ts';

/** No jitter: delays are exactly 1 s, 2 s, 4 s ... up to 8 s. */
const exact = { backoff: { initialMs: 1000, maxMs: 8000, jitter: 0.2 }, random: () => 0 };
const label = map((e: string | { type: 'StageFailed'; stage: string; message: string; failures: number; restartInMs: number }) =>
  typeof e === 'string' ? e : `${e.stage}:${e.message}:#${e.failures}:${e.restartInMs}`,
);

describe('supervise', () => {
  it('reports an error as StageFailed naming the stage it left and its cause, and runs the source again after 1 s, then 2 s', () => {
    marbles().run(({ cold, expectObservable, expectSubscriptions }) => {
      const run = cold<string>('a 9ms #', { a: 'started' }, new TypeError("Cannot read properties of undefined (reading 'name')"));
      const events = supervise(run.pipe(stageName('stores'), stageName('trigger')), { stage: 'graph', ...exact });
      expectObservable(events.pipe(label), '^ 3100ms !').toBe('a 9ms f 999ms a 9ms g 1999ms a 9ms h', {
        a: 'started',
        f: "stores:Cannot read properties of undefined (reading 'name'):#1:1000",
        g: "stores:Cannot read properties of undefined (reading 'name'):#2:2000",
        h: "stores:Cannot read properties of undefined (reading 'name'):#3:4000",
      });
      expectSubscriptions(run.subscriptions).toBe(['^ 9ms !', '1010ms ^ 9ms !', '3020ms ^ 9ms !']);
    });
  });

  it('names an error that left no named stage after the boundary', () => {
    marbles().run(({ cold, expectObservable }) => {
      expectObservable(supervise(cold<string>('#', {}, new Error('boom')), { stage: 'graph', ...exact }).pipe(label), '^ 500ms !').toBe('f', { f: 'graph:boom:#1:1000' });
    });
  });

  it('starts the backoff afresh after a run that outlasted the longest delay', () => {
    marbles().run(({ cold, expectObservable }) => {
      let runs = 0;
      const source = cold<string>('9ms #', {}, new Error('early'));
      const long = cold<string>('9s #', {}, new Error('late'));
      // Fails at 9 and 1018; the run from 3018 lasts 9 s, longer than the 8 s cap, and fails at 12018.
      const events = supervise(
        defer(() => (++runs <= 2 ? source : long)),
        { stage: 'graph', ...exact },
      );
      expectObservable(events.pipe(label), '^ 13s !').toBe('9ms f 1008ms g 10999ms h', { f: 'graph:early:#1:1000', g: 'graph:early:#2:2000', h: 'graph:late:#1:1000' });
    });
  });

  it('completes when its source completes', () => {
    marbles().run(({ cold, expectObservable }) => {
      expectObservable(supervise(cold('a|', { a: 'x' }), { stage: 'graph', ...exact })).toBe('a|', { a: 'x' });
    });
  });
});
