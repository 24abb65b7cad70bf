/**
 * The deployment plans a fleet's Data Plane targets share. Every instance of a fleet
 * usually goes from the same render to the same render, so each pair is planned once,
 * however many instances ask at the same time; and in turns of the event loop, as haprx
 * local plans: at 10k backends a plan read at once (two map files of 20k entries, 10k
 * sections keyed) held the loop for 67–126 ms, past /healthz's 100 ms. The canary's
 * verdict (does the rollout reload?) is the same plan, asked for as steps that its stage
 * runs in slices: a plan kept is given at once, and one made so is kept for the targets,
 * which then deploy without planning the pair again.
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
  /** Those of `plans` that are made, for steps() to give without waiting; never a key `plans` lacks. */
  private readonly made = new Map<string, Plan>();
  private readonly budgetMs: number;
  private readonly bound: number;
  private readonly planSteps: NonNullable<PlanCacheOptions['planSteps']>;
  /** How many plans were made (not found kept), for tests. */
  planned = 0;

  constructor(options: PlanCacheOptions = {}) {
    this.budgetMs = options.budgetMs ?? 10;
    this.bound = options.keep ?? 16;
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
    this.keep(key, made);
    made.then(
      (plan) => {
        if (this.plans.get(key) === made) this.made.set(key, plan);
      },
      // A plan that failed is asked for again, not remembered.
      () => {
        if (this.plans.get(key) === made) this.plans.delete(key);
      },
    );
    return made;
  }

  /**
   * The same plan as steps, for a caller that runs them in its own slices: one made
   * already is returned without a step; one made here is kept as plan() keeps its own.
   * A pair that plan() is still making is made again here (a promise cannot be waited
   * for in steps).
   */
  *steps(previous: RenderedConfig | undefined, next: RenderedConfig): Steps<Plan> {
    if (!previous) {
      this.planned++;
      return yield* this.planSteps(previous, next);
    }
    const key = `${previous.hash}:${next.hash}`;
    const done = this.made.get(key);
    if (done) return done;
    this.planned++;
    const plan = yield* this.planSteps(previous, next);
    // Kept unless plan() is making the pair meanwhile: its own promise stays the one kept.
    if (!this.plans.has(key)) {
      this.keep(key, Promise.resolve(plan));
      this.made.set(key, plan);
    }
    return plan;
  }

  /** Keeps a pair's plan, and forgets the oldest past the bound. */
  private keep(key: string, plan: Promise<Plan>): void {
    this.plans.set(key, plan);
    if (this.plans.size > this.bound) {
      const oldest = this.plans.keys().next().value!;
      this.plans.delete(oldest);
      this.made.delete(oldest);
    }
  }

  private make(previous: RenderedConfig | undefined, next: RenderedConfig): Promise<Plan> {
    this.planned++;
    return runInTurns(this.planSteps(previous, next), this.budgetMs);
  }
}

/**
 * The plans of this process's Data Plane targets and of its canary's verdicts: every
 * instance of a fleet usually goes from the same render to the same render, and the
 * canary asks about that same pair first.
 */
export const FLEET_PLANS = new PlanCache();
