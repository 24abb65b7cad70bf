import type { Tracer } from '@opentelemetry/api';
import type { MonoTypeOperatorFunction } from 'rxjs';
import type { ControllerConfig } from '../config/controller-config.ts';
import type { ControllerEvent, Endpoint } from '../events.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import { DebugState } from './debug-state.ts';
import { diffLogLine, logLine } from './event-log.ts';
import { type Handler, json } from './http.ts';
import { ReconcileLifecycle } from './lifecycle.ts';
import type { Logger } from './logger.ts';
import { ControllerMetrics } from './metrics.ts';
import { NewWarnings } from './new-warnings.ts';
import { SecretScrubber } from './redact.ts';
import { ResourceCounter } from './resources.ts';
import { EventTracer } from './tracing.ts';

export interface ObserverOptions {
  log: Logger;
  /** The graph scheduler's clock (event times are in it); default Date.now. */
  now?: () => number;
  /** Spans go here; without one, no traces. */
  tracer?: Tracer;
  /** A stage (render, validate, deploy) open longer than this fails /healthz; default 120 s. */
  stallAfterMs?: number;
  /** Events kept for /debug/vars; default 100. */
  recentEvents?: number;
  /** Process metrics (CPU, memory, event loop, GC); default true. */
  defaultMetrics?: boolean;
}

export interface Observer {
  /** Feeds one controller event to the logs, metrics, traces and debug state. Never throws. */
  record(event: ControllerEvent): void;
  /** Wraps a graph's change source to count objects per watched set (and learn Secret values to scrub). */
  trackResources(): MonoTypeOperatorFunction<ResourceChange>;
  /** The controller configuration the running graph was built from (shown, redacted, in /debug/vars). */
  setControllerConfig(config: ControllerConfig): void;
  setLeader(leader: boolean): void;
  /** The HAProxy instances discovered now; metrics forget the series of those that left. */
  setEndpoints(endpoints: readonly Endpoint[]): void;
  /** Blanks the values of watched Secrets out of a text bound for a log (e.g. a target's own output). */
  scrub(text: string): string;
  readonly metrics: ControllerMetrics;
  readonly debug: DebugState;
  /** /healthz and /readyz: what probes need, nothing more. */
  readonly healthRoutes: Readonly<Record<string, Handler>>;
  /** /debug/vars: the rendered configuration and recent events, for whoever operates the controller. */
  readonly debugRoutes: Readonly<Record<string, Handler>>;
  /** /metrics. */
  readonly metricsRoutes: Readonly<Record<string, Handler>>;
  /** Ends the spans still open (the controller stops). */
  endTraces(): void;
}

/**
 * Everything observability makes of the event stream, without IO of its own: the
 * servers and the exporter are added by startObservability. Each event goes through
 * the lifecycle once, and what it made of the event feeds metrics, traces, the
 * debug state and one log line.
 */
export function createObserver(options: ObserverOptions): Observer {
  const { log } = options;
  const now = options.now ?? Date.now;
  const scrubber = new SecretScrubber({ onLimit: (message) => log.warn(message) });
  const scrub = (text: string) => scrubber.scrub(text);
  const resources = new ResourceCounter(scrubber);
  const lifecycle = new ReconcileLifecycle();
  const metrics = new ControllerMetrics({ lifecycle, resourceCounts: () => resources.counts(), now }, { defaultMetrics: options.defaultMetrics ?? true });
  const debug = new DebugState({
    lifecycle,
    resourceCounts: () => resources.counts(),
    now,
    stallAfterMs: options.stallAfterMs ?? 120_000,
    recentEvents: options.recentEvents ?? 100,
    scrub,
  });
  const tracer = options.tracer && new EventTracer(options.tracer, scrub);
  const newWarnings = new NewWarnings();

  const healthRoutes: Record<string, Handler> = {
    '/healthz': () => {
      const health = debug.health();
      const status = health.ok ? 'ok' : health.down.length > 0 ? 'target down' : 'stalled';
      return json(health.ok ? 200 : 503, { status, stalled: health.stalled, ...(health.down.length > 0 && { down: health.down }) });
    },
    '/readyz': () => {
      const r = debug.readiness();
      const unavailable = r.validationUnavailable !== undefined ? ` (the last check could not run and is retried: ${r.validationUnavailable})` : '';
      const missing = [
        ...(r.synced ? [] : ['the initial sync of every watched set']),
        ...(r.validConfig ? [] : [`a configuration that haproxy accepted${unavailable}`]),
        ...(r.targetsUp ? [] : ['haproxy to run again']),
      ];
      return json(r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not ready', ...(missing.length > 0 && { waitingFor: missing }) });
    },
  };
  const debugRoutes: Record<string, Handler> = {
    '/debug/vars': (url: URL) => {
      const selected = debug.select(url.searchParams.get('field'));
      return selected.ok ? json(200, selected.value) : json(400, { error: selected.message });
    },
  };
  const metricsRoutes: Record<string, Handler> = {
    '/metrics': async () => ({ status: 200, type: metrics.registry.contentType, body: await metrics.registry.metrics() }),
  };

  return {
    record(event) {
      try {
        const at = now();
        const step = lifecycle.apply(event, at);
        metrics.record(event, step);
        tracer?.handle(event, step, at);
        const traceId = tracer?.traceId(step);
        const line = logLine(event);
        line.msg = scrub(line.msg);
        debug.record(event, line, at, traceId);
        metrics.setReady(debug.readiness().ready);
        log[line.level]({ event: event.type, ...line.fields, ...(traceId && { trace_id: traceId }) }, line.msg);
        const diff = diffLogLine(event);
        if (diff) log.debug({ event: 'DeploymentDiff', ...diff.fields, ...(typeof diff.fields.diff === 'string' && { diff: scrub(diff.fields.diff) }), ...(traceId && { trace_id: traceId }) }, scrub(diff.msg));
        // Each object that has just become skipped (or partly applied) gets a line of its own.
        for (const w of newWarnings.take(event)) {
          const where = w.template !== undefined ? `${w.template}${w.line !== undefined ? `:${w.line}` : ''}` : undefined;
          const fields = { event: 'RenderWarning', ...(w.object !== undefined && { object: w.object }), ...(w.field !== undefined && { field: w.field }), ...(w.reason !== undefined && { reason: w.reason }), ...(where && { template: where }) };
          log.warn(fields, scrub(w.object ? `${w.object}: ${w.message}` : w.message));
        }
      } catch (err) {
        // Observability must never take the controller down.
        log.error({ err: (err as Error).message }, `observability failed on ${event.type}`);
      }
    },
    trackResources: () => resources.track(),
    setControllerConfig: (config) => debug.setControllerConfig(config),
    setLeader(leader) {
      metrics.setLeader(leader);
      debug.setLeader(leader);
    },
    setEndpoints: (endpoints) => metrics.retainEndpoints(endpoints.map((e) => e.id)),
    scrub,
    metrics,
    debug,
    healthRoutes,
    debugRoutes,
    metricsRoutes,
    endTraces: () => tracer?.endAll(now()),
  };
}
