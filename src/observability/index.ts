import { type Listening, type Handler, listen } from './http.ts';
import { type Observer, type ObserverOptions, createObserver } from './observer.ts';
import { type Tracing, tracingFromEnv } from './tracing.ts';

export interface Listen {
  port: number;
  /** Default 0.0.0.0 (every interface) for health and metrics, as a pod needs; 127.0.0.1 for debug. */
  host?: string;
}

export interface ObservabilityOptions extends Omit<ObserverOptions, 'tracer'> {
  /** /healthz and /readyz; default port 8080. `false` turns it off. */
  health?: Listen | false;
  /** /metrics; default port 9090. `false` turns it off. */
  metrics?: Listen | false;
  /**
   * /debug/vars; default 127.0.0.1:8081, so that it is off the pod network: it shows
   * the rendered configuration. `false` turns it off.
   * Listeners given the same host and port (not 0) share one server.
   */
  debug?: Listen | false;
  /** The OTEL_* variables; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** What a port that cannot be bound does: fail the start (default), or log a warning and go on without it. */
  onListenError?: 'throw' | 'warn';
  serviceVersion?: string;
}

export interface Observability extends Omit<Observer, 'healthRoutes' | 'debugRoutes' | 'metricsRoutes' | 'endTraces'> {
  /** The bound ports, when listening. */
  readonly healthPort: number | undefined;
  readonly metricsPort: number | undefined;
  readonly debugPort: number | undefined;
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
 *   const obs = await startObservability({ log, health: { port: 8080 }, metrics: { port: 9090 }, debug: { port: 8081, host: '127.0.0.1' } });
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
  const serve = async (what: string, routes: Readonly<Record<string, Handler>>, host: string, port: number) => {
    try {
      const listening = await listen(routes, host, port);
      servers.push(listening);
      log.info({ host, port: listening.port }, `${what} on http://${host}:${listening.port} (${Object.keys(routes).join(', ')})`);
      return listening.port;
    } catch (err) {
      const message = `cannot serve ${what} on ${host}:${port}: ${(err as Error).message}`;
      if (options.onListenError === 'warn') {
        log.warn(message);
        return undefined;
      }
      await Promise.all(servers.map((s) => s.close()));
      await tracing?.shutdown();
      throw new Error(message, { cause: err });
    }
  };
  const wanted: { what: 'health' | 'metrics' | 'debug'; routes: Readonly<Record<string, Handler>>; where: Listen | false | undefined; fallback: Required<Listen> }[] = [
    { what: 'health', routes: observer.healthRoutes, where: options.health, fallback: { port: 8080, host: '0.0.0.0' } },
    { what: 'debug', routes: observer.debugRoutes, where: options.debug, fallback: { port: 8081, host: '127.0.0.1' } },
    { what: 'metrics', routes: observer.metricsRoutes, where: options.metrics, fallback: { port: 9090, host: '0.0.0.0' } },
  ];
  // One server per distinct host and port; port 0 (any free port) is never shared.
  const groups = new Map<string, { host: string; port: number; what: string[]; routes: Record<string, Handler> }>();
  for (const w of wanted) {
    if (w.where === false) continue;
    const { port, host } = { ...w.fallback, ...w.where };
    const key = port === 0 ? `${w.what}` : `${host} ${port}`;
    const group = groups.get(key) ?? { host, port, what: [], routes: {} };
    group.what.push(w.what);
    Object.assign(group.routes, w.routes);
    groups.set(key, group);
  }
  const bound = new Map<string, number | undefined>();
  for (const group of groups.values()) {
    const port = await serve(group.what.join(', '), group.routes, group.host, group.port);
    for (const what of group.what) bound.set(what, port);
  }
  const healthPort = bound.get('health');
  const metricsPort = bound.get('metrics');
  const debugPort = bound.get('debug');

  return {
    record: observer.record,
    trackResources: observer.trackResources,
    setControllerConfig: observer.setControllerConfig,
    setLeader: observer.setLeader,
    setEndpoints: observer.setEndpoints,
    scrub: observer.scrub,
    metrics: observer.metrics,
    debug: observer.debug,
    healthPort,
    metricsPort,
    debugPort,
    tracing,
    async close() {
      observer.endTraces();
      await Promise.all([...servers.map((s) => s.close()), tracing?.shutdown().catch((err: unknown) => log.warn(`tracing: ${(err as Error).message}`))]);
    },
  };
}

export { createObserver, type Observer, type ObserverOptions } from './observer.ts';
export { createLogger, type Logger } from './logger.ts';
