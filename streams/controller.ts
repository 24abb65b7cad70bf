import { type Observable, type SchedulerLike, connect, defer, filter, map, merge, startWith, switchMap } from 'rxjs';
import type { BackoffOptions } from '../src/backoff.ts';
import { errorMessage } from '../src/errors.ts';
import type { ControllerEvent } from '../src/events.ts';
import { type StageFailedEvent, supervise } from './operators/supervise.ts';

export type Decoded<C> = { ok: true; config: C } | { ok: false; path: string; message: string };

export interface ControllerDeps<C> {
  /** Checks a raw controller configuration; an error names the offending field's path. */
  decode(raw: unknown): Decoded<C>;
  /** Builds the whole graph for one valid configuration. */
  graph(config: C, generation: number): Observable<ControllerEvent>;
  /** Delays before a failed configuration source or graph is started again; default 1 s doubling to 60 s. */
  backoff?: BackoffOptions;
  random?: () => number;
  scheduler?: SchedulerLike;
}

/**
 * Runs the graph of the newest valid controller configuration. A valid change tears
 * the running graph down and builds a new one; an invalid one is reported as
 * ConfigRejected and the running graph goes on untouched.
 *
 * Nothing here ends the stream: a decoder that throws rejects the configuration, and
 * a configuration source or a graph that fails is reported (StageFailed) and started
 * again after a backoff delay.
 */
export function controller<C>(rawConfig$: Observable<unknown>, deps: ControllerDeps<C>): Observable<ControllerEvent> {
  const restart = { ...(deps.backoff && { backoff: deps.backoff }), ...(deps.random && { random: deps.random }), ...(deps.scheduler && { scheduler: deps.scheduler }) };
  const decode = (raw: unknown): Decoded<C> => {
    try {
      return deps.decode(raw);
    } catch (err) {
      return { ok: false, path: '(configuration)', message: `could not be read: ${errorMessage(err)}` };
    }
  };
  const isFailure = (input: { raw: unknown } | StageFailedEvent): input is StageFailedEvent => 'type' in input;
  return supervise(
    rawConfig$.pipe(map((raw) => ({ raw }))),
    { stage: 'controller configuration', ...restart },
  ).pipe(
    connect((input$) =>
      merge(
        input$.pipe(filter(isFailure)),
        input$.pipe(
          filter((input): input is { raw: unknown } => !isFailure(input)),
          map(({ raw }) => decode(raw)),
          connect((decoded$) =>
            merge(
              decoded$.pipe(
                filter((d) => !d.ok),
                map((d): ControllerEvent => ({ type: 'ConfigRejected', path: d.path, message: d.message })),
              ),
              decoded$.pipe(
                filter((d) => d.ok),
                switchMap((d, index) =>
                  supervise(
                    defer(() => deps.graph(d.config, index + 1)),
                    { stage: 'graph', ...restart },
                  ).pipe(startWith<ControllerEvent>({ type: 'ConfigAccepted', generation: index + 1 })),
                ),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}
