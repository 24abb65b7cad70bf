import { Observable } from 'rxjs';

/**
 * A promise-returning operation as an Observable that aborts it on unsubscribe, so
 * that switchMap and timeout in the graph really stop the work they abandon.
 */
export function fromAbortable<T>(run: (signal: AbortSignal) => Promise<T>): Observable<T> {
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    run(controller.signal).then(
      (value) => {
        subscriber.next(value);
        subscriber.complete();
      },
      (err: unknown) => subscriber.error(err),
    );
    return () => controller.abort();
  });
}
