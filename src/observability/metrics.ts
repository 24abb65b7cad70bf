import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ControllerEvent, DeployRequest, ReconcileCause } from '../events.ts';
import { OUTCOMES, type ReconcileLifecycle, type Stage, type Step } from './lifecycle.ts';

/** Every event type, so that each counter series exists from the first scrape. */
export const EVENT_TYPES: readonly ControllerEvent['type'][] = [
  'ConfigAccepted',
  'ConfigRejected',
  'SourceProblem',
  'ReconcileTriggered',
  'Rendered',
  'RenderFailed',
  'RenderUnchanged',
  'Validated',
  'ValidationFailed',
  'ValidationUnavailable',
  'DeploymentStarted',
  'InstanceDeployed',
  'InstanceDeployFailed',
  'DeploymentCompleted',
  'FastPathPlanned',
  'FastPathSkipped',
  'ValidatedSuperseded',
  'TargetDown',
  'TargetRestarted',
  'LeadershipLost',
  'StageFailed',
  'StatusWritten',
  'StatusWriteFailed',
];
const CAUSES: readonly ReconcileCause['reason'][] = ['resources', 'config', 'drift', 'endpoints', 'leader'];
const DEPLOY_REASONS: readonly DeployRequest['reason'][] = ['change', 'drift', 'endpoints', 'leader', 'retry', 'credentials', 'fast', 'canary', 'rollback'];
/** What the feedback edges retry: an instance's deployment, a check that could not run, the whole graph after a stage failed. */
const RETRIED = ['instance', 'validation', 'graph'] as const;
const STAGES: readonly Stage[] = ['rendering', 'validating', 'queued', 'deploying', 'canary'];

/** From a millisecond to a minute: renders are fast, haproxy -c on a large config takes a second, deploys time out at 30 s. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface MetricsSources {
  lifecycle: ReconcileLifecycle;
  /** Objects per watched set, read at scrape time. */
  resourceCounts(): ReadonlyMap<string, number>;
  now(): number;
}

function createMetrics(registry: Registry, sources: MetricsSources) {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (this: Gauge<L>) => void) =>
    new Gauge<L>({ name, help, labelNames, registers, ...(collect && { collect }) });
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Histogram<L>({ name, help, labelNames, buckets: BUCKETS, registers });

  return {
    reconciliations: counter('haprx_reconciliations_total', 'Reconciliations started, by what set them off (resources, config, drift, endpoints, leader).', ['reason']),
    reconcileErrors: counter('haprx_reconciliation_errors_total', 'Reconciliations that failed, by the stage that failed them (render, validate, deploy, canary).', ['stage']),
    reconcileDuration: histogram(
      'haprx_reconciliation_duration_seconds',
      'From the trigger to the end of the reconciliation (deployed, or stopped earlier), by outcome.',
      ['outcome'],
    ),
    renderDuration: histogram('haprx_render_duration_seconds', 'Time to render the templates, by result (changed, unchanged, failed).', ['result']),
    renderThreadHeap: gauge(
      'haprx_render_thread_heap_bytes',
      "The V8 heap of the render thread after its last render, by figure: used, total (what V8 holds) and limit; the process's nodejs_heap_* figures are the main thread's alone.",
      ['figure'],
    ),
    validations: counter('haprx_validations_total', 'Configurations checked with haproxy -c (in local mode the first by starting haproxy on it).'),
    validationErrors: counter('haprx_validation_errors_total', 'Configurations haproxy -c refused.'),
    validationUnavailable: counter('haprx_validation_unavailable_total', 'Checks that could not run (haproxy -c timed out, could not start, was killed); never counted as refused.'),
    validationDuration: histogram('haprx_validation_duration_seconds', 'Time a check took (haproxy -c; in local mode the start on the first configuration), by result (valid, invalid, unavailable).', ['result']),
    retries: counter(
      'haprx_retries_total',
      'Retries scheduled by the feedback edges: instance (a failed instance deployed again), validation (a check that could not run), graph (a restart after a stage failed).',
      ['what'],
    ),
    stageFailures: counter('haprx_stage_failures_total', 'Errors that left a stage of the graph and restarted it, by stage.', ['stage']),
    deployments: counter('haprx_deployments_total', 'Deployments completed, by reason (change, drift, endpoints, leader, retry, credentials, fast, canary, rollback).', ['reason']),
    propagation: histogram(
      'haprx_propagation_seconds',
      'From the first change of a reconciliation seen to it live on every instance, by path: runtime (runtime API only, the fast path included) or reload.',
      ['path'],
    ),
    fastPath: counter('haprx_fast_path_total', 'Batches of changes the fast path applied at runtime (planned), or left to the full render (skipped).', ['result']),
    canaries: counter(
      'haprx_canaries_total',
      'Canary rollouts that ended, by result: passed (the rest got the configuration), failed (the canary was rolled back, the rest left untouched), abandoned (a newer configuration came first).',
      ['result'],
    ),
    deploymentErrors: counter('haprx_deployment_errors_total', 'Deployments in which at least one instance failed, by reason.', ['reason']),
    deploymentDuration: histogram('haprx_deployment_duration_seconds', 'Time from the start of a deployment until every instance answered, by reason.', ['reason']),
    deploymentWait: histogram('haprx_deployment_wait_seconds', 'Time a deployment waited in the scheduler (minimum interval, a running deployment), by reason.', ['reason']),
    deploymentsInProgress: gauge('haprx_deployments_in_progress', 'Deployments running now (0 or 1).'),
    instanceDeploys: counter('haprx_instance_deploys_total', 'Deployments to one HAProxy instance, by endpoint and result (ok, failed).', ['endpoint', 'result']),
    instanceDuration: histogram('haprx_instance_deploy_duration_seconds', 'Time to deploy to one instance, by result.', ['result']),
    instanceUpdates: counter(
      'haprx_instance_updates_total',
      'Successful instance deployments by how they were applied: reload, runtime (runtime API only, no reload) or none (already up to date).',
      ['endpoint', 'mode'],
    ),
    runtimeOps: counter('haprx_runtime_operations_total', 'Runtime API operations applied (servers, map entries), by endpoint.', ['endpoint']),
    events: counter('haprx_events_total', 'Controller events, by type.', ['type']),
    watchesEnded: counter(
      'haprx_watches_ended_total',
      'Watches of the API server that ended and were resumed, by resource set and why: closed (the server ended it at its timeout), gone (410, relisted), silent (the watchdog found it dead), error.',
      ['resource', 'reason'],
    ),
    resources: gauge('haprx_resources', 'Objects in each watched resource set.', ['resource'], function collect() {
      this.reset();
      for (const [resource, count] of sources.resourceCounts()) this.set({ resource }, count);
    }),
    stageAge: gauge(
      'haprx_stage_age_seconds',
      'How long the reconciliation in each stage (rendering, validating, queued, deploying, canary) has been there; 0 when the stage is idle.',
      ['stage'],
      function collect() {
        const now = sources.now();
        const age = new Map<Stage, number>(STAGES.map((s) => [s, 0]));
        for (const r of sources.lifecycle.reconciles) age.set(r.stage, Math.max(age.get(r.stage) ?? 0, (now - r.stageSince) / 1000));
        for (const d of sources.lifecycle.activeDeployments)
          if (d.reconcileKey === undefined) age.set('deploying', Math.max(age.get('deploying') ?? 0, (now - d.deployment.startedAt) / 1000));
        for (const [stage, seconds] of age) this.set({ stage }, seconds);
      },
    ),
    leader: gauge('haprx_leader', '1 while this replica is the leader and may deploy, else 0.'),
    ready: gauge('haprx_ready', '1 once the initial sync is done and a valid configuration has been rendered, else 0.'),
    generation: gauge('haprx_config_generation', 'Generation of the controller configuration running now (each valid change adds one).'),
    targetRestarts: counter('haprx_target_restarts_total', 'Times haprx restarted a target it runs itself (local mode: haproxy) after it stopped on its own, by endpoint.', ['endpoint']),
    lastSuccess: gauge('haprx_last_successful_deployment_timestamp_seconds', 'When a deployment last succeeded on every instance (Unix time).'),
  };
}

/**
 * The controller's metrics, in a registry of its own, counted from the event stream
 * alone: no stage knows they exist.
 */
export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly m: ReturnType<typeof createMetrics>;
  /** Endpoint label values in use. */
  private readonly endpoints = new Set<string>();
  /** Reconciliations whose propagation was observed (their first deployment that reached every instance). */
  private readonly propagated = new Set<string>();

  constructor(sources: MetricsSources, options: { defaultMetrics?: boolean } = {}) {
    this.m = createMetrics(this.registry, sources);
    for (const reason of CAUSES) this.m.reconciliations.inc({ reason }, 0);
    for (const stage of ['render', 'validate', 'deploy', 'canary']) this.m.reconcileErrors.inc({ stage }, 0);
    for (const result of ['passed', 'failed', 'abandoned']) this.m.canaries.inc({ result }, 0);
    for (const reason of DEPLOY_REASONS) {
      this.m.deployments.inc({ reason }, 0);
      this.m.deploymentErrors.inc({ reason }, 0);
    }
    for (const type of EVENT_TYPES) this.m.events.inc({ type }, 0);
    this.m.validations.inc(0);
    this.m.validationErrors.inc(0);
    this.m.validationUnavailable.inc(0);
    for (const what of RETRIED) this.m.retries.inc({ what }, 0);
    this.m.leader.set(1);
    this.m.ready.set(0);
    this.m.deploymentsInProgress.set(0);
    for (const result of ['planned', 'skipped']) this.m.fastPath.inc({ result }, 0);
    for (const path of ['runtime', 'reload']) this.m.propagation.zero({ path });
    // Declared so that dashboards can show every outcome at zero.
    for (const outcome of OUTCOMES) this.m.reconcileDuration.zero({ outcome });
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * The HAProxy instances there are now: the per-endpoint series of those that left
   * are removed, so that pods long gone do not stay in every scrape.
   */
  retainEndpoints(current: Iterable<string>): void {
    const keep = new Set(current);
    for (const endpoint of [...this.endpoints]) {
      if (keep.has(endpoint)) continue;
      this.endpoints.delete(endpoint);
      for (const result of ['ok', 'failed']) this.m.instanceDeploys.remove({ endpoint, result });
      for (const mode of ['reload', 'runtime', 'none']) this.m.instanceUpdates.remove({ endpoint, mode });
      this.m.runtimeOps.remove({ endpoint });
    }
  }

  /** Endpoints with series of their own. */
  get endpointCount(): number {
    return this.endpoints.size;
  }

  setLeader(leader: boolean): void {
    this.m.leader.set(leader ? 1 : 0);
  }

  setReady(ready: boolean): void {
    this.m.ready.set(ready ? 1 : 0);
  }

  /** A watch of `resource` ended; `silent` is a firing of the watchdog. */
  watchEnded(resource: string, reason: 'closed' | 'gone' | 'silent' | 'error'): void {
    this.m.watchesEnded.inc({ resource, reason });
  }

  /** Counts one event; `step` is what the lifecycle made of it. */
  record(event: ControllerEvent, step: Step): void {
    const m = this.m;
    m.events.inc({ type: event.type });
    for (const { entry, outcome, at } of step.ended) {
      m.reconcileDuration.observe({ outcome }, Math.max(0, at - entry.reconcile.at) / 1000);
      const stage = outcome === 'render_failed' ? 'render' : outcome === 'invalid' ? 'validate' : outcome === 'deploy_failed' ? 'deploy' : outcome === 'canary_failed' ? 'canary' : undefined;
      if (stage) m.reconcileErrors.inc({ stage });
    }
    const seconds = (ms: number) => Math.max(0, ms) / 1000;
    switch (event.type) {
      case 'ConfigAccepted':
        m.generation.set(event.generation);
        m.deploymentsInProgress.set(0);
        return;
      case 'ReconcileTriggered':
        m.reconciliations.inc({ reason: event.reconcile.cause.reason });
        return;
      case 'Rendered':
      case 'RenderUnchanged':
      case 'RenderFailed':
        m.renderDuration.observe({ result: event.type === 'Rendered' ? 'changed' : event.type === 'RenderUnchanged' ? 'unchanged' : 'failed' }, seconds(event.durationMs));
        if (event.threadHeap) {
          m.renderThreadHeap.set({ figure: 'used' }, event.threadHeap.usedBytes);
          m.renderThreadHeap.set({ figure: 'total' }, event.threadHeap.totalBytes);
          m.renderThreadHeap.set({ figure: 'limit' }, event.threadHeap.limitBytes);
        }
        return;
      case 'Validated':
      case 'ValidationFailed': {
        const valid = event.type === 'Validated';
        m.validations.inc();
        if (!valid) m.validationErrors.inc();
        m.validationDuration.observe({ result: valid ? 'valid' : 'invalid' }, seconds(event.durationMs));
        return;
      }
      case 'ValidationUnavailable':
        m.validationUnavailable.inc();
        m.retries.inc({ what: 'validation' });
        m.validationDuration.observe({ result: 'unavailable' }, seconds(event.durationMs));
        return;
      case 'DeploymentStarted': {
        const { reason, queuedAt, startedAt } = event.deployment;
        m.deploymentWait.observe({ reason }, seconds(startedAt - queuedAt));
        m.deploymentsInProgress.set(1);
        if (reason === 'retry') m.retries.inc({ what: 'instance' }, event.deployment.endpoints.length);
        return;
      }
      case 'LeadershipLost':
        m.deploymentsInProgress.set(0);
        return;
      case 'StageFailed':
        m.stageFailures.inc({ stage: event.stage });
        m.retries.inc({ what: 'graph' });
        m.deploymentsInProgress.set(0);
        return;
      case 'InstanceDeployed':
      case 'InstanceDeployFailed': {
        const { result } = event;
        const endpoint = result.endpoint.id;
        this.endpoints.add(endpoint);
        m.instanceDeploys.inc({ endpoint, result: result.ok ? 'ok' : 'failed' });
        m.instanceDuration.observe({ result: result.ok ? 'ok' : 'failed' }, seconds(result.durationMs));
        if (result.ok) m.instanceUpdates.inc({ endpoint, mode: result.reloaded ? 'reload' : result.runtimeOps > 0 ? 'runtime' : 'none' });
        if (result.runtimeOps > 0) m.runtimeOps.inc({ endpoint }, result.runtimeOps);
        return;
      }
      case 'DeploymentCompleted': {
        const { reason, startedAt, reconcile } = event.deployment;
        m.deployments.inc({ reason });
        m.deploymentDuration.observe({ reason }, seconds(event.durationMs));
        m.deploymentsInProgress.set(0);
        if (event.results.some((r) => !r.ok)) m.deploymentErrors.inc({ reason });
        // The canary alone, or the canary put back, is not the fleet running a configuration.
        else if (reason !== 'canary' && reason !== 'rollback') {
          m.lastSuccess.set((startedAt + event.durationMs) / 1000);
          // The first deployment that took a reconciliation's changes everywhere (the fast path, or the full one).
          const key = `${step.generation}/${reconcile.seq}`;
          if (reconcile.firstChangeAt !== undefined && event.results.length > 0 && !this.propagated.has(key)) {
            this.propagated.add(key);
            if (this.propagated.size > 256) this.propagated.delete(this.propagated.values().next().value!);
            m.propagation.observe({ path: event.results.some((r) => r.reloaded) ? 'reload' : 'runtime' }, seconds(startedAt + event.durationMs - reconcile.firstChangeAt));
          }
        }
        return;
      }
      case 'FastPathPlanned':
      case 'FastPathSkipped':
        m.fastPath.inc({ result: event.type === 'FastPathPlanned' ? 'planned' : 'skipped' });
        return;
      case 'CanaryPassed':
      case 'CanaryFailed':
      case 'CanaryAbandoned':
        m.canaries.inc({ result: event.type === 'CanaryPassed' ? 'passed' : event.type === 'CanaryFailed' ? 'failed' : 'abandoned' });
        return;
      case 'TargetRestarted':
        m.targetRestarts.inc({ endpoint: event.endpoint.id });
        return;
      default:
        return;
    }
  }
}
