import type { ControllerEvent, Reconcile } from '../events.ts';
import type { TimelineEvent } from './format.ts';

type Fields = Record<string, string | number | boolean>;

/** Hashes are shown by their first 12 digits, as the logs do. */
const short = (hash: string | undefined) => (hash ?? '').slice(0, 12);
const seq = (r: Reconcile) => r.seq;
const ids = (endpoints: readonly { id: string }[]) => endpoints.map((e) => e.id).join(',');

/**
 * The fields that tell one event from another in a timeline: what it is about (the
 * reconciliation, the deployment, the instance, the configuration's hash) and what
 * happened; no wall-clock times or durations, which a replay in virtual time does not share.
 */
export function timelineEvent(event: ControllerEvent): TimelineEvent {
  return { type: event.type, fields: fieldsOf(event) };
}

function fieldsOf(e: ControllerEvent): Fields {
  switch (e.type) {
    case 'ReconcileTriggered':
      return { seq: seq(e.reconcile), reason: e.reconcile.cause.reason, changes: e.reconcile.cause.changes.length };
    case 'Rendered':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), warnings: e.warnings?.length ?? 0 };
    case 'RenderFailed':
      return { seq: seq(e.reconcile), template: e.error.template, message: e.error.message };
    case 'RenderUnchanged':
      return { seq: seq(e.reconcile), hash: short(e.hash) };
    case 'Validated':
      return { seq: seq(e.reconcile), hash: short(e.config.hash) };
    case 'ValidationFailed':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), problems: e.problems.length, first: e.problems[0]?.message ?? '' };
    case 'ValidationUnavailable':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), attempt: e.attempt, retryInMs: e.retryInMs };
    case 'FastPathPlanned':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), from: short(e.from), ops: e.ops.length, backends: e.backends.join(',') };
    case 'FastPathSkipped':
      return { seq: seq(e.reconcile), reason: e.reason };
    case 'ValidatedSuperseded':
      return { seq: seq(e.reconcile), backends: e.backends.join(',') };
    case 'DeploymentStarted':
      return { id: e.deployment.id, seq: seq(e.deployment.reconcile), reason: e.deployment.reason, hash: short(e.deployment.config.hash), endpoints: ids(e.deployment.endpoints) };
    case 'InstanceDeployed':
      return { id: e.deployment.id, endpoint: e.result.endpoint.id, reloaded: e.result.reloaded, runtimeOps: e.result.runtimeOps };
    case 'InstanceDeployFailed':
      return { id: e.deployment.id, endpoint: e.result.endpoint.id, error: e.result.error ?? '' };
    case 'DeploymentCompleted': {
      const failed = e.results.filter((r) => !r.ok).length;
      return { id: e.deployment.id, ok: e.results.length - failed, failed, ...(e.diff && { diffFiles: e.diff.files.length }) };
    }
    case 'CanaryStarted':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), endpoint: e.endpoint.id, rest: ids(e.rest) };
    case 'CanaryPassed':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), endpoint: e.endpoint.id, checks: e.checks };
    case 'CanaryFailed':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), endpoint: e.endpoint.id, problems: e.problems.join('; '), rollbackTo: short(e.rollbackTo) };
    case 'CanaryAbandoned':
      return { seq: seq(e.reconcile), hash: short(e.config.hash), endpoint: e.endpoint.id, by: seq(e.by) };
    case 'SourceProblem':
      return { source: e.source, ...(e.line !== undefined && { line: e.line }), message: e.message };
    case 'StageFailed':
      return { stage: e.stage, failures: e.failures, restartInMs: e.restartInMs, message: e.message };
    case 'TargetDown':
    case 'TargetRestarted':
      return { endpoint: e.endpoint.id };
    case 'StatusWritten':
    case 'StatusWriteFailed':
      return { object: `${e.object.kind ?? ''} ${e.object.namespace ?? ''}/${e.object.name}` };
    case 'ConfigAccepted':
      return { generation: e.generation };
    case 'ConfigRejected':
      return { path: e.path, message: e.message };
    case 'LeadershipLost':
      return {};
  }
}

/** `DeploymentStarted  id=2 reason=change …` */
export function timelineText(event: TimelineEvent): string {
  const fields = Object.entries(event.fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' && /[\s"=]|^$/.test(v) ? JSON.stringify(v) : String(v)}`)
    .join(' ');
  return `${event.type}${fields ? `  ${fields}` : ''}`;
}

/** `   1234ms  DeploymentStarted  id=2 reason=change …`: one line per event. */
export function timelineLine(at: number, event: TimelineEvent): string {
  return `${`${at}ms`.padStart(9)}  ${timelineText(event)}`;
}
