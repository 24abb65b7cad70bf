import type { ConfigDiff } from './haproxy/config-diff.ts';
import type { ResourceChange } from './k8s/resource.ts';
import type { ObjectStatus } from './status/types.ts';
import type { RuntimeOp } from './haproxy/plan-types.ts';
import type { RenderedConfig } from './templating/rendered.ts';

/** A HAProxy instance to deploy to: a Data Plane API URL, or the local process. */
export interface Endpoint {
  /** Stable identity, e.g. `pod-name` or `local`. */
  id: string;
  /** Where it is reached, e.g. `https://10.0.0.7:5555`; for display and for the target. */
  address: string;
  /**
   * Changes when the instance behind the id restarted or was replaced (a new pod of
   * the same name, a container that restarted): it gets the current configuration at once.
   */
  incarnation?: string;
}

/**
 * Trace context travels inside the stream items: implicit async context points
 * at the wrong parent after debounceTime and throttle.
 */
export interface TraceRef {
  traceId: string;
  spanId: string;
}

/** What set a reconciliation off. */
export interface ReconcileCause {
  reason: 'resources' | 'config' | 'drift' | 'endpoints' | 'leader';
  /** The cluster changes batched into this reconciliation, oldest first. */
  changes: readonly ChangeRef[];
}

export interface ChangeRef {
  resource: string;
  type: ResourceChange['type'];
  kind?: string;
  namespace?: string;
  name?: string;
  resourceVersion?: string;
}

export interface Reconcile {
  /** Monotonic per graph; ties every later event to its trigger. */
  seq: number;
  cause: ReconcileCause;
  at: number;
  /** When the oldest change of the batch was seen: where the propagation time starts. */
  firstChangeAt?: number;
  trace?: TraceRef;
}

export interface RenderError {
  template: string;
  line?: number;
  message: string;
}

/** A Kubernetes object, by name: what a warning or a problem is about. */
export interface ObjectRef {
  apiVersion?: string;
  kind?: string;
  /** Absent for cluster-scoped objects. */
  namespace?: string;
  name: string;
  uid?: string;
}

/** An object a template skipped, or a value it ignored, and why; the render went on. */
export interface RenderWarning {
  /** `Kind namespace/name`, when the warning is about an object (or the subject as the template named it). */
  object?: string;
  message: string;
  /** The object concerned, when the subject is a Kubernetes object. */
  ref?: ObjectRef;
  /** The field at fault (or the part left out), as a path in the object: `spec.rules[0].host`. */
  field?: string;
  /** Where the template raised it: the template (snippets/<name> for a snippet) and its line. */
  template?: string;
  line?: number;
  /** The object was left out of the configuration whole. */
  skipped?: boolean;
  /** Why, as a status condition's reason (e.g. UnsupportedValue), when the template gave one. */
  reason?: string;
}

export interface ValidationProblem {
  /** 'haproxy.cfg' or the auxiliary file's relative path. */
  file: string;
  line?: number;
  message: string;
}

/** What a target reports for one instance; the deploy stage adds endpoint and timing. */
export interface InstanceOutcome {
  ok: boolean;
  /** True when the instance had to reload; false for runtime-only changes or no change. */
  reloaded: boolean;
  runtimeOps: number;
  error?: string;
  /**
   * Set when someone else had changed the instance since haprx last deployed to it;
   * the deployment overwrote that change.
   */
  drift?: string;
}

/** One round of checks of a canary instance: what failed, if anything. */
export type CanaryCheck = { ok: true } | { ok: false; problems: readonly string[] };

export interface InstanceResult extends InstanceOutcome {
  endpoint: Endpoint;
  durationMs: number;
}

/**
 * The V8 heap of the thread that rendered, as the render left it: at 10k objects the
 * render thread holds a copy of the watched sets and about half of the process's heap,
 * which the process's own heap figures do not show.
 */
export interface ThreadHeap {
  usedBytes: number;
  totalBytes: number;
  limitBytes: number;
}

export type ControllerEvent =
  | { type: 'ConfigAccepted'; generation: number }
  | { type: 'ConfigRejected'; path: string; message: string }
  /** A resource source could not read something, or a store could not take an object (named); the stores keep what they had. */
  | { type: 'SourceProblem'; source: string; resource?: string; line?: number; message: string; object?: ObjectRef }
  | { type: 'ReconcileTriggered'; reconcile: Reconcile }
  /** `statuses`: what the templates declared about each object (src/status/types.ts). */
  | { type: 'Rendered'; reconcile: Reconcile; config: RenderedConfig; durationMs: number; warnings?: readonly RenderWarning[]; statuses?: readonly ObjectStatus[]; threadHeap?: ThreadHeap }
  | { type: 'RenderFailed'; reconcile: Reconcile; error: RenderError; durationMs: number; threadHeap?: ThreadHeap }
  /** The render produced the configuration already rendered last: nothing further to do. `warnings` and `statuses` when they changed since the last render. */
  | { type: 'RenderUnchanged'; reconcile: Reconcile; hash: string; durationMs: number; warnings?: readonly RenderWarning[]; statuses?: readonly ObjectStatus[]; threadHeap?: ThreadHeap }
  | { type: 'Validated'; reconcile: Reconcile; config: RenderedConfig; durationMs: number }
  | { type: 'ValidationFailed'; reconcile: Reconcile; config: RenderedConfig; problems: readonly ValidationProblem[]; durationMs: number }
  /**
   * The check could not run (haproxy -c timed out, could not start, was killed): this says
   * nothing about the configuration, which is checked again after `retryInMs`.
   */
  | { type: 'ValidationUnavailable'; reconcile: Reconcile; config: RenderedConfig; message: string; attempt: number; retryInMs: number; durationMs: number }
  /**
   * The fast path found the batch's changes to be new server lines of `backends` and new
   * map `entries` (`<map> <key>`) only, and
   * goes to the instances with the runtime operations from the configuration `from` (a
   * hash) to `config`, ahead of the full render, which follows.
   */
  /** `partial`: its full render brings more than this applied (a certificate), so it goes at once, not as a paced confirmation. */
  | { type: 'FastPathPlanned'; reconcile: Reconcile; config: RenderedConfig; from: string; ops: readonly RuntimeOp[]; backends: readonly string[]; entries?: readonly string[]; partial?: true; durationMs: number }
  /** The fast path could not take these changes: the full path alone applies them. */
  | { type: 'FastPathSkipped'; reconcile: Reconcile; reason: string; durationMs: number }
  /**
   * A validated configuration whose render began before the fast path applied newer
   * server lines to `backends` or map `entries` (`<map> <key>`): deploying it would take
   * them back, so it goes no further;
   * the render that began after them follows.
   */
  | { type: 'ValidatedSuperseded'; reconcile: Reconcile; backends: readonly string[]; entries?: readonly string[] }
  | { type: 'DeploymentStarted'; deployment: Deployment }
  | { type: 'InstanceDeployed'; deployment: Deployment; result: InstanceResult }
  | { type: 'InstanceDeployFailed'; deployment: Deployment; result: InstanceResult }
  /** `diff`: from what the instances ran to what the deployment applied (redacted, bounded). */
  | { type: 'DeploymentCompleted'; deployment: Deployment; results: readonly InstanceResult[]; durationMs: number; diff?: ConfigDiff }
  /**
   * A configuration that reloads went to one instance first (`endpoint`, the canary);
   * it is checked for `checkForMs` before the `rest` get it.
   */
  | { type: 'CanaryStarted'; reconcile: Reconcile; config: RenderedConfig; endpoint: Endpoint; rest: readonly Endpoint[]; checkForMs: number }
  /** The canary ran the configuration for the whole check without a failed check: the rest get it now. */
  | { type: 'CanaryPassed'; reconcile: Reconcile; config: RenderedConfig; endpoint: Endpoint; checks: number; checkedMs: number }
  /**
   * The canary's deployment or one of its checks failed: the canary goes back to `rollbackTo`
   * (the configuration the rest run, a hash; absent when none is known), the rest are left
   * untouched, and the configuration goes no further.
   */
  | { type: 'CanaryFailed'; reconcile: Reconcile; config: RenderedConfig; endpoint: Endpoint; problems: readonly string[]; rollbackTo?: string }
  /** A newer configuration arrived while the canary was checked: the check stops, the rest are left as they are, the newer one follows. */
  | { type: 'CanaryAbandoned'; reconcile: Reconcile; config: RenderedConfig; endpoint: Endpoint; by: Reconcile }
  /** The leader wrote an object's status (`fields`: the status fields it changed). */
  | { type: 'StatusWritten'; object: ObjectRef; fields: readonly string[] }
  /** Writing an object's status failed; it is tried again after `retryInMs` (0: not again, e.g. the object is gone). */
  | { type: 'StatusWriteFailed'; object: ObjectRef; status: number; message: string; retryInMs: number }
  /** A target haprx runs itself (local mode's haproxy) stopped on its own; it is being restarted. */
  | { type: 'TargetDown'; endpoint: Endpoint; cause: string }
  /** That target runs again, with the last configuration it had taken. */
  | { type: 'TargetRestarted'; endpoint: Endpoint; cause: string; downMs: number }
  /** This replica stopped leading: the deployment in flight, if any, was aborted; another replica deploys. */
  | { type: 'LeadershipLost' }
  /**
   * A stage of the graph failed with an error (a defect, or an input it could not
   * handle). The graph restarts after `restartInMs` and waits for a full sync again;
   * the instances keep the last configuration deployed meanwhile.
   */
  | { type: 'StageFailed'; stage: string; message: string; failures: number; restartInMs: number };

export type ValidatedEvent = Extract<ControllerEvent, { type: 'Validated' }>;

/** The newest configuration (validated, or applied by the fast path after it) and every current instance: what the fleet should run. */
export interface Desired {
  reconcile: Reconcile;
  config: RenderedConfig;
  endpoints: readonly Endpoint[];
  /** The fast path applied this configuration: its runtime operations on a validated one. */
  appliedByFastPath?: true;
}

/**
 * A validated configuration that should go out to `endpoints`: every instance, or
 * those that need it (one that joined or came back, one whose deployment failed).
 */
export interface DeployRequest extends Desired {
  /**
   * change: a new configuration; endpoints: instances that joined or came back; drift:
   * nothing deployed for the drift interval; leader: this replica took over; retry: a
   * failed instance, again; credentials: new Data Plane credentials; fast: the fast
   * path's runtime operations (see `fast`); canary: the first instance of a canary
   * rollout; rollback: the canary back to what the rest run.
   */
  reason: 'change' | 'drift' | 'endpoints' | 'leader' | 'retry' | 'credentials' | 'fast' | 'canary' | 'rollback';
  /**
   * Set on fast path requests: the operations that take an instance running the
   * configuration `from` (a hash) to this one. Instances apply them at runtime or not at
   * all: never a reload, since this configuration was not checked by haproxy -c.
   */
  fast?: { from: string; ops: readonly RuntimeOp[] };
  /** When the deployment was wanted; the gap to its start is the scheduler's wait. */
  queuedAt: number;
}

/** A request the scheduler let through. */
export interface Deployment extends DeployRequest {
  id: number;
  startedAt: number;
}
