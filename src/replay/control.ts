import { parse as parsePath, format as formatPath } from 'node:path';
import { BehaviorSubject, Observable, type Subscription, defer, finalize, switchMap, tap } from 'rxjs';
import type { ControllerEvent } from '../events.ts';
import type { GraphDeps, GraphSettings } from '../../streams/graph.ts';
import { type RecordingLog, RecordingSession, recordedDeps } from './recorder.ts';

export interface RecordingOptions {
  /** The first recording's file; later ones (started at runtime) are numbered: `incident-2.jsonl`. */
  file: string;
  maxBytes: number;
  scrub: (text: string) => string;
  log: RecordingLog;
  clock?: () => number;
}

/** The default cap of a recording file. */
export const DEFAULT_RECORD_MAX_BYTES = 64 * 1024 * 1024;

type GraphFn = (settings: GraphSettings, deps: GraphDeps) => Observable<ControllerEvent>;

/**
 * Turns recording on and off while haprx runs. A recording starts with a graph's first
 * subscription, so a replay starts where the graph did (empty stores, a sync): starting
 * one at runtime rebuilds the running graph, as a restart after a failure does (it syncs
 * again; the instances keep what they run). Stopping one only closes its file. A graph
 * that ends (a new controller configuration, or haprx stopping) ends its recording.
 */
export class RecordingControl {
  private session: RecordingSession | undefined;
  private started = 0;
  private readonly starts$ = new BehaviorSubject<void>(undefined);

  private readonly options: RecordingOptions;

  constructor(options: RecordingOptions) {
    this.options = options;
    this.session = this.newSession();
  }

  get recording(): boolean {
    return this.session?.active ?? false;
  }

  /** Stops the recording on, or starts a new one (SIGUSR2). */
  toggle(): void {
    const current = this.session;
    if (current?.active) {
      current.end('stopped at runtime');
      return;
    }
    if (current?.claim()) {
      // Armed, and no graph has begun it yet.
      current.end('stopped before a graph began');
      return;
    }
    this.session = this.newSession();
    this.starts$.next();
  }

  /** The graph, with its inputs recorded while the session it started under is on. */
  record(graph: GraphFn, settings: GraphSettings, deps: GraphDeps): Observable<ControllerEvent> {
    return this.starts$.pipe(
      switchMap(() =>
        defer(() => {
          const session = this.session;
          if (!session?.claim()) return graph(settings, deps);
          session.begin(settings, deps);
          const recorded$ = graph(settings, recordedDeps(deps, session)).pipe(
            tap((event) => session.event(event)),
            finalize(() => session.end('the graph stopped (a new controller configuration, or haprx stopping)')),
          );
          // The subscription is the recording's first happening: what it sets off is at 0, as in a replay.
          return new Observable<ControllerEvent>((subscriber) => {
            let subscription: Subscription | undefined;
            session.during(0, () => (subscription = recorded$.subscribe(subscriber)));
            return subscription;
          });
        }),
      ),
    );
  }

  /** Ends the recording on, and waits for its file to be closed. */
  async close(): Promise<void> {
    this.starts$.complete();
    const session = this.session;
    if (!session) return;
    session.end('haprx stopped');
    await session.closed;
  }

  private newSession(): RecordingSession {
    this.started++;
    const { file } = this.options;
    const parsed = parsePath(file);
    const numbered = this.started === 1 ? file : formatPath({ dir: parsed.dir, name: `${parsed.name}-${this.started}`, ext: parsed.ext });
    return new RecordingSession({ ...this.options, file: numbered });
  }
}
