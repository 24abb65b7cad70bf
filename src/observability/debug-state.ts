import type { ControllerConfig } from '../config/controller-config.ts';
import type { ControllerEvent, InstanceResult, RenderWarning } from '../events.ts';
import type { ConfigDiff } from '../haproxy/config-diff.ts';
import { StatusBook } from '../status/book.ts';
import { objectName } from '../status/print.ts';
import { AUX_KINDS, type RenderedConfig, auxPath } from '../templating/rendered.ts';
import type { LogLine } from './event-log.ts';
import { parseFieldPath, selectPath } from './field-path.ts';
import type { ReconcileLifecycle } from './lifecycle.ts';
import { redactFields, redactHaproxyConfig, redactPem } from './redact.ts';

export interface RecentEvent {
  at: string;
  type: ControllerEvent['type'];
  level: LogLine['level'];
  msg: string;
  fields: Record<string, unknown>;
  traceId?: string;
}

interface RenderedState {
  reconcile: number;
  generation: number;
  at: number;
  config: RenderedConfig;
  /** unavailable: the check could not run (it is retried); it says nothing about the configuration. */
  status: 'validating' | 'valid' | 'invalid' | 'unavailable';
  problems?: { file: string; line?: number; message: string }[];
  unavailable?: string;
}

interface DeploymentDiff {
  deployment: number;
  reason: string;
  at: number;
  from?: string;
  to: string;
  files: ConfigDiff['files'];
  truncated: boolean;
  text: string;
}

interface LastDeployment {
  id: number;
  reason: string;
  reconcile: number;
  hash: string;
  startedAt: number;
  durationMs: number;
  results: InstanceResult[];
}

export interface Health {
  ok: boolean;
  /** What has been in one stage longer than the bound. */
  stalled: { what: string; stage: string; forMs: number }[];
  /** Targets haprx runs itself that are down now (local mode's haproxy), and why. */
  down: { endpoint: string; cause: string; forMs: number }[];
}

export interface Readiness {
  ready: boolean;
  synced: boolean;
  validConfig: boolean;
  /** No target haprx runs itself is down. */
  targetsUp: boolean;
  /** Why the newest configuration has no verdict yet, when its check could not run. */
  validationUnavailable?: string;
}

export interface DebugStateOptions {
  lifecycle: ReconcileLifecycle;
  resourceCounts(): ReadonlyMap<string, number>;
  now(): number;
  /** A stage open longer than this makes /healthz fail. */
  stallAfterMs: number;
  /** How many events /debug/vars keeps. */
  recentEvents: number;
  /** How many deployment diffs /debug/vars keeps; default 10. */
  recentDiffs?: number;
  scrub(text: string): string;
}

/**
 * What /healthz, /readyz and /debug/vars show, kept from the event stream. Nothing
 * here holds an object from the cluster; the rendered configuration is redacted when
 * it is shown (private keys, credentials in haproxy.cfg, learned Secret values).
 */
export class DebugState {
  private readonly options: DebugStateOptions;
  private readonly recent: RecentEvent[] = [];
  private rendered: RenderedState | undefined;
  private lastDeployment: LastDeployment | undefined;
  private readonly diffs: DeploymentDiff[] = [];
  private controllerConfig: ControllerConfig | undefined;
  private generation = 0;
  private synced = false;
  private validConfig = false;
  private leader = true;
  private readonly down = new Map<string, { cause: string; since: number }>();
  private readonly startedAt: number;
  /** What the templates declared about each object, as it would be written now. */
  private readonly statuses = new StatusBook({ reportChanges: false });
  private warnings: readonly RenderWarning[] = [];

  constructor(options: DebugStateOptions) {
    this.options = options;
    this.startedAt = options.now();
  }

  setControllerConfig(config: ControllerConfig): void {
    this.controllerConfig = config;
  }

  setLeader(leader: boolean): void {
    this.leader = leader;
  }

  record(event: ControllerEvent, line: LogLine, now: number, traceId?: string): void {
    this.recent.push({ at: new Date(now).toISOString(), type: event.type, level: line.level, msg: line.msg, fields: line.fields, ...(traceId && { traceId }) });
    if (this.recent.length > this.options.recentEvents) this.recent.splice(0, this.recent.length - this.options.recentEvents);
    this.statuses.apply(event);
    if (event.type === 'Rendered') this.warnings = event.warnings ?? [];
    else if (event.type === 'RenderUnchanged' && event.warnings !== undefined) this.warnings = event.warnings;
    switch (event.type) {
      case 'ConfigAccepted':
        this.generation = event.generation;
        return;
      case 'ReconcileTriggered':
        // The trigger opens only when every watched set has listed: the initial sync is done.
        this.synced = true;
        return;
      case 'Rendered':
        this.rendered = { reconcile: event.reconcile.seq, generation: this.generation, at: now, config: event.config, status: 'validating' };
        return;
      case 'Validated':
      case 'ValidationFailed':
        if (this.rendered?.config.hash !== event.config.hash) return;
        this.rendered.status = event.type === 'Validated' ? 'valid' : 'invalid';
        delete this.rendered.unavailable;
        if (event.type === 'Validated') this.validConfig = true;
        else this.rendered.problems = event.problems.map((p) => ({ file: p.file, ...(p.line !== undefined && { line: p.line }), message: p.message }));
        return;
      case 'TargetDown':
        this.down.set(event.endpoint.id, { cause: event.cause, since: this.down.get(event.endpoint.id)?.since ?? now });
        return;
      case 'TargetRestarted':
        this.down.delete(event.endpoint.id);
        return;
      case 'ValidationUnavailable':
        if (this.rendered?.config.hash !== event.config.hash) return;
        this.rendered.status = 'unavailable';
        this.rendered.unavailable = event.message;
        return;
      case 'DeploymentCompleted': {
        const d = event.deployment;
        this.lastDeployment = { id: d.id, reason: d.reason, reconcile: d.reconcile.seq, hash: d.config.hash, startedAt: d.startedAt, durationMs: event.durationMs, results: [...event.results] };
        if (event.diff) {
          const { from, to, files, truncated, text } = event.diff;
          this.diffs.push({ deployment: d.id, reason: d.reason, at: now, ...(from !== undefined && { from }), to, files, truncated, text });
          const keep = this.options.recentDiffs ?? 10;
          if (this.diffs.length > keep) this.diffs.splice(0, this.diffs.length - keep);
        }
        return;
      }
      default:
        return;
    }
  }

  readiness(): Readiness {
    const targetsUp = this.down.size === 0;
    const unavailable = this.rendered?.status === 'unavailable' ? this.rendered.unavailable : undefined;
    return {
      ready: this.synced && this.validConfig && targetsUp,
      synced: this.synced,
      validConfig: this.validConfig,
      targetsUp,
      ...(unavailable !== undefined && { validationUnavailable: unavailable }),
    };
  }

  health(now = this.options.now()): Health {
    const bound = this.options.stallAfterMs;
    const stalled: Health['stalled'] = [];
    for (const r of this.options.lifecycle.reconciles) {
      // Waiting in the scheduler is not a stall: it waits for instances, leadership or the interval;
      // nor is a canary being checked, for as long as the settings say.
      if (r.stage !== 'queued' && r.stage !== 'canary' && now - r.stageSince > bound) stalled.push({ what: `reconcile #${r.reconcile.seq}`, stage: r.stage, forMs: now - r.stageSince });
    }
    for (const d of this.options.lifecycle.activeDeployments) {
      if (d.reconcileKey === undefined && now - d.deployment.startedAt > bound)
        stalled.push({ what: `deployment #${d.deployment.id}`, stage: 'deploying', forMs: now - d.deployment.startedAt });
    }
    const down = [...this.down].map(([endpoint, d]) => ({ endpoint, cause: d.cause, forMs: now - d.since }));
    return { ok: stalled.length === 0 && down.length === 0, stalled, down };
  }

  /** Everything /debug/vars shows, redacted. */
  snapshot(): Record<string, unknown> {
    const now = this.options.now();
    const { scrub } = this.options;
    const config = this.controllerConfig;
    const lifecycle = this.options.lifecycle;
    const snapshot = {
      now: new Date(now).toISOString(),
      uptimeSeconds: Math.round((now - this.startedAt) / 1000),
      leader: this.leader,
      readiness: this.readiness(),
      health: this.health(now),
      controller: {
        generation: this.generation,
        config: config && {
          watch: config.watch,
          settings: config.settings,
          values: redactFields(config.values),
          templates: redactFields(config.templates),
        },
      },
      resources: Object.fromEntries(this.options.resourceCounts()),
      rendered: this.rendered && {
        reconcile: this.rendered.reconcile,
        generation: this.rendered.generation,
        at: new Date(this.rendered.at).toISOString(),
        hash: this.rendered.config.hash,
        status: this.rendered.status,
        ...(this.rendered.problems && { problems: this.rendered.problems }),
        ...(this.rendered.unavailable !== undefined && { unavailable: this.rendered.unavailable }),
        files: renderedFiles(this.rendered.config),
      },
      scheduling: {
        settings: config?.settings,
        reconciles: lifecycle.reconciles.map((r) => ({
          seq: r.reconcile.seq,
          reason: r.reconcile.cause.reason,
          changes: r.reconcile.cause.changes.length,
          stage: r.stage,
          sinceMs: now - r.stageSince,
          triggeredAt: new Date(r.reconcile.at).toISOString(),
        })),
        deployments: lifecycle.activeDeployments.map((d) => ({
          id: d.deployment.id,
          reason: d.deployment.reason,
          reconcile: d.deployment.reconcile.seq,
          waitedMs: d.deployment.startedAt - d.deployment.queuedAt,
          runningMs: now - d.deployment.startedAt,
          endpoints: d.deployment.endpoints.map((e) => e.id),
          pending: [...d.pending],
        })),
        lastDeployment: this.lastDeployment && {
          ...this.lastDeployment,
          startedAt: new Date(this.lastDeployment.startedAt).toISOString(),
          results: this.lastDeployment.results.map((r) => ({
            endpoint: r.endpoint.id,
            ok: r.ok,
            reloaded: r.reloaded,
            runtimeOps: r.runtimeOps,
            durationMs: r.durationMs,
            ...(r.error !== undefined && { error: r.error.split('\n', 1)[0] }),
          })),
        },
        // What the last deployments changed, oldest first (redacted, each bounded).
        diffs: this.diffs.map((d) => ({ ...d, at: new Date(d.at).toISOString() })),
        ...(this.lastDeployment && config && config.settings.driftIntervalMs > 0 && {
          driftRedeployDueAt: new Date(this.lastDeployment.startedAt + this.lastDeployment.durationMs + config.settings.driftIntervalMs).toISOString(),
        }),
      },
      // What the render made of each object: its status as haprx would write it (Programmed once
      // deployed), and the warnings of the last render (objects skipped or partly applied).
      objects: {
        status: this.statuses.all().map((s) => ({ object: objectName(s.ref), ...s })),
        warnings: this.warnings.map((w) => ({ ...w })),
      },
      events: [...this.recent],
    };
    // Last line of defence: any value of a watched Secret, wherever it ended up.
    return JSON.parse(JSON.stringify(snapshot, (_k, v: unknown) => (typeof v === 'string' ? scrub(v) : v))) as Record<string, unknown>;
  }

  /**
   * The snapshot, or the part a field path selects (always a list of matches).
   * The path language walks and nothing else (field-path.ts): a request cannot
   * make the controller evaluate anything.
   */
  select(field: string | null): { ok: true; value: unknown } | { ok: false; message: string } {
    if (field === null || field === '') return { ok: true, value: this.snapshot() };
    const path = parseFieldPath(field);
    if (!path.ok) return { ok: false, message: `field: ${path.message}` };
    return { ok: true, value: selectPath(this.snapshot(), path.steps) };
  }
}

/** Rendered files by the path haproxy.cfg uses for them: haproxy.cfg, maps/…, general/…, ssl/…. */
function renderedFiles(config: RenderedConfig): Record<string, string> {
  const files: Record<string, string> = { 'haproxy.cfg': redactHaproxyConfig(config.main) };
  for (const kind of AUX_KINDS) for (const [name, content] of Object.entries(config[kind])) files[auxPath(kind, name)] = redactPem(content);
  return files;
}
