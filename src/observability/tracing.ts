import { type Attributes, type Context, type Link, type Span, type SpanContext, type Tracer, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { createRequire } from 'node:module';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type * as TraceSdk from '@opentelemetry/sdk-trace-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { ChangeRef, ControllerEvent, Reconcile } from '../events.ts';
import { diffSummary } from '../haproxy/config-diff.ts';
import type { OpenDeployment, ReconcileOutcome, Step } from './lifecycle.ts';
import { safeAddress } from './redact.ts';

/** At most this many triggering changes are listed on a reconcile span. */
const MAX_CHANGES = 64;
const FAILED: ReadonlySet<ReconcileOutcome> = new Set(['render_failed', 'invalid', 'deploy_failed', 'canary_failed']);

interface OpenRoot {
  span: Span;
  ctx: Context;
  error?: string;
}

interface OpenDeploy {
  span: Span;
  ctx: Context;
  /** Where the deploy span hangs: the reconcile, or the redeploy's own root. */
  parent: Context;
  /** The root of a redeploy's own trace; a reconcile's deploy has the reconcile as root. */
  ownRoot?: Span;
}

/**
 * Builds one trace per reconciliation from the controller's events:
 *
 *   reconcile ─┬─ fast_path            (taken or not; its deployment is a deploy here too)
 *              ├─ render
 *              ├─ validate
 *              ├─ schedule.wait        (queuedAt → startedAt)
 *              ├─ deploy ── deploy.instance (one per endpoint)
 *              └─ propagation          (first change seen → live on every instance, once)
 *
 * Every span gets explicit start and end times from the events, and the context of
 * each reconciliation lives in a map keyed by it: implicit async context would put
 * spans under the wrong parent after debounce and throttle. A redeploy of an already
 * deployed configuration (drift, a joining instance, a new leader) is a trace of its
 * own, `redeploy`, linked to the reconciliation that produced the configuration.
 */
export class EventTracer {
  private readonly tracer: Tracer;
  private readonly scrub: (text: string) => string;
  private readonly roots = new Map<string, OpenRoot>();
  private readonly deploys = new Map<string, OpenDeploy>();
  /** When each reconciliation's canary began to be checked. */
  private readonly canaryFrom = new Map<string, number>();
  /** Span contexts of recent reconciliations, for the links of later redeploys. */
  private readonly finished = new Map<string, SpanContext>();
  /** Reconciliations whose propagation span was made. */
  private readonly propagated = new Set<string>();

  constructor(tracer: Tracer, scrub: (text: string) => string = (t) => t) {
    this.tracer = tracer;
    this.scrub = scrub;
  }

  /** The trace a step's event belongs to, for log correlation. */
  traceId(step: Step): string | undefined {
    const fromRoot = step.entry && this.roots.get(step.entry.key);
    const fromDeploy = step.deployment && this.deploys.get(step.deployment.key);
    const ended = step.entry && this.finished.get(step.entry.key);
    return (fromRoot ?? fromDeploy)?.span.spanContext().traceId ?? ended?.traceId;
  }

  handle(event: ControllerEvent, step: Step, now: number): void {
    const root = step.entry && this.roots.get(step.entry.key);
    switch (event.type) {
      case 'ReconcileTriggered': {
        if (!step.entry) break;
        const span = this.tracer.startSpan(
          'reconcile',
          // From the first change it takes, when that was seen before the trigger (a batch):
          // its propagation child starts there and must lie inside it.
          { root: true, startTime: time(Math.min(event.reconcile.at, event.reconcile.firstChangeAt ?? Infinity)), attributes: reconcileAttributes(event.reconcile, step.generation) },
          ROOT_CONTEXT,
        );
        this.roots.set(step.entry.key, { span, ctx: trace.setSpan(ROOT_CONTEXT, span) });
        break;
      }
      case 'Rendered':
      case 'RenderUnchanged':
      case 'RenderFailed': {
        if (!root) break;
        const result = event.type === 'Rendered' ? 'changed' : event.type === 'RenderUnchanged' ? 'unchanged' : 'failed';
        const error =
          event.type === 'RenderFailed' ? this.scrub(`${event.error.template}${event.error.line !== undefined ? `:${event.error.line}` : ''}: ${firstLine(event.error.message)}`) : undefined;
        if (error) root.error = `render failed at ${error}`;
        this.child(root.ctx, 'render', now - event.durationMs, now, {
          'haprx.render.result': result,
          ...(event.type === 'Rendered' && { 'haprx.config.hash': event.config.hash }),
          ...(event.type === 'RenderUnchanged' && { 'haprx.config.hash': event.hash }),
        }, error);
        break;
      }
      case 'Validated':
      case 'ValidationFailed': {
        if (!root) break;
        let error: string | undefined;
        if (event.type === 'ValidationFailed') {
          const first = event.problems[0];
          error = this.scrub(first ? `${first.file}${first.line !== undefined ? `:${first.line}` : ''}: ${firstLine(first.message)}` : 'refused by haproxy');
          root.error = `refused by haproxy: ${error}`;
        }
        this.child(root.ctx, 'validate', now - event.durationMs, now, {
          'haprx.config.hash': event.config.hash,
          'haprx.validate.problems': event.type === 'ValidationFailed' ? event.problems.length : 0,
        }, error);
        break;
      }
      case 'ValidationUnavailable': {
        if (!root) break;
        this.child(root.ctx, 'validate', now - event.durationMs, now, {
          'haprx.config.hash': event.config.hash,
          'haprx.validate.attempt': event.attempt,
          'haprx.validate.retry_in_ms': event.retryInMs,
        }, this.scrub(`could not run: ${firstLine(event.message)}`));
        break;
      }
      case 'FastPathPlanned':
      case 'FastPathSkipped': {
        if (!root) break;
        this.child(root.ctx, 'fast_path', now - event.durationMs, now, {
          'haprx.fast_path.taken': event.type === 'FastPathPlanned',
          ...(event.type === 'FastPathPlanned' ? { 'haprx.fast_path.backends': event.backends.length, 'haprx.fast_path.runtime_ops': event.ops.length } : { 'haprx.fast_path.reason': this.scrub(firstLine(event.reason)) }),
        });
        break;
      }
      case 'CanaryPassed':
      case 'CanaryFailed': {
        // The time the canary was watched, as a span of the reconciliation.
        if (!root) break;
        const failed = event.type === 'CanaryFailed' ? this.scrub(event.problems.map(firstLine).join('; ')) : undefined;
        const start = event.type === 'CanaryPassed' ? now - event.checkedMs : (this.canaryFrom.get(step.entry!.key) ?? now);
        this.child(root.ctx, 'canary', start, now, { 'haprx.endpoint.id': event.endpoint.id, ...(event.type === 'CanaryPassed' && { 'haprx.canary.checks': event.checks }) }, failed);
        if (failed) root.error = `canary ${event.endpoint.id} failed: ${failed}`;
        this.canaryFrom.delete(step.entry!.key);
        break;
      }
      case 'DeploymentStarted': {
        const open = step.deployment;
        if (!open) break;
        const { deployment } = open;
        const attributes = deploymentAttributes(open);
        let parent = root?.ctx;
        let ownRoot: Span | undefined;
        if (!parent) {
          const origin = this.finished.get(`${open.generation}/${deployment.reconcile.seq}`);
          const links: Link[] = origin ? [{ context: origin, attributes: { 'haprx.link': 'reconcile' } }] : [];
          ownRoot = this.tracer.startSpan(
            'redeploy',
            { root: true, startTime: time(Math.min(deployment.queuedAt, deployment.startedAt)), links, attributes: { ...attributes, 'haprx.reconcile.seq': deployment.reconcile.seq } },
            ROOT_CONTEXT,
          );
          parent = trace.setSpan(ROOT_CONTEXT, ownRoot);
        }
        this.child(parent, 'schedule.wait', deployment.queuedAt, deployment.startedAt, { 'haprx.deployment.reason': deployment.reason });
        const span = this.tracer.startSpan('deploy', { startTime: time(deployment.startedAt), attributes }, parent);
        this.deploys.set(open.key, { span, ctx: trace.setSpan(parent, span), parent, ...(ownRoot && { ownRoot }) });
        break;
      }
      case 'InstanceDeployed':
      case 'InstanceDeployFailed': {
        const deploy = step.deployment && this.deploys.get(step.deployment.key);
        if (!deploy) break;
        const { result } = event;
        const error = result.ok ? undefined : this.scrub(firstLine(result.error ?? 'failed'));
        this.child(
          deploy.ctx,
          'deploy.instance',
          now - result.durationMs,
          now,
          {
            'haprx.endpoint.id': result.endpoint.id,
            'haprx.endpoint.address': safeAddress(result.endpoint.address),
            'haprx.instance.reloaded': result.reloaded,
            'haprx.instance.runtime_ops': result.runtimeOps,
          },
          error,
          SpanKind.CLIENT,
        );
        if (error && root) root.error = `deployment to ${result.endpoint.id} failed: ${error}`;
        break;
      }
      case 'DeploymentCompleted': {
        const open = step.deployment;
        const deploy = open && this.deploys.get(open.key);
        if (!open || !deploy) break;
        if (open.deployment.reason === 'canary' && step.entry) this.canaryFrom.set(step.entry.key, now);
        const failed = event.results.filter((r) => !r.ok);
        const end = open.deployment.startedAt + event.durationMs;
        deploy.span.setAttributes({ 'haprx.deployment.ok': event.results.length - failed.length, 'haprx.deployment.failed': failed.length });
        if (event.diff) {
          // The files as attributes, the text (redacted, bounded) as an event of the span.
          deploy.span.setAttributes({ 'haprx.diff.files': event.diff.files.length, 'haprx.diff.summary': this.scrub(diffSummary(event.diff)), 'haprx.diff.truncated': event.diff.truncated });
          if (event.diff.text) deploy.span.addEvent('diff', { 'haprx.diff.text': this.scrub(event.diff.text) }, time(end));
        }
        if (failed.length > 0) deploy.span.setStatus({ code: SpanStatusCode.ERROR, message: `${failed.length} of ${event.results.length} instance(s) failed` });
        deploy.span.end(time(end));
        // The first deployment that took the reconciliation's changes everywhere: how long they took to go live.
        const { reconcile, reason } = open.deployment;
        const key = `${open.generation}/${reconcile.seq}`;
        // A canary, or a canary put back, is not everywhere.
        const everywhere = reason !== 'canary' && reason !== 'rollback';
        if (everywhere && failed.length === 0 && event.results.length > 0 && reconcile.firstChangeAt !== undefined && !this.propagated.has(key)) {
          this.propagated.add(key);
          if (this.propagated.size > 256) this.propagated.delete(this.propagated.values().next().value!);
          this.child(deploy.parent, 'propagation', reconcile.firstChangeAt, end, { 'haprx.propagation.path': event.results.some((r) => r.reloaded) ? 'reload' : 'runtime' });
        }
        if (deploy.ownRoot) {
          if (failed.length > 0) deploy.ownRoot.setStatus({ code: SpanStatusCode.ERROR, message: `${failed.length} of ${event.results.length} instance(s) failed` });
          deploy.ownRoot.end(time(end));
        }
        this.deploys.delete(open.key);
        break;
      }
      default:
        break;
    }
    for (const open of step.deploymentsEnded) this.cancelDeploy(open, now);
    for (const { entry, outcome, at } of step.ended) {
      this.canaryFrom.delete(entry.key);
      const ended = this.roots.get(entry.key);
      if (!ended) continue;
      ended.span.setAttribute('haprx.reconcile.outcome', outcome);
      if (FAILED.has(outcome)) ended.span.setStatus({ code: SpanStatusCode.ERROR, message: ended.error ?? outcome });
      ended.span.end(time(Math.max(at, entry.reconcile.at)));
      this.roots.delete(entry.key);
      this.finished.set(entry.key, ended.span.spanContext());
      if (this.finished.size > 64) this.finished.delete(this.finished.keys().next().value!);
    }
  }

  /** Ends what is still open, e.g. when the controller stops. */
  endAll(now: number): void {
    for (const [key, deploy] of this.deploys) {
      deploy.span.setStatus({ code: SpanStatusCode.ERROR, message: 'cancelled: the controller stopped' });
      deploy.span.end(time(now));
      deploy.ownRoot?.end(time(now));
      this.deploys.delete(key);
    }
    for (const [key, root] of this.roots) {
      root.span.setAttribute('haprx.reconcile.outcome', 'cancelled');
      root.span.end(time(now));
      this.roots.delete(key);
    }
  }

  private cancelDeploy(open: OpenDeployment, now: number): void {
    const deploy = this.deploys.get(open.key);
    if (!deploy) return;
    deploy.span.setStatus({ code: SpanStatusCode.ERROR, message: 'cancelled: the graph was rebuilt, or this replica lost the lead' });
    deploy.span.end(time(now));
    deploy.ownRoot?.end(time(now));
    this.deploys.delete(open.key);
  }

  private child(parent: Context, name: string, start: number, end: number, attributes: Attributes, error?: string, kind: SpanKind = SpanKind.INTERNAL): void {
    const span = this.tracer.startSpan(name, { kind, startTime: time(Math.min(start, end)), attributes }, parent);
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end(time(end));
  }
}

/**
 * Event times are milliseconds of the scheduler's clock (Date.now in production). As
 * Dates they are taken as wall-clock time; a bare number below performance.now()
 * would be read by the SDK as a performance timestamp.
 */
function time(ms: number): Date {
  return new Date(ms);
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

/** The triggering changes as parallel arrays, one entry per change, oldest first. */
export function reconcileAttributes(reconcile: Reconcile, generation: number): Attributes {
  const changes = reconcile.cause.changes.slice(0, MAX_CHANGES);
  const column = (pick: (c: ChangeRef) => string | undefined) => changes.map((c) => pick(c) ?? '');
  return {
    'haprx.reconcile.seq': reconcile.seq,
    'haprx.reconcile.reason': reconcile.cause.reason,
    'haprx.config.generation': generation,
    'haprx.changes.count': reconcile.cause.changes.length,
    'haprx.changes.type': column((c) => c.type),
    'haprx.changes.resource': column((c) => c.resource),
    'haprx.changes.kind': column((c) => c.kind),
    'haprx.changes.namespace': column((c) => c.namespace),
    'haprx.changes.name': column((c) => c.name),
    'haprx.changes.resource_version': column((c) => c.resourceVersion),
  };
}

function deploymentAttributes(open: OpenDeployment): Attributes {
  const { deployment } = open;
  return {
    'haprx.deployment.id': deployment.id,
    'haprx.deployment.reason': deployment.reason,
    'haprx.deployment.endpoints': deployment.endpoints.length,
    'haprx.config.hash': deployment.config.hash,
  };
}

export interface Tracing {
  tracer: Tracer;
  /** Where spans go. */
  url: string;
  /** Sends what is buffered. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export type TracingSetup = { enabled: false; why: string } | { enabled: true; tracing: Tracing; notes: string[] };

const truthy = (v: string | undefined) => v !== undefined && ['true', '1', 'yes'].includes(v.trim().toLowerCase());

/**
 * Tracing from the standard OTEL_* variables, off unless an OTLP endpoint is set:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT
 * (+ /v1/traces). OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn it off;
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the resource; the SDK itself
 * reads OTEL_TRACES_SAMPLER*, OTEL_BSP_* and OTEL_EXPORTER_OTLP_*HEADERS/TIMEOUT.
 * Spans go out as OTLP/HTTP with JSON bodies.
 */
export function tracingFromEnv(env: NodeJS.ProcessEnv = process.env, service: { name?: string; version?: string } = {}, processors: SpanProcessor[] = []): TracingSetup {
  if (truthy(env.OTEL_SDK_DISABLED)) return { enabled: false, why: 'OTEL_SDK_DISABLED is set' };
  const exporters = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',').map((s) => s.trim());
  if (exporters.includes('none')) return { enabled: false, why: 'OTEL_TRACES_EXPORTER is none' };
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const general = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = specific || (general ? `${general.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!url) return { enabled: false, why: 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' };
  const notes: string[] = [];
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol !== 'http/json') notes.push(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported; spans go out as http/json`);
  const { resourceFromAttributes, BatchSpanProcessor, NodeTracerProvider, OTLPTraceExporter } = loadSdk();
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: service.name ?? 'haprx',
    ...(service.version !== undefined && { [ATTR_SERVICE_VERSION]: service.version }),
    ...resourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES),
    ...(env.OTEL_SERVICE_NAME?.trim() && { [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME.trim() }),
  });
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url })), ...processors],
  });
  return {
    enabled: true,
    notes,
    tracing: {
      tracer: provider.getTracer('haprx', service.version),
      url,
      flush: () => provider.forceFlush(),
      shutdown: () => provider.shutdown(),
    },
  };
}

/**
 * The SDK and the exporter, loaded when tracing is on: loading them takes about a
 * tenth of a second, which a start with tracing off (the default) need not wait for.
 */
function loadSdk(): Pick<typeof Resources, 'resourceFromAttributes'> & Pick<typeof TraceSdk, 'BatchSpanProcessor' | 'NodeTracerProvider'> & Pick<typeof OtlpHttp, 'OTLPTraceExporter'> {
  const load = createRequire(import.meta.url);
  const { resourceFromAttributes } = load('@opentelemetry/resources') as typeof Resources;
  const { BatchSpanProcessor, NodeTracerProvider } = load('@opentelemetry/sdk-trace-node') as typeof TraceSdk;
  const { OTLPTraceExporter } = load('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  return { resourceFromAttributes, BatchSpanProcessor, NodeTracerProvider, OTLPTraceExporter };
}

/** OTEL_RESOURCE_ATTRIBUTES: `key=value` pairs separated by commas, values percent-encoded. */
export function resourceAttributes(text: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    try {
      attributes[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      // A malformed pair is skipped, as the SDK does.
    }
  }
  return attributes;
}
