/**
 * The deployment plans a fleet's Data Plane targets share. Every instance of a fleet
 * usually goes from the same render to the same render, so each pair is planned once,
 * however many instances ask at the same time; and in turns of the event loop, as haprx
 * local plans: at 10k backends a plan read at once (two map files of 20k entries, 10k
 * sections keyed) held the loop for 67–126 ms, past /healthz's 100 ms.
 */
import { type Plan, planDeploymentSteps } from '../haproxy/plan.ts';
import type { Steps } from '../steps.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { runInTurns } from '../turns.ts';

export interface PlanCacheOptions {
  /** How long planning runs between two turns of the event loop; default 10 ms. */
  budgetMs?: number;
  /** How many pairs' plans are kept; default 16. */
  keep?: number;
  /** The planner (tests give one that fails). */
  planSteps?: (previous: RenderedConfig | undefined, next: RenderedConfig) => Steps<Plan>;
}

export class PlanCache {
  private readonly plans = new Map<string, Promise<Plan>>();
  private readonly budgetMs: number;
  private readonly keep: number;
  private readonly planSteps: NonNullable<PlanCacheOptions['planSteps']>;
  /** How many plans were made (not found kept), for tests. */
  planned = 0;

  constructor(options: PlanCacheOptions = {}) {
    this.budgetMs = options.budgetMs ?? 10;
    this.keep = options.keep ?? 16;
    this.planSteps = options.planSteps ?? planDeploymentSteps;
  }

  /** The plan from `previous` (unknown: nothing deployed) to `next`. */
  plan(previous: RenderedConfig | undefined, next: RenderedConfig): Promise<Plan> {
    // A first deployment's plan depends on the instance alone: not shared.
    if (!previous) return this.make(previous, next);
    const key = `${previous.hash}:${next.hash}`;
    const kept = this.plans.get(key);
    if (kept) return kept;
    const made = this.make(previous, next);
    this.plans.set(key, made);
    if (this.plans.size > this.keep) this.plans.delete(this.plans.keys().next().value!);
    // A plan that failed is asked for again, not remembered.
    made.catch(() => {
      if (this.plans.get(key) === made) this.plans.delete(key);
    });
    return made;
  }

  private make(previous: RenderedConfig | undefined, next: RenderedConfig): Promise<Plan> {
    this.planned++;
    return runInTurns(this.planSteps(previous, next), this.budgetMs);
  }
}
