import { type Listening, type Handler, listen } from './http.ts';
import { type Observer, type ObserverOptions, createObserver } from './observer.ts';
import { type Tracing, tracingFromEnv } from './tracing.ts';

export interface Listen {
  port: number;
  /** Default 0.0.0.0 (every interface), as a pod needs; `haprx local` uses 127.0.0.1. */
  host?: string;
}

export interface ObservabilityOptions extends Omit<ObserverOptions, 'tracer'> {
  /** /healthz, /readyz and /debug/vars; default port 8080. `false` turns it off. */
  health?: Listen | false;
  /** /metrics; default port 9090. The same port and host as health serves both. `false` turns it off. */
  metrics?: Listen | false;
  /** The OTEL_* variables; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** What a port that cannot be bound does: fail the start (default), or log a warning and go on without it. */
  onListenError?: 'throw' | 'warn';
  serviceVersion?: string;
}

export interface Observability extends Omit<Observer, 'healthRoutes' | 'metricsRoutes' | 'endTraces'> {
  /** The bound ports, when listening. */
  readonly healthPort: number | undefined;
  readonly metricsPort: number | undefined;
  /** Set when OTEL_* configured an exporter. */
  readonly tracing: Tracing | undefined;
  /** Ends open spans, flushes traces, closes the servers. */
  close(): Promise<void>;
}

/**
 * Observability for a running controller, as a consumer of its event stream: the
 * graph's stages know nothing of it. `haprx local` and `haprx run` start it once and
 * feed it every ControllerEvent:
 *
 *   const obs = await startObservability({ log, health: { port: 8080 }, metrics: { port: 9090 } });
 *   controller(config$, { decode, graph: (loaded) => {
 *     obs.setControllerConfig(loaded.config);
 *     return controllerGraph(loaded, { ...io, changes: (watch) => source(watch).pipe(obs.trackResources()) });
 *   } }).subscribe((event) => obs.record(event));
 *   leader$.subscribe((leader) => obs.setLeader(leader));
 *   ...
 *   await obs.close();
 */
export async function startObservability(options: ObservabilityOptions): Promise<Observability> {
  const { log } = options;
  const setup = tracingFromEnv(options.env ?? process.env, { name: 'haprx', ...(options.serviceVersion !== undefined && { version: options.serviceVersion }) });
  const tracing = setup.enabled ? setup.tracing : undefined;
  if (setup.enabled) {
    log.info({ url: setup.tracing.url }, `tracing: sending spans to ${setup.tracing.url}`);
    for (const note of setup.notes) log.warn(`tracing: ${note}`);
  } else log.debug(`tracing off: ${setup.why}`);
  const observer = createObserver({ ...options, ...(tracing && { tracer: tracing.tracer }) });

  const servers: Listening[] = [];
  const serve = async (what: string, routes: Readonly<Record<string, Handler>>, where: Listen) => {
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
      await tracing?.shutdown();
      throw new Error(message, { cause: err });
    }
  };
  const health = options.health === false ? undefined : { port: 8080, ...options.health };
  const metrics = options.metrics === false ? undefined : { port: 9090, ...options.metrics };
  let healthPort: number | undefined;
  let metricsPort: number | undefined;
  if (health && metrics && health.port === metrics.port && health.port !== 0 && (health.host ?? '0.0.0.0') === (metrics.host ?? '0.0.0.0')) {
    healthPort = metricsPort = await serve('health, debug and metrics', { ...observer.healthRoutes, ...observer.metricsRoutes }, health);
  } else {
    if (health) healthPort = await serve('health and debug', observer.healthRoutes, health);
    if (metrics) metricsPort = await serve('metrics', observer.metricsRoutes, metrics);
  }

  return {
    record: observer.record,
    trackResources: observer.trackResources,
    setControllerConfig: observer.setControllerConfig,
    setLeader: observer.setLeader,
    scrub: observer.scrub,
    metrics: observer.metrics,
    debug: observer.debug,
    healthPort,
    metricsPort,
    tracing,
    async close() {
      observer.endTraces();
      await Promise.all([...servers.map((s) => s.close()), tracing?.shutdown().catch((err: unknown) => log.warn(`tracing: ${(err as Error).message}`))]);
    },
  };
}

export { createObserver, type Observer, type ObserverOptions } from './observer.ts';
export { createLogger, type Logger } from './logger.ts';
