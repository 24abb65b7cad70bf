import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { Reconcile } from '../src/events.ts';
import { paceConfirmations } from '../streams/confirm-pace.ts';
import { marbles, reconcileNo } from './helpers.ts';

const seqs = map((r: Reconcile) => `${r.seq}`);
/** Reconciliations 1 to 8 as a marble's values: a → 1, b → 2, … */
const values = Object.fromEntries([...'abcdefgh'].map((c, i) => [c, reconcileNo(i + 1)]));

describe('paceConfirmations', () => {
  it('passes a confirmation on at once when none went for the interval', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 1999ms b', values);
      expectObservable(paceConfirmations(reconciles$, () => true, { intervalMs: 1_000 }).pipe(seqs)).toBe('1 1999ms 2');
    });
  });

  it('under churn, lets one confirmation go per interval: the newest of those that came meanwhile', () => {
    marbles().run(({ hot, expectObservable }) => {
      // A confirmation every 300 ms; an interval of 1 s.
      const reconciles$ = hot<Reconcile>('a 299ms b 299ms c 299ms d 299ms e 299ms f 299ms g', values);
      expectObservable(paceConfirmations(reconciles$, () => true, { intervalMs: 1_000 }).pipe(seqs)).toBe('1 999ms 4 999ms 7');
    });
  });

  it('passes every other reconciliation on at once, whatever confirmations are held', () => {
    marbles().run(({ hot, expectObservable }) => {
      // 1, 2 and 4 only confirm; 3 needs the full path.
      const reconciles$ = hot<Reconcile>('a 99ms b 99ms c 99ms d', values);
      const confirming = new Set([1, 2, 4]);
      // 3 goes at once; of 2 and 4, held, the newest goes when the interval ends.
      expectObservable(paceConfirmations(reconciles$, (r) => confirming.has(r.seq), { intervalMs: 1_000 }).pipe(seqs)).toBe('1 199ms 3 799ms 4');
    });
  });

  it('ends when its input ends, once the confirmation it held has gone at the end of its interval', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 99ms b 99ms |', values);
      expectObservable(paceConfirmations(reconciles$, () => true, { intervalMs: 1_000 }).pipe(seqs)).toBe('1 999ms (2|)');
    });
  });
});
