import type { ControllerEvent, Deployment, Reconcile } from '../events.ts';

/** Where an unfinished reconciliation is. */
export type Stage = 'rendering' | 'validating' | 'queued' | 'deploying' | 'canary';

export type ReconcileOutcome =
  | 'deployed'
  | 'deploy_failed'
  | 'unchanged'
  | 'render_failed'
  | 'invalid'
  /** A newer reconciliation replaced it before it was deployed (switchMap, or the scheduler's latest-wins). */
  | 'superseded'
  /** A new controller configuration rebuilt the graph. */
  | 'cancelled'
  /** The canary's deployment or checks failed: it was rolled back, the rest left untouched. */
  | 'canary_failed';

export const OUTCOMES: readonly ReconcileOutcome[] = ['deployed', 'deploy_failed', 'unchanged', 'render_failed', 'invalid', 'superseded', 'cancelled', 'canary_failed'];

export interface OpenReconcile {
  /** `generation/seq`: sequence numbers restart with each controller configuration. */
  key: string;
  generation: number;
  reconcile: Reconcile;
  stage: Stage;
  stageSince: number;
  deployment?: number;
}

export interface OpenDeployment {
  key: string;
  generation: number;
  deployment: Deployment;
  /** The reconciliation it completes; absent for redeploys (drift, a joining instance, a new leader). */
  reconcileKey?: string;
  pending: Set<string>;
}

export interface Ended {
  entry: OpenReconcile;
  outcome: ReconcileOutcome;
  at: number;
}

/** What one event did to the reconciliations in flight. */
export interface Step {
  generation: number;
  /** The reconciliation the event belongs to, if it is (or just was) open. */
  entry?: OpenReconcile;
  /** The deployment the event belongs to, for deployment events. */
  deployment?: OpenDeployment;
  /** Reconciliations that ended with this event, the event's own last. */
  ended: Ended[];
  /** Deployments that ended with this event (completed, or cancelled by a new configuration). */
  deploymentsEnded: OpenDeployment[];
}

/**
 * Follows each reconciliation through the graph from the events alone, mirroring its
 * operators: a newer trigger cancels a render in progress (switchMap), a newer render
 * cancels a validation, and a newer valid configuration replaces one waiting in the
 * scheduler. So at most one reconciliation is open per stage, and nothing leaks.
 */
export class ReconcileLifecycle {
  generation = 0;
  private readonly open = new Map<string, OpenReconcile>();
  private readonly deployments = new Map<string, OpenDeployment>();

  get reconciles(): readonly OpenReconcile[] {
    return [...this.open.values()];
  }

  get activeDeployments(): readonly OpenDeployment[] {
    return [...this.deployments.values()];
  }

  apply(event: ControllerEvent, now: number): Step {
    const step: Step = { generation: this.generation, ended: [], deploymentsEnded: [] };
    const end = (entry: OpenReconcile, outcome: ReconcileOutcome) => {
      this.open.delete(entry.key);
      step.ended.push({ entry, outcome, at: now });
    };
    const supersede = (stage: Stage, except: string) => {
      for (const entry of [...this.open.values()]) if (entry.stage === stage && entry.key !== except) end(entry, 'superseded');
    };
    const advance = (entry: OpenReconcile | undefined, stage: Stage) => {
      if (entry) Object.assign(entry, { stage, stageSince: now });
    };
    switch (event.type) {
      case 'ConfigAccepted':
        for (const entry of [...this.open.values()]) end(entry, 'cancelled');
        step.deploymentsEnded.push(...this.deployments.values());
        this.deployments.clear();
        this.generation = event.generation;
        step.generation = event.generation;
        return step;
      case 'StageFailed':
        // The graph is rebuilt: what was in flight is gone, and numbering starts again.
        for (const entry of [...this.open.values()]) end(entry, 'cancelled');
        step.deploymentsEnded.push(...this.deployments.values());
        this.deployments.clear();
        return step;
      case 'LeadershipLost':
        // Fenced: the deployment in flight was aborted.
        for (const open of [...this.deployments.values()]) {
          const owner = open.reconcileKey !== undefined ? this.open.get(open.reconcileKey) : undefined;
          if (owner) end(owner, 'cancelled');
          step.deploymentsEnded.push(open);
        }
        this.deployments.clear();
        return step;
      case 'ValidationUnavailable': {
        // A check that could not run is retried: the reconciliation stays in validation,
        // and is not stalled while each attempt ends in time.
        const entry = this.find(event.reconcile);
        advance(entry, 'validating');
        step.entry = entry;
        return step;
      }
      case 'ConfigRejected':
      case 'SourceProblem':
      case 'TargetDown':
      case 'TargetRestarted':
      case 'StatusWritten':
      case 'StatusWriteFailed':
        return step;
      case 'FastPathPlanned':
      case 'FastPathSkipped':
        // Beside the render of the same reconciliation, which stays where it is.
        step.entry = this.find(event.reconcile);
        return step;
      case 'ValidatedSuperseded': {
        // Validated, but older than what the fast path applied: it is not deployed.
        const entry = this.find(event.reconcile);
        step.entry = entry;
        if (entry) end(entry, 'superseded');
        return step;
      }
      case 'ReconcileTriggered': {
        const entry: OpenReconcile = { key: this.key(event.reconcile.seq), generation: this.generation, reconcile: event.reconcile, stage: 'rendering', stageSince: now };
        supersede('rendering', entry.key);
        this.open.set(entry.key, entry);
        step.entry = entry;
        return step;
      }
      case 'Rendered':
      case 'Validated': {
        const entry = this.find(event.reconcile);
        const stage = event.type === 'Rendered' ? 'validating' : 'queued';
        supersede(stage, entry?.key ?? '');
        advance(entry, stage);
        step.entry = entry;
        return step;
      }
      case 'RenderUnchanged':
      case 'RenderFailed':
      case 'ValidationFailed': {
        const entry = this.find(event.reconcile);
        step.entry = entry;
        if (entry) end(entry, event.type === 'RenderUnchanged' ? 'unchanged' : event.type === 'RenderFailed' ? 'render_failed' : 'invalid');
        return step;
      }
      case 'DeploymentStarted': {
        const { deployment } = event;
        const entry = this.find(deployment.reconcile);
        const owns = entry !== undefined && entry.stage === 'queued';
        const open: OpenDeployment = {
          key: this.key(deployment.id),
          generation: this.generation,
          deployment,
          pending: new Set(deployment.endpoints.map((e) => e.id)),
          ...(owns && { reconcileKey: entry.key }),
        };
        this.deployments.set(open.key, open);
        if (owns) {
          advance(entry, 'deploying');
          entry.deployment = deployment.id;
          step.entry = entry;
        }
        // The fast path deploys while its reconciliation renders: in its trace, not owning it.
        if (!owns && deployment.reason === 'fast') step.entry = entry;
        step.deployment = open;
        return step;
      }
      case 'CanaryStarted':
      case 'CanaryPassed': {
        // The canary's deployment, then the rest's, belong to the reconciliation: it waits in
        // 'canary' while the canary is checked, and is queued again for the rest.
        const entry = this.find(event.reconcile);
        if (entry && event.type === 'CanaryPassed') advance(entry, 'queued');
        step.entry = entry;
        return step;
      }
      case 'CanaryFailed':
      case 'CanaryAbandoned': {
        const entry = this.find(event.reconcile);
        step.entry = entry;
        if (entry) end(entry, event.type === 'CanaryFailed' ? 'canary_failed' : 'superseded');
        return step;
      }
      case 'InstanceDeployed':
      case 'InstanceDeployFailed':
      case 'DeploymentCompleted': {
        const open = this.deployments.get(this.key(event.deployment.id));
        step.deployment = open;
        const entry = open?.reconcileKey !== undefined ? this.open.get(open.reconcileKey) : undefined;
        step.entry = entry;
        if (event.type !== 'DeploymentCompleted') {
          open?.pending.delete(event.result.endpoint.id);
          return step;
        }
        if (open) {
          this.deployments.delete(open.key);
          step.deploymentsEnded.push(open);
        }
        if (!entry) return step;
        const ok = event.results.every((r) => r.ok);
        // A canary that deployed is checked next; one that failed ends with CanaryFailed.
        if (event.deployment.reason === 'canary') advance(entry, ok ? 'canary' : 'deploying');
        else end(entry, ok ? 'deployed' : 'deploy_failed');
        return step;
      }
    }
  }

  private key(n: number): string {
    return `${this.generation}/${n}`;
  }

  private find(reconcile: Reconcile): OpenReconcile | undefined {
    const entry = this.open.get(this.key(reconcile.seq));
    // The same seq from an older graph is not this reconciliation.
    return entry && (entry.reconcile === reconcile || entry.reconcile.at === reconcile.at) ? entry : undefined;
  }
}
