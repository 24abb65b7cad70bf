import { type Observable, type SchedulerLike, asyncScheduler, connect, filter, merge, throttleTime } from 'rxjs';
import type { Reconcile } from '../src/events.ts';

export interface ConfirmPaceOptions {
  /** At most one confirmation starts a render per this interval. */
  intervalMs: number;
  scheduler?: SchedulerLike;
}

/**
 * The reconciliations as the full render takes them, with confirmations paced. A
 * confirmation is a reconciliation whose changes the fast path already applied at
 * runtime: its render only confirms what runs. The first after a quiet interval goes
 * at once; those that follow within the interval are held, and the newest goes when it
 * ends (a render reads the stores as they are then, so it covers the ones before).
 * Other reconciliations go at once.
 *
 * Without the pace, each confirmation started a render that the next one cancelled
 * (latest wins): under endpoint churn at 10k objects the render thread rendered all
 * the time, on one of the two cores the controller and haproxy share, and its garbage
 * filled its heap to the cap (a full collection every few hundred milliseconds).
 */
export function paceConfirmations(reconciles$: Observable<Reconcile>, isConfirmation: (reconcile: Reconcile) => boolean, options: ConfirmPaceOptions): Observable<Reconcile> {
  const scheduler = options.scheduler ?? asyncScheduler;
  return reconciles$.pipe(
    connect((shared$) =>
      merge(
        shared$.pipe(filter((reconcile) => !isConfirmation(reconcile))),
        shared$.pipe(
          filter(isConfirmation),
          throttleTime(options.intervalMs, scheduler, { leading: true, trailing: true }),
        ),
      ),
    ),
  );
}
