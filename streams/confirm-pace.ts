import { Observable, type SchedulerLike, type Subscription, asyncScheduler } from 'rxjs';
import type { Reconcile } from '../src/events.ts';

export interface ConfirmPaceOptions {
  /** A confirmation starts a render at most once per this interval; a held one waits for this much quiet. */
  intervalMs: number;
  scheduler?: SchedulerLike;
}

/**
 * The reconciliations as the full render takes them, with confirmations paced. A
 * confirmation is a reconciliation whose changes the fast path already applied at
 * runtime: its render only confirms what runs. One goes at once when the last that went
 * is at least the interval old; otherwise it is held, the newest replacing the one
 * before (a render reads the stores as they are then, so it covers the ones before).
 * The held one goes when the interval has passed and the next confirmation comes, or
 * after an interval with none. Other reconciliations go at once.
 *
 * Without the pace, each confirmation started a render that the next one cancelled
 * (latest wins): under endpoint churn at 10k objects the render thread rendered all
 * the time, on one of the two cores the controller and haproxy share, and its garbage
 * filled its heap to the cap (a full collection every few hundred milliseconds). A
 * confirmation goes with a change rather than at a time of its own, so its render runs
 * right after that change's runtime operations, when the next change is furthest away.
 */
export function paceConfirmations(reconciles$: Observable<Reconcile>, isConfirmation: (reconcile: Reconcile) => boolean, options: ConfirmPaceOptions): Observable<Reconcile> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const { intervalMs } = options;
  return new Observable<Reconcile>((subscriber) => {
    let lastSent = -Infinity;
    let held: Reconcile | undefined;
    let quiet: Subscription | undefined;
    const send = (reconcile: Reconcile) => {
      quiet?.unsubscribe();
      held = undefined;
      lastSent = scheduler.now();
      subscriber.next(reconcile);
    };
    const subscription = reconciles$.subscribe({
      next: (reconcile) => {
        if (!isConfirmation(reconcile)) return subscriber.next(reconcile);
        if (scheduler.now() - lastSent >= intervalMs) return send(reconcile);
        held = reconcile;
        quiet?.unsubscribe();
        quiet = scheduler.schedule(() => held && send(held), intervalMs);
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => {
        // Nothing newer will come: what is held goes now.
        if (held) send(held);
        subscriber.complete();
      },
    });
    return () => {
      subscription.unsubscribe();
      quiet?.unsubscribe();
    };
  });
}
