import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { BehaviorSubject, type MonoTypeOperatorFunction, NEVER, Observable, Subject, type Subscription, combineLatest, distinctUntilChanged, map, of, tap } from 'rxjs';
import type { CanaryProbeSettings, ControllerConfig } from '../config/controller-config.ts';
import { DEFAULT_SETTINGS } from '../config/controller-config.ts';
import type { RawConfig } from '../config/template-dir.ts';
import { FLEET_PLANS } from '../dataplane/plan-cache.ts';
import { DataplaneTarget, type DataplaneTargetOptions } from '../dataplane/target.ts';
import { errorMessage } from '../errors.ts';
import type { CanaryCheck, ControllerEvent, Deployment, Endpoint, InstanceOutcome } from '../events.ts';
import { SpawnHelper } from '../haproxy/spawn-helper.ts';
import { Validator } from '../haproxy/validate.ts';
import { KubeApi, loadKubeConfig } from '../k8s/api.ts';
import { type EventLimits, clusterEventFor } from '../k8s/cluster-events.ts';
import type { CredentialsResult } from '../k8s/credentials.ts';
import { EventRecorder } from '../k8s/event-recorder.ts';
import { DEFAULT_LEASE_TIMINGS, LeaderElector, type LeaseTimings } from '../k8s/leader-election.ts';
import type { ListWatchOptions } from '../k8s/list-watch.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import { controllerConfigSource, credentialsSource, haproxyEndpoints, kubeChanges } from '../k8s/sources.ts';
import { startObservability } from '../observability/index.ts';
import { Admission } from '../webhook/admission.ts';
import { startWebhook } from '../webhook/index.ts';
import { createLogger } from '../observability/logger.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { controller } from '../../streams/controller.ts';
import { isLoopback, parsePort } from './args.ts';
import { loadControllerConfig } from './load-config.ts';
import type { Command } from './main.ts';
import { reportStrayErrors } from './guard.ts';
import { clusterFeedback, objectEventRecorder } from './feedback.ts';
import { fromAbortable } from './abortable.ts';
import { type CanaryIO, type RenderBasis, controllerGraph } from './wiring.ts';
import type { RecordingControl } from '../replay/control.ts';
import { RECORD_OPTIONS, RECORD_USAGE, type RecordFlags, parseRecordFlags, startRecording } from './recording-flags.ts';

/** What a target is made from: the endpoint's address and the Secret's credentials. */
export type TargetOptions = Pick<DataplaneTargetOptions, 'baseUrl' | 'username' | 'password' | 'ca' | 'cert' | 'key'>;

/** One HAProxy instance to deploy to: DataplaneTarget in production. */
export interface InstanceTarget {
  /** With `fast`, the fast path's runtime operations: applied at runtime or not at all. */
  deploy(config: RenderedConfig, signal?: AbortSignal, fast?: Deployment['fast']): Promise<InstanceOutcome>;
  close?(): Promise<void>;
  /** What the instance runs, as far as the target vouches (canary rollout). */
  readonly running?: RenderedConfig | undefined;
  /** One round of canary checks (canary rollout); a target without it is checked by time alone. */
  check?(since: number, probe: CanaryProbeSettings | undefined, signal?: AbortSignal): Promise<CanaryCheck>;
}

export type TargetFactory = (options: TargetOptions) => InstanceTarget;

/** What the running controller tells its log; never credentials. */
export type Notice = { level: 'debug' | 'info' | 'warn' | 'error'; message: string; fields?: Record<string, unknown> };

/** The observability surface `haprx run` feeds (src/observability's startObservability gives it). */
export interface RunObserver {
  record(event: ControllerEvent): void;
  trackResources?(): MonoTypeOperatorFunction<ResourceChange>;
  setControllerConfig?(config: ControllerConfig): void;
  setLeader?(leader: boolean): void;
  setEndpoints?(endpoints: readonly Endpoint[]): void;
  /** Blanks the values of watched Secrets out of a text bound for the cluster or a log. */
  scrub?(text: string): string;
}

export interface InClusterOptions {
  api: KubeApi;
  /** The controller's namespace: its ConfigMap, credentials Secret, Lease and Events. */
  namespace: string;
  configMap: string;
  credentialsSecret: string;
  lease: string;
  /** This replica in the Lease and in Events; unique per process. */
  identity: string;
  leaseTimings?: Partial<LeaseTimings>;
  validator: Pick<Validator, 'validate'>;
  targets: TargetFactory;
  /** How long a stop waits for the deployment in flight before aborting it. */
  drainTimeoutMs?: number;
  listWatch?: ListWatchOptions;
  eventLimits?: Partial<EventLimits>;
  /** Limits of the Warning Events on the objects the render skipped. */
  objectEventLimits?: Partial<EventLimits>;
  /** Status writes start at least this far apart (default 50 ms). */
  statusIntervalMs?: number;
  observer?: RunObserver;
  onNotice?: (notice: Notice) => void;
  /** Told what each graph renders with, so that admission reviews render the same. */
  admission?: Pick<Admission, 'setBasis'>;
  /** Records the graph's inputs while a recording is on (docs/replay.md). */
  recording?: RecordingControl;
}

export interface RunningController {
  /** Whether this replica leads (and so deploys, writes status and reports on objects). */
  readonly leader$: Observable<boolean>;
  /**
   * Stops: no new deployment starts, the one in flight finishes or is aborted after
   * drainTimeoutMs, the lease is released, pending Events are written.
   */
  stop(): Promise<void>;
}

/**
 * The in-cluster controller: the same graph as `haprx local`, with the Kubernetes
 * source, the HAProxy pods as endpoints, the Data Plane targets and the leader
 * election, and the cluster feedback (Events, each object's status, Warning Events on
 * the objects the render skipped) as consumers of the event stream.
 */
export function startInCluster(options: InClusterOptions): RunningController {
  const { api, namespace, identity } = options;
  const notice = options.onNotice ?? (() => undefined);
  const observer = options.observer;
  const lw = options.listWatch ?? {};
  const subscriptions: Subscription[] = [];

  const elector = new LeaderElector(api, {
    namespace,
    name: options.lease,
    identity,
    ...DEFAULT_LEASE_TIMINGS,
    ...options.leaseTimings,
    onNotice: ({ leader, message }) => notice({ level: leader ? 'info' : 'warn', message: `leader election: ${message}`, fields: { identity, leader } }),
  });
  // Stopping takes the deploying role away at once, before the lease is released.
  const stopping$ = new BehaviorSubject(false);
  const leader$ = combineLatest([elector.leader$, stopping$]).pipe(
    map(([leader, stopping]) => leader && !stopping),
    distinctUntilChanged(),
  );
  if (observer?.setLeader) subscriptions.push(leader$.subscribe((leader) => observer.setLeader!(leader)));

  let configUid: string | undefined;
  const recorder = new EventRecorder(api, {
    namespace,
    reportingInstance: identity,
    regarding: () => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: options.configMap, ...(configUid !== undefined && { uid: configUid }) }),
    ...(options.eventLimits && { limits: options.eventLimits }),
    onNotice: (message) => notice({ level: 'warn', message }),
  });
  const objectEvents = objectEventRecorder(api, { identity, ...(options.objectEventLimits && { limits: options.objectEventLimits }), onNotice: (message) => notice({ level: 'warn', message }) });

  // One target per HAProxy pod, kept across deployments and configurations (a target
  // remembers what its instance runs); replaced when the pod's address or incarnation
  // changes (a restarted or replaced pod runs something else), and all of them when the
  // credentials rotate (new clients, no restart).
  const targets = new Map<string, { address: string; incarnation: string | undefined; target: InstanceTarget }>();
  const retire = (ids: Iterable<string>) => {
    for (const id of [...ids]) {
      const known = targets.get(id);
      targets.delete(id);
      void known?.target.close?.().catch(() => undefined);
    }
  };
  // Deployments running now, so that a stop can wait for them before the graph goes.
  const deploying = new Set<AbortController>();
  let credentials: CredentialsResult = { ok: false, message: `the Secret ${namespace}/${options.credentialsSecret} has not been read yet` };
  // New or rotated credentials: every instance is deployed to again, with new clients.
  const credentialsLoaded$ = new Subject<string>();
  subscriptions.push(
    credentialsSource(api, namespace, options.credentialsSecret, lw).subscribe({
      next: (result) => {
        credentials = result;
        retire(targets.keys());
        if (result.ok) {
          notice({ level: 'info', message: `Data Plane credentials loaded (version ${result.credentials.version})` });
          credentialsLoaded$.next(result.credentials.version);
        } else notice({ level: 'warn', message: `Data Plane credentials: ${result.message}` });
      },
      error: (err: unknown) => notice({ level: 'error', message: `Data Plane credentials: the watch of the Secret ended: ${errorMessage(err)}` }),
    }),
  );
  const targetFor = (endpoint: Endpoint, current: Extract<CredentialsResult, { ok: true }>): InstanceTarget => {
    const known = targets.get(endpoint.id);
    if (known?.address === endpoint.address && known.incarnation === endpoint.incarnation) return known.target;
    if (known) retire([endpoint.id]);
    const { username, password, ca, cert, key } = current.credentials;
    const target = options.targets({ baseUrl: endpoint.address, username, password, ...(ca !== undefined && { ca }), ...(cert !== undefined && { cert, key: key! }) });
    targets.set(endpoint.id, { address: endpoint.address, incarnation: endpoint.incarnation, target });
    return target;
  };
  const settled = new Subject<void>();
  const deployTo = (endpoint: Endpoint, deployment: Deployment): Observable<InstanceOutcome> => {
    // Stopping: nothing new starts (the graph is torn down right after).
    if (stopping$.value) return NEVER;
    const current = credentials;
    if (!current.ok) return of({ ok: false, reloaded: false, runtimeOps: 0, error: current.message });
    const target = targetFor(endpoint, current);
    return new Observable<InstanceOutcome>((subscriber) => {
      const abort = new AbortController();
      deploying.add(abort);
      target
        .deploy(deployment.config, abort.signal, deployment.fast)
        .then(
          (outcome) => {
            subscriber.next(outcome);
            subscriber.complete();
          },
          (err: unknown) => subscriber.error(err),
        )
        .finally(() => {
          deploying.delete(abort);
          settled.next();
        });
      return () => abort.abort();
    });
  };

  // Canary rollout asks the targets what their instances run, checks the canary through its target, and
  // plans the rollout through the targets' plans.
  const canary: CanaryIO = {
    check: (endpoint, since, probe) =>
      fromAbortable(async (signal): Promise<CanaryCheck> => {
        const target = targets.get(endpoint.id)?.target;
        if (!target) return { ok: false, problems: [`no Data Plane target for ${endpoint.id}`] };
        return target.check ? target.check(since, probe, signal) : { ok: true };
      }),
    running: (endpoint) => {
      const known = targets.get(endpoint.id);
      return known?.address === endpoint.address && known.incarnation === endpoint.incarnation ? known.target.running : undefined;
    },
    plan: (from, to) => FLEET_PLANS.steps(from, to),
  };

  const config$ = controllerConfigSource(api, namespace, options.configMap, lw).pipe(
    tap((state) => (configUid = state.uid)),
    map((state) => state.raw),
  );

  const events$ = controller(config$, {
    decode: (raw: RawConfig) => (raw.ok ? loadControllerConfig(raw.raw) : { ok: false, path: raw.path, message: raw.message }),
    graph: (loaded) => {
      observer?.setControllerConfig?.(loaded.config);
      const haproxy = loaded.config.settings.haproxy ?? DEFAULT_SETTINGS.haproxy!;
      const podNamespace = haproxy.namespace ?? namespace;
      const feedback = clusterFeedback(api, loaded, {
        leader$,
        ...(haproxy.service && { service: { namespace: podNamespace, name: haproxy.service } }),
        recorder: objectEvents,
        listWatch: lw,
        ...(options.statusIntervalMs !== undefined && { minIntervalMs: options.statusIntervalMs }),
      });
      let changes$ = kubeChanges(api, loaded.config.watch, lw).pipe(feedback.observe);
      if (observer?.trackResources) changes$ = changes$.pipe(observer.trackResources());
      const graph$ = controllerGraph(loaded, {
        changes: () => changes$,
        endpoints$: haproxyEndpoints(api, podNamespace, haproxy.podSelector, haproxy.dataplane, lw).pipe(
          tap((endpoints) => {
            retire([...targets.keys()].filter((id) => !endpoints.some((e) => e.id === id)));
            observer?.setEndpoints?.(endpoints);
          }),
        ),
        validator: options.validator,
        deployTo,
        // Fencing is the lease's: losing it aborts the deployment in flight. A stop is no
        // loss: deployTo starts nothing new, and the one in flight may drain.
        leader$: elector.leader$,
        credentials$: credentialsLoaded$,
        canary,
        ...(observer?.scrub && { scrub: observer.scrub }),
        ...(options.recording && { recording: options.recording }),
        ...(options.admission && { onRender: ({ loaded: l, values, resources }: RenderBasis) => options.admission!.setBasis({ config: l.config, templates: l.templates, values, resources }) }),
      });
      return feedback.attach(graph$);
    },
  });

  subscriptions.push(
    events$.subscribe({
      next: (event) => {
        observer?.record(event);
        const clusterEvent = clusterEventFor(event);
        if (clusterEvent) recorder.record(clusterEvent);
      },
      // The graph and the controller restart themselves on errors; this would be a defect.
      error: (err: unknown) => notice({ level: 'error', message: `the controller stopped on an error: ${errorMessage(err)}` }),
    }),
  );
  elector.start();

  let stopped: Promise<void> | undefined;
  return {
    leader$,
    stop: () =>
      (stopped ??= (async () => {
        stopping$.next(true);
        const drainMs = options.drainTimeoutMs ?? 20_000;
        // Waits for the target calls in flight, whichever graph started them.
        const drained = await new Promise<boolean>((resolve) => {
          if (deploying.size === 0) return resolve(true);
          const timer = setTimeout(() => resolve(false), drainMs);
          const sub = settled.subscribe(() => {
            if (deploying.size > 0) return;
            clearTimeout(timer);
            queueMicrotask(() => sub.unsubscribe());
            resolve(true);
          });
        });
        if (!drained) {
          notice({ level: 'warn', message: `the deployment in flight did not finish within ${drainMs} ms: aborting it` });
          for (const abort of deploying) abort.abort();
        }
        // Unsubscribing stops the rest (validations, watches, timers).
        for (const s of subscriptions) s.unsubscribe();
        await elector.stop();
        // Pending Event series are worth a moment, not a missed grace period.
        await Promise.race([Promise.all([recorder.stop(), objectEvents.stop()]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
        const closing = [...targets.values()].map((t) => t.target.close?.().catch(() => undefined));
        targets.clear();
        await Promise.all(closing);
        stopping$.complete();
      })()),
  };
}

const ENV = {
  namespace: 'HAPRX_NAMESPACE',
  configMap: 'HAPRX_CONFIGMAP',
  secret: 'HAPRX_CREDENTIALS_SECRET',
  lease: 'HAPRX_LEASE',
  identity: 'HAPRX_IDENTITY',
  webhookSecret: 'HAPRX_WEBHOOK_SECRET',
} as const;

/** Reads a duration flag such as `15s` or `1500ms`. */
function durationMs(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new Error(`--${flag} ${text}: expected a duration such as 15s or 1500ms`);
  return Math.round(Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 'm' ? 60_000 : 1_000));
}

export const runCommand: Command = {
  summary: 'run the controller in a Kubernetes cluster, deploying through the Data Plane API',
  usage: `Usage: haprx run [--namespace NS] [--configmap NAME] [--credentials-secret NAME] [--lease NAME]
                [--identity ID] [--kubeconfig FILE] [--haproxy-bin PATH] [--drain-timeout DURATION]
                [--lease-duration DURATION] [--renew-deadline DURATION] [--retry-period DURATION]
                [--health-port N] [--metrics-port N] [--listen-address ADDR]
                [--debug-port N] [--debug-address ADDR] [--webhook-port N] [--webhook-secret NAME]
                [--record FILE] [--record-max-bytes N]

Runs the controller until SIGTERM or SIGINT. The controller configuration (templates,
watched resources, settings) is the ConfigMap; the Data Plane API credentials are the
Secret; the HAProxy pods are found by settings.haproxy.podSelector. Every replica
watches, renders and validates; the one holding the Lease deploys, writes the status
of the objects the templates declare (Ingress, GatewayClass, Gateway, HTTPRoute) and
records Warning Events on the objects the render skips. On SIGTERM no new deployment
starts, the one in flight finishes (or is aborted after --drain-timeout), and the
lease is released.

The API server is reached with --kubeconfig, else KUBECONFIG, else the pod's service
account (in-cluster), else ~/.kube/config. See docs/kubernetes.md.

Options (environment variable in brackets):
  --namespace NS                namespace of the ConfigMap, Secret, Lease and Events
                                [${ENV.namespace}] (default: the service account's, or the context's)
  --configmap NAME              controller configuration [${ENV.configMap}] (default haprx)
  --credentials-secret NAME     Data Plane credentials [${ENV.secret}] (default haprx-dataplane)
  --lease NAME                  leader election Lease [${ENV.lease}] (default haprx-leader)
  --identity ID                 this replica in the Lease and Events [${ENV.identity}]
                                (default: POD_NAME or the host name, plus a random suffix)
  --kubeconfig FILE             client configuration file
  --haproxy-bin PATH            haproxy for validation (default: haproxy on the PATH)
  --drain-timeout DURATION      bound on the deployment in flight at shutdown (default 20s)
  --lease-duration DURATION     default 15s
  --renew-deadline DURATION     default 10s
  --retry-period DURATION       default 2s
  --health-port N               /healthz, /readyz (default 8080; 0 turns it off)
  --metrics-port N              Prometheus /metrics (default 9090; 0 turns it off)
  --listen-address ADDR         where health and metrics listen (default 0.0.0.0: the pod's
                                network, for probes and scrapes)
  --debug-port N                /debug/vars (default 8081; 0 turns it off). It shows the
                                rendered configuration: reach it with kubectl port-forward
  --debug-address ADDR          where /debug/vars listens (default 127.0.0.1: not reachable
                                from the pod network)
  --webhook-port N              the validating admission webhook, HTTPS on --listen-address
                                (default 9443; 0 turns it off); see docs/security.md
  --webhook-secret NAME         its serving certificate, a kubernetes.io/tls Secret in the
                                namespace (tls.crt, tls.key; cert-manager's layout; reloaded
                                when it changes) [${ENV.webhookSecret}] (default haprx-webhook-tls)
${RECORD_USAGE}`,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        namespace: { type: 'string' },
        configmap: { type: 'string' },
        'credentials-secret': { type: 'string' },
        lease: { type: 'string' },
        identity: { type: 'string' },
        kubeconfig: { type: 'string' },
        'haproxy-bin': { type: 'string', default: 'haproxy' },
        'drain-timeout': { type: 'string' },
        'lease-duration': { type: 'string' },
        'renew-deadline': { type: 'string' },
        'retry-period': { type: 'string' },
        'health-port': { type: 'string', default: '8080' },
        'metrics-port': { type: 'string', default: '9090' },
        'listen-address': { type: 'string', default: '0.0.0.0' },
        'debug-port': { type: 'string', default: '8081' },
        'debug-address': { type: 'string', default: '127.0.0.1' },
        'webhook-port': { type: 'string', default: '9443' },
        'webhook-secret': { type: 'string' },
        ...RECORD_OPTIONS,
      },
      allowPositionals: false,
      strict: true,
    });
    const env = process.env;
    const log = createLogger();
    let timings: LeaseTimings;
    let drainTimeoutMs: number;
    let recordFlags: RecordFlags;
    const ports: Record<string, number> = {};
    try {
      timings = {
        leaseDurationMs: durationMs('lease-duration', values['lease-duration'], DEFAULT_LEASE_TIMINGS.leaseDurationMs),
        renewDeadlineMs: durationMs('renew-deadline', values['renew-deadline'], DEFAULT_LEASE_TIMINGS.renewDeadlineMs),
        retryPeriodMs: durationMs('retry-period', values['retry-period'], DEFAULT_LEASE_TIMINGS.retryPeriodMs),
      };
      drainTimeoutMs = durationMs('drain-timeout', values['drain-timeout'], 20_000);
      if (!(timings.retryPeriodMs < timings.renewDeadlineMs && timings.renewDeadlineMs < timings.leaseDurationMs)) {
        throw new Error('expected --retry-period < --renew-deadline < --lease-duration');
      }
      for (const flag of ['health-port', 'metrics-port', 'debug-port', 'webhook-port'] as const) {
        const port = parsePort(flag, values[flag]);
        if (!port.ok) throw new Error(port.message);
        ports[flag] = port.port;
      }
      const record = parseRecordFlags(values);
      if (!record.ok) throw new Error(record.message);
      recordFlags = record.flags;
    } catch (err) {
      process.stderr.write(`haprx: ${(err as Error).message}\n`);
      return 2;
    }

    let loadedConfig;
    try {
      loadedConfig = loadKubeConfig({ ...(values.kubeconfig !== undefined && { kubeconfig: values.kubeconfig }) });
    } catch (err) {
      process.stderr.write(`haprx: cannot load the Kubernetes client configuration: ${(err as Error).message}\n`);
      return 1;
    }
    const namespace = values.namespace ?? env[ENV.namespace] ?? loadedConfig.namespace ?? 'default';
    const identity = values.identity ?? env[ENV.identity] ?? `${env.POD_NAME ?? hostname()}_${randomUUID().slice(0, 8)}`;
    const configMap = values.configmap ?? env[ENV.configMap] ?? 'haprx';
    const credentialsSecret = values['credentials-secret'] ?? env[ENV.secret] ?? 'haprx-dataplane';
    const lease = values.lease ?? env[ENV.lease] ?? 'haprx-leader';

    // Started first, while this process is small: it starts haproxy -c for the validator.
    const spawner = new SpawnHelper({ onExit: (cause) => log.warn(`${cause}; the next check starts another`) });
    spawner.start();
    const unguard = reportStrayErrors((where, err) => log.error({ err: errorMessage(err) }, `an error escaped ${where}, haprx goes on: ${errorMessage(err)}`));
    const host = values['listen-address'];
    const debugHost = values['debug-address'];
    if (ports['debug-port'] && !isLoopback(debugHost)) log.warn({ host: debugHost }, `/debug/vars listens on ${debugHost}, not a loopback address: anyone who reaches it reads the rendered configuration`);
    const obs = await startObservability({
      log,
      health: ports['health-port'] ? { port: ports['health-port'], host } : false,
      metrics: ports['metrics-port'] ? { port: ports['metrics-port'], host } : false,
      debug: ports['debug-port'] ? { port: ports['debug-port'], host: debugHost } : false,
    });
    const recording = startRecording(recordFlags, log, obs.scrub);
    log.info({ source: loadedConfig.source, namespace, configMap, credentialsSecret, lease, identity }, `haprx run: ConfigMap ${namespace}/${configMap}, lease ${lease} as ${identity}`);
    const api = new KubeApi(loadedConfig.config);
    const listWatch: ListWatchOptions = {
      onDiagnostic: (d) => {
        log.debug({ ...d }, `list/watch ${d.set}: ${d.type}`);
        if (d.type === 'watch-ended') obs.metrics.watchEnded(d.set, d.reason);
      },
    };
    const admission = ports['webhook-port'] ? new Admission({ namespace, configMap }) : undefined;
    const webhook = admission
      ? startWebhook({
          api,
          namespace,
          secret: values['webhook-secret'] ?? env[ENV.webhookSecret] ?? 'haprx-webhook-tls',
          host,
          port: ports['webhook-port']!,
          admission,
          listWatch,
          onNotice: (level, message, fields) => log[level](fields ?? {}, message),
        })
      : undefined;
    const running = startInCluster({
      api,
      namespace,
      configMap,
      credentialsSecret,
      lease,
      identity,
      leaseTimings: timings,
      validator: new Validator({ haproxyBin: values['haproxy-bin'], runner: spawner.run }),
      targets: (target) => new DataplaneTarget({ ...target, onStep: (step) => log.debug({ endpoint: target.baseUrl, step: step.kind }, step.detail) }),
      drainTimeoutMs,
      observer: obs,
      listWatch,
      onNotice: ({ level, message, fields }) => log[level](fields ?? {}, message),
      ...(admission && { admission }),
      ...(recording && { recording: recording.control }),
    });

    const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
      process.once('SIGINT', () => resolveSignal('SIGINT'));
      process.once('SIGTERM', () => resolveSignal('SIGTERM'));
    });
    log.info(`${signal}: stopping (at most ${drainTimeoutMs} ms for the deployment in flight)`);
    // A second signal does not wait.
    const force = () => {
      log.warn('second signal: exiting now');
      process.exit(1);
    };
    process.once('SIGINT', force);
    process.once('SIGTERM', force);
    await running.stop();
    await spawner.stop();
    await recording?.close();
    await webhook?.close();
    await obs.close();
    unguard();
    log.info('stopped');
    // A request still waiting on an unresponsive API server must not hold the exit.
    setTimeout(() => process.exit(0), 1_000).unref();
    return 0;
  },
};
