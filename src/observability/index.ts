import type { MonoTypeOperatorFunction } from 'rxjs';
import type { ControllerConfig } from '../config/controller-config.ts';
import type { ControllerEvent } from '../events.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import { DebugState } from './debug-state.ts';
import { logLine } from './event-log.ts';
import { type Handler, type Listening, json, listen } from './http.ts';
import { ReconcileLifecycle } from './lifecycle.ts';
import type { Logger } from './logger.ts';
import { ControllerMetrics } from './metrics.ts';
import { SecretScrubber } from './redact.ts';
import { ResourceCounter } from './resources.ts';
import { EventTracer, type Tracing, tracingFromEnv } from './tracing.ts';

export interface Listen {
  port: number;
  /** Default 0.0.0.0 (every interface), as a pod needs; `haprx local` uses 127.0.0.1. */
  host?: string;
}

export interface ObservabilityOptions {
  log: Logger;
  /** /healthz, /readyz and /debug/vars; default port 8080. `false` turns it off. */
  health?: Listen | false;
  /** /metrics; default port 9090. The same port as health serves both. `false` turns it off. */
  metrics?: Listen | false;
  /** Whether /debug/vars is served (default true). */
  debugVars?: boolean;
  /** The OTEL_* variables; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** The graph scheduler's clock (event times are in it); default Date.now. */
  now?: () => number;
  /** A stage (render, validate, deploy) open longer than this fails /healthz; default 120 s. */
  stallAfterMs?: number;
  /** Events kept for /debug/vars; default 100. */
  recentEvents?: number;
  /** What a port that cannot be bound does: fail the start (default), or log a warning and go on without it. */
  onListenError?: 'throw' | 'warn';
  serviceVersion?: string;
  /** Process metrics (CPU, memory, event loop, GC); default true. */
  defaultMetrics?: boolean;
}

export interface Observability {
  /** Feeds one controller event to the logs, metrics, traces and debug state. Never throws. */
  record(event: ControllerEvent): void;
  /** Wraps a graph's change source to count objects per watched set (and learn Secret values to scrub). */
  trackResources(): MonoTypeOperatorFunction<ResourceChange>;
  /** The controller configuration the running graph was built from (shown, redacted, in /debug/vars). */
  setControllerConfig(config: ControllerConfig): void;
  setLeader(leader: boolean): void;
  readonly metrics: ControllerMetrics;
  readonly debug: DebugState;
  /** The bound ports, when listening. */
  readonly healthPort: number | undefined;
  readonly metricsPort: number | undefined;
  readonly tracing: Tracing | undefined;
  /** Ends open spans, flushes traces, closes the servers. */
  close(): Promise<void>;
}

/**
 * Observability for a running controller, as a consumer of its event stream: the
 * graph's stages know nothing of it. Both `haprx local` and `haprx run` start it once
 * and feed it every ControllerEvent:
 *
 *   const obs = await startObservability({ log, health: { port: 8080 }, metrics: { port: 9090 } });
 *   controller(config$, { decode, graph: (loaded) => { obs.setControllerConfig(loaded.config);
 *     return controllerGraph(loaded, { ...io, changes: (w) => source(w).pipe(obs.trackResources()) }) } })
 *     .subscribe((event) => obs.record(event));
 *   ...
 *   await obs.close();
 */
export async function startObservability(options: ObservabilityOptions): Promise<Observability> {
  const { log } = options;
  const now = options.now ?? Date.now;
  const scrubber = new SecretScrubber();
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

  const setup = tracingFromEnv(options.env ?? process.env, { name: 'haprx', ...(options.serviceVersion !== undefined && { version: options.serviceVersion }) });
  const tracing = setup.enabled ? setup.tracing : undefined;
  const tracer = tracing && new EventTracer(tracing.tracer, scrub);
  if (setup.enabled) {
    log.info({ url: setup.tracing.url }, `tracing: sending spans to ${setup.tracing.url}`);
    for (const note of setup.notes) log.warn(`tracing: ${note}`);
  } else log.debug(`tracing off: ${setup.why}`);

  const healthRoutes: Record<string, Handler> = {
    '/healthz': () => {
      const health = debug.health();
      return json(health.ok ? 200 : 503, { status: health.ok ? 'ok' : 'stalled', stalled: health.stalled });
    },
    '/readyz': () => {
      const r = debug.readiness();
      const missing = [...(r.synced ? [] : ['the initial sync of every watched set']), ...(r.validConfig ? [] : ['a configuration that haproxy accepted'])];
      return json(r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not ready', ...(missing.length > 0 && { waitingFor: missing }) });
    },
    ...(options.debugVars !== false && {
      '/debug/vars': (url: URL) => {
        const selected = debug.select(url.searchParams.get('field'));
        return selected.ok ? json(200, selected.value) : json(400, { error: selected.message });
      },
    }),
  };
  const metricsRoutes: Record<string, Handler> = {
    '/metrics': async () => ({ status: 200, type: metrics.registry.contentType, body: await metrics.registry.metrics() }),
  };

  const servers: Listening[] = [];
  const serve = async (what: string, routes: Record<string, Handler>, where: Listen) => {
    const host = where.host ?? '0.0.0.0';
    try {
      const listening = await listen(routes, host, where.port);
      servers.push(listening);
      log.info({ host, port: listening.port }, `${what} on http://${host}:${listening.port} (${Object.keys(routes).join(', ')})`);
      return listening.port;
    } catch (err) {
      const message = `cannot serve ${what} on ${host}:${where.port}: ${(err as Error).message}`;
      if (options.onListenError === 'warn') {
        log.warn(message);
        return undefined;
      }
      await Promise.all(servers.map((s) => s.close()));
      throw new Error(message, { cause: err });
    }
  };
  const health = options.health === false ? undefined : { port: 8080, ...options.health };
  const metricsAt = options.metrics === false ? undefined : { port: 9090, ...options.metrics };
  let healthPort: number | undefined;
  let metricsPort: number | undefined;
  if (health && metricsAt && health.port === metricsAt.port && health.port !== 0 && (health.host ?? '0.0.0.0') === (metricsAt.host ?? '0.0.0.0')) {
    healthPort = metricsPort = await serve('health, debug and metrics', { ...healthRoutes, ...metricsRoutes }, health);
  } else {
    if (health) healthPort = await serve('health and debug', healthRoutes, health);
    if (metricsAt) metricsPort = await serve('metrics', metricsRoutes, metricsAt);
  }

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
    metrics,
    debug,
    healthPort,
    metricsPort,
    tracing,
    async close() {
      tracer?.endAll(now());
      await Promise.all([...servers.map((s) => s.close()), tracing?.shutdown().catch((err: unknown) => log.warn(`tracing: ${(err as Error).message}`))]);
    },
  };
}

export { createLogger, type Logger } from './logger.ts';
