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

  it('under churn, lets one confirmation go per interval, with a change: the first to come once the interval has passed', () => {
    marbles().run(({ hot, expectObservable }) => {
      // A confirmation every 300 ms; an interval of 1 s. 2 to 4 are held and 5 goes at 1200 in their
      // place; 6 and 7 are held, and 7 goes after 1 s without another.
      const reconciles$ = hot<Reconcile>('a 299ms b 299ms c 299ms d 299ms e 299ms f 299ms g', values);
      expectObservable(paceConfirmations(reconciles$, () => true, { intervalMs: 1_000 }).pipe(seqs)).toBe('1 1199ms 5 1599ms 7');
    });
  });

  it('passes every other reconciliation on at once, whatever confirmations are held', () => {
    marbles().run(({ hot, expectObservable }) => {
      // 1, 2 and 4 only confirm; 3 needs the full path.
      const reconciles$ = hot<Reconcile>('a 99ms b 99ms c 99ms d', values);
      const confirming = new Set([1, 2, 4]);
      // 3 goes at once; of 2 and 4, held, the newest goes after 1 s without another.
      expectObservable(paceConfirmations(reconciles$, (r) => confirming.has(r.seq), { intervalMs: 1_000 }).pipe(seqs)).toBe('1 199ms 3 1099ms 4');
    });
  });

  it('ends when its input ends, sending the confirmation it held first', () => {
    marbles().run(({ hot, expectObservable }) => {
      const reconciles$ = hot<Reconcile>('a 99ms b 99ms |', values);
      expectObservable(paceConfirmations(reconciles$, () => true, { intervalMs: 1_000 }).pipe(seqs)).toBe('1 199ms (2|)');
    });
  });
});
