import { type Observable, connect, filter, map, merge, startWith, switchMap } from 'rxjs';
import type { ControllerEvent } from '../src/events.ts';

export type Decoded<C> = { ok: true; config: C } | { ok: false; path: string; message: string };

export interface ControllerDeps<C> {
  /** Checks a raw controller configuration; an error names the offending field's path. */
  decode(raw: unknown): Decoded<C>;
  /** Builds the whole graph for one valid configuration. */
  graph(config: C, generation: number): Observable<ControllerEvent>;
}

/**
 * Runs the graph of the newest valid controller configuration. A valid change tears
 * the running graph down and builds a new one; an invalid one is reported as
 * ConfigRejected and the running graph goes on untouched.
 */
export function controller<C>(rawConfig$: Observable<unknown>, deps: ControllerDeps<C>): Observable<ControllerEvent> {
  return rawConfig$.pipe(
    map((raw) => deps.decode(raw)),
    connect((decoded$) =>
      merge(
        decoded$.pipe(
          filter((d) => !d.ok),
          map((d): ControllerEvent => ({ type: 'ConfigRejected', path: d.path, message: d.message })),
        ),
        decoded$.pipe(
          filter((d) => d.ok),
          switchMap((d, index) =>
            deps.graph(d.config, index + 1).pipe(startWith<ControllerEvent>({ type: 'ConfigAccepted', generation: index + 1 })),
          ),
        ),
      ),
    ),
  );
}
