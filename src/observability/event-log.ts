import type { ControllerEvent, Deployment, InstanceResult, ObjectRef, RenderWarning } from '../events.ts';
import { diffSummary } from '../haproxy/config-diff.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogLine {
  level: LogLevel;
  msg: string;
  /** Structured fields for JSON logs; never object contents or credentials. */
  fields: Record<string, unknown>;
}

const MAX_PROBLEMS = 3;

/**
 * One short line per lifecycle event: what changed, what was deployed where, how
 * long it took, and why something failed. Pure, so it is tested on its own.
 */
export function logLine(event: ControllerEvent): LogLine {
  switch (event.type) {
    case 'ConfigAccepted':
      return { level: 'info', msg: `controller configuration loaded (generation ${event.generation})`, fields: { generation: event.generation } };
    case 'ConfigRejected':
      return { level: 'warn', msg: `controller configuration rejected, the previous one keeps running: ${event.path}: ${event.message}`, fields: { path: event.path } };
    case 'SourceProblem':
      return {
        level: 'warn',
        msg: `${event.source}${event.line !== undefined ? `:${event.line}` : ''}: ${firstLine(event.message)}`,
        fields: { source: event.source, ...(event.resource !== undefined && { resource: event.resource }) },
      };
    case 'ReconcileTriggered': {
      const { seq, cause } = event.reconcile;
      const what = cause.changes.slice(0, 3).map((c) => `${c.type} ${c.kind ?? c.resource} ${c.namespace ? `${c.namespace}/` : ''}${c.name ?? ''}`.trim());
      const more = cause.changes.length > 3 ? ` and ${cause.changes.length - 3} more` : '';
      return {
        level: 'info',
        msg: `reconcile #${seq} (${cause.reason}${what.length ? `: ${what.join(', ')}${more}` : ''})`,
        fields: { reconcile: seq, reason: cause.reason, changes: cause.changes.length },
      };
    }
    case 'Rendered': {
      const fields = { reconcile: event.reconcile.seq, hash: event.config.hash.slice(0, 12), durationMs: event.durationMs };
      const warnings = event.warnings ?? [];
      if (warnings.length === 0) return { level: 'debug', msg: `rendered in ${event.durationMs} ms`, fields };
      return { level: 'warn', msg: `rendered in ${event.durationMs} ms, skipping what is invalid: ${shownWarnings(warnings)}`, fields: { ...fields, warnings: warnings.length } };
    }
    case 'RenderUnchanged': {
      const fields = { reconcile: event.reconcile.seq, durationMs: event.durationMs };
      // Warnings that changed without changing the configuration (an object skipped, or fixed) are news too.
      if (event.warnings === undefined) return { level: 'debug', msg: 'rendered, nothing changed', fields };
      if (event.warnings.length === 0) return { level: 'info', msg: 'rendered, nothing changed; no warnings any more', fields: { ...fields, warnings: 0 } };
      return { level: 'warn', msg: `rendered, nothing changed, skipping what is invalid: ${shownWarnings(event.warnings)}`, fields: { ...fields, warnings: event.warnings.length } };
    }
    case 'RenderFailed': {
      const { template, line, message } = event.error;
      return { level: 'error', msg: `render failed at ${template}${line !== undefined ? `:${line}` : ''}: ${firstLine(message)}`, fields: { reconcile: event.reconcile.seq, template } };
    }
    case 'Validated':
      return { level: 'debug', msg: `valid (checked in ${event.durationMs} ms)`, fields: { reconcile: event.reconcile.seq, hash: event.config.hash.slice(0, 12), durationMs: event.durationMs } };
    case 'ValidationFailed': {
      const shown = event.problems.slice(0, MAX_PROBLEMS).map((p) => `${p.file}${p.line !== undefined ? `:${p.line}` : ''}: ${firstLine(p.message)}`);
      const more = event.problems.length > MAX_PROBLEMS ? ` (and ${event.problems.length - MAX_PROBLEMS} more)` : '';
      return {
        level: 'error',
        msg: `configuration refused by haproxy, the last good one stays live: ${shown.join('; ')}${more}`,
        fields: { reconcile: event.reconcile.seq, problems: event.problems.length },
      };
    }
    case 'ValidationUnavailable':
      return {
        level: 'warn',
        msg: `validation could not run (attempt ${event.attempt}): ${firstLine(event.message)}; checking again in ${event.retryInMs} ms, the last good configuration stays live`,
        fields: { reconcile: event.reconcile.seq, attempt: event.attempt, retryInMs: event.retryInMs, durationMs: event.durationMs },
      };
    case 'FastPathPlanned': {
      const shown = event.backends.slice(0, MAX_PROBLEMS).join(', ') + (event.backends.length > MAX_PROBLEMS ? ` and ${event.backends.length - MAX_PROBLEMS} more` : '');
      return {
        level: 'info',
        msg: `fast path: ${event.ops.length} runtime change(s) to ${[...(event.backends.length > 0 ? [`the servers of ${shown}`] : []), ...(event.entries?.length ? [`${event.entries.length} map entr${event.entries.length === 1 ? 'y' : 'ies'}`] : [])].join(' and ')}, planned in ${event.durationMs} ms`,
        fields: { reconcile: event.reconcile.seq, backends: event.backends.length, runtimeOps: event.ops.length, durationMs: event.durationMs },
      };
    }
    case 'FastPathSkipped':
      return { level: 'debug', msg: `fast path not taken, the full render applies the changes: ${firstLine(event.reason)}`, fields: { reconcile: event.reconcile.seq, durationMs: event.durationMs } };
    case 'ValidatedSuperseded':
      return {
        level: 'debug',
        msg: `valid, but older than ${[...(event.backends.length > 0 ? [`the servers the fast path applied to ${event.backends.slice(0, MAX_PROBLEMS).join(', ')}`] : []), ...(event.entries?.length ? [`the map entries it added (${event.entries.slice(0, MAX_PROBLEMS).join(', ')})`] : [])].join(' and ')}: not deployed, a newer render follows`,
        fields: { reconcile: event.reconcile.seq, backends: event.backends.length },
      };
    case 'DeploymentStarted': {
      const d = event.deployment;
      return {
        level: 'debug',
        msg: `deployment #${d.id} (${d.reason}) to ${d.endpoints.length} instance(s), waited ${d.startedAt - d.queuedAt} ms`,
        fields: { deployment: d.id, reason: d.reason, waitedMs: d.startedAt - d.queuedAt },
      };
    }
    case 'InstanceDeployed':
      return { level: 'info', msg: `deployed to ${event.result.endpoint.id}: ${how(event.result)} in ${event.result.durationMs} ms`, fields: resultFields(event.deployment, event.result) };
    case 'InstanceDeployFailed':
      return { level: 'error', msg: `deployment to ${event.result.endpoint.id} failed: ${firstLine(event.result.error ?? 'unknown error')}`, fields: resultFields(event.deployment, event.result) };
    case 'DeploymentCompleted': {
      const ok = event.results.filter((r) => r.ok).length;
      return {
        level: ok === event.results.length ? 'debug' : 'warn',
        msg: `deployment #${event.deployment.id} done: ${ok}/${event.results.length} instance(s) in ${event.durationMs} ms`,
        fields: { deployment: event.deployment.id, ok, failed: event.results.length - ok, durationMs: event.durationMs },
      };
    }
    case 'TargetDown':
      return { level: 'error', msg: `haproxy ${event.endpoint.id} is down: ${firstLine(event.cause)}`, fields: { endpoint: event.endpoint.id } };
    case 'TargetRestarted':
      return {
        level: 'warn',
        msg: `haproxy ${event.endpoint.id} restarted with the last configuration it had taken, ${event.downMs} ms after: ${firstLine(event.cause)}`,
        fields: { endpoint: event.endpoint.id, downMs: event.downMs },
      };
    case 'LeadershipLost':
      return { level: 'warn', msg: 'no longer the leader: a deployment in flight is aborted, another replica deploys', fields: {} };
    case 'StageFailed':
      return {
        level: 'error',
        msg: `stage ${event.stage} failed: ${firstLine(event.message)}; the graph restarts in ${event.restartInMs} ms (failure ${event.failures}), the last good configuration stays live`,
        fields: { stage: event.stage, failures: event.failures, restartInMs: event.restartInMs },
      };
    case 'CanaryStarted':
      return {
        level: 'info',
        msg: `canary: configuration ${event.config.hash.slice(0, 12)} goes to ${event.endpoint.id} first, checked for ${event.checkForMs} ms before ${event.rest.length} more instance(s)`,
        fields: { reconcile: event.reconcile.seq, endpoint: event.endpoint.id, rest: event.rest.length, checkForMs: event.checkForMs },
      };
    case 'CanaryPassed':
      return {
        level: 'info',
        msg: `canary ${event.endpoint.id} passed ${event.checks} check(s) in ${event.checkedMs} ms: the rest get configuration ${event.config.hash.slice(0, 12)}`,
        fields: { reconcile: event.reconcile.seq, endpoint: event.endpoint.id, checks: event.checks },
      };
    case 'CanaryFailed':
      return {
        level: 'warn',
        msg: `canary ${event.endpoint.id} failed: ${event.problems.map(firstLine).join('; ')}; ${event.rollbackTo ? `rolled back to ${event.rollbackTo.slice(0, 12)}` : 'no configuration is known to be good to roll it back to'}, the rest are left untouched`,
        fields: { reconcile: event.reconcile.seq, endpoint: event.endpoint.id, ...(event.rollbackTo && { rollbackTo: event.rollbackTo.slice(0, 12) }) },
      };
    case 'CanaryAbandoned':
      return {
        level: 'info',
        msg: `canary ${event.endpoint.id}: reconcile #${event.by.seq} brought a newer configuration, the check of ${event.config.hash.slice(0, 12)} stops and the rest are left as they are`,
        fields: { reconcile: event.reconcile.seq, endpoint: event.endpoint.id, by: event.by.seq },
      };
    case 'StatusWritten':
      return { level: 'debug', msg: `status of ${objectLabel(event.object)} written (${event.fields.join(', ')})`, fields: { object: objectLabel(event.object) } };
    case 'StatusWriteFailed':
      return {
        level: 'warn',
        msg: `cannot write the status of ${objectLabel(event.object)}: ${firstLine(event.message)}${event.retryInMs > 0 ? `; trying again in ${event.retryInMs} ms` : ''}`,
        fields: { object: objectLabel(event.object), status: event.status, retryInMs: event.retryInMs },
      };
  }
}

/**
 * The diff a deployment applied, as a debug line of its own: the files in the message,
 * the unified diff (bounded, credentials redacted) in the `diff` field, since messages
 * are kept to one line. Nothing for other events.
 */
export function diffLogLine(event: ControllerEvent): LogLine | undefined {
  if (event.type !== 'DeploymentCompleted' || !event.diff) return undefined;
  const { diff } = event;
  return {
    level: 'debug',
    msg: `deployment #${event.deployment.id} changed: ${diffSummary(diff)}`,
    fields: {
      deployment: event.deployment.id,
      ...(diff.from && { from: diff.from.slice(0, 12) }),
      to: diff.to.slice(0, 12),
      truncated: diff.truncated,
      ...(diff.text && { diff: diff.text }),
    },
  };
}

function objectLabel(ref: ObjectRef): string {
  return `${ref.kind ?? 'Object'} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** Messages can carry a quoted line of input after the first; a log line keeps only the first. */
function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}

function how(result: InstanceResult): string {
  if (result.reloaded) return result.runtimeOps > 0 ? `reloaded, then ${result.runtimeOps} runtime change(s)` : 'reloaded';
  return result.runtimeOps > 0 ? `${result.runtimeOps} runtime change(s), no reload` : 'already up to date';
}

function resultFields(deployment: Deployment, result: InstanceResult): Record<string, unknown> {
  return { deployment: deployment.id, reconcile: deployment.reconcile.seq, endpoint: result.endpoint.id, reloaded: result.reloaded, runtimeOps: result.runtimeOps, durationMs: result.durationMs };
}

/** The first warnings as `<object>: <message>`, and how many more there are. */
function shownWarnings(warnings: readonly RenderWarning[]): string {
  const shown = warnings.slice(0, MAX_PROBLEMS).map((w) => (w.object ? `${w.object}: ${w.message}` : w.message));
  return `${shown.join('; ')}${warnings.length > MAX_PROBLEMS ? ` (and ${warnings.length - MAX_PROBLEMS} more)` : ''}`;
}
