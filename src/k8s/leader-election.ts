import { BehaviorSubject, type Observable, distinctUntilChanged } from 'rxjs';
import type { KubeApi, ResourceRef } from './api.ts';

export interface LeaseTimings {
  /** How long a lease holds without renewal before others may take it. */
  leaseDurationMs: number;
  /** A leader that has not renewed for this long steps down (it must be below the lease duration). */
  renewDeadlineMs: number;
  /** How often to try to acquire or renew. */
  retryPeriodMs: number;
}

export const DEFAULT_LEASE_TIMINGS: LeaseTimings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface LeaseObject {
  metadata: { name: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  spec?: LeaseSpec;
}

/** When this replica last saw the lease record change, by its own clock (clock skew between nodes does not matter). */
export interface Observation {
  record: string;
  at: number;
}

export type LeaseDecision =
  | { action: 'create'; spec: LeaseSpec }
  | { action: 'update'; spec: LeaseSpec; resourceVersion: string }
  | { action: 'wait'; holder: string; expiresInMs: number };

/** RFC 3339 with microseconds, the Kubernetes MicroTime format. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export function leaseSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * What to do with the lease as it is now (client-go's tryAcquireOrRenew):
 * - no lease: create it, held by us;
 * - held by another whose renewal we saw less than its lease duration ago: wait;
 * - otherwise (ours, released, or expired): write it, held by us, with the
 *   resourceVersion we read, so that of two replicas racing only one wins.
 * Expiry is judged by when this replica saw the record change, never by the
 * holder's timestamps: clocks differ between nodes.
 */
export function decideLease(
  lease: LeaseObject | undefined,
  context: { identity: string; now: number; leaseDurationMs: number; observed?: Observation },
): { decision: LeaseDecision; observed?: Observation } {
  const { identity, now } = context;
  const fresh = (acquireTime: string, transitions: number): LeaseSpec => ({
    holderIdentity: identity,
    leaseDurationSeconds: leaseSeconds(context.leaseDurationMs),
    acquireTime,
    renewTime: microTime(now),
    leaseTransitions: transitions,
  });
  if (!lease) return { decision: { action: 'create', spec: fresh(microTime(now), 0) } };
  const spec = lease.spec ?? {};
  const record = JSON.stringify([spec.holderIdentity ?? '', spec.renewTime ?? '', spec.acquireTime ?? '', lease.metadata.resourceVersion ?? '']);
  const observed = context.observed?.record === record ? context.observed : { record, at: now };
  const holder = spec.holderIdentity ?? '';
  const transitions = spec.leaseTransitions ?? 0;
  if (holder !== '' && holder !== identity) {
    const expiresInMs = observed.at + (spec.leaseDurationSeconds ?? leaseSeconds(context.leaseDurationMs)) * 1000 - now;
    if (expiresInMs > 0) return { decision: { action: 'wait', holder, expiresInMs }, observed };
  }
  const ours = holder === identity;
  return {
    decision: { action: 'update', resourceVersion: lease.metadata.resourceVersion ?? '', spec: fresh(ours && spec.acquireTime ? spec.acquireTime : microTime(now), ours ? transitions : transitions + 1) },
    observed,
  };
}

export interface LeaderElectionOptions extends Partial<LeaseTimings> {
  namespace: string;
  /** The Lease's name. */
  name: string;
  /** This replica, e.g. its pod name; must differ between replicas. */
  identity: string;
  random?: () => number;
  /** Called on every change of leadership, and on failures to reach the lease; for logs. */
  onNotice?: (notice: { leader: boolean; message: string }) => void;
}

type Attempt = 'leader' | 'follower' | 'error';

/**
 * Leader election on a coordination.k8s.io/v1 Lease. `leader$` says whether this
 * replica leads now. A leader renews every retry period; one that could not renew
 * within the renew deadline steps down at once, before the lease can expire for
 * the others (deadline < duration), so two replicas never both believe they lead.
 * `stop()` steps down and releases the lease, so that another replica takes over
 * without waiting for it to expire.
 */
export class LeaderElector {
  readonly leader$: Observable<boolean>;
  private readonly api: KubeApi;
  private readonly options: LeaderElectionOptions & LeaseTimings;
  private readonly ref: ResourceRef;
  private readonly leader = new BehaviorSubject(false);
  private observed: Observation | undefined;
  private lastRenew = 0;
  private stopped = true;
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();

  constructor(api: KubeApi, options: LeaderElectionOptions) {
    this.api = api;
    this.options = { ...DEFAULT_LEASE_TIMINGS, ...options };
    if (!(this.options.renewDeadlineMs < this.options.leaseDurationMs)) throw new Error('the renew deadline must be shorter than the lease duration');
    if (!(this.options.retryPeriodMs < this.options.renewDeadlineMs)) throw new Error('the retry period must be shorter than the renew deadline');
    this.ref = { apiVersion: 'coordination.k8s.io/v1', resource: 'leases', namespace: options.namespace, name: options.name };
    this.leader$ = this.leader.pipe(distinctUntilChanged());
  }

  get isLeader(): boolean {
    return this.leader.value;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loopDone = this.loop();
  }

  /** Steps down, stops, and releases the lease if this replica holds it. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.setLeader(false, 'stopping');
    this.wake?.();
    this.abort.abort();
    await this.loopDone;
    await this.release();
    this.leader.complete();
  }

  private async loop(): Promise<void> {
    const { retryPeriodMs, random = Math.random } = this.options;
    while (!this.stopped) {
      const attempt = await this.tryAcquireOrRenew();
      if (this.stopped) return;
      if (attempt === 'leader') {
        this.lastRenew = Date.now();
        this.armDeadline();
        this.setLeader(true, `acquired the lease ${this.options.namespace}/${this.options.name}`);
      } else if (attempt === 'follower') {
        this.setLeader(false, 'another replica holds the lease');
      }
      // Followers retry with jitter (as client-go), so that replicas spread out.
      const wait = this.leader.value ? retryPeriodMs : retryPeriodMs * (1 + 1.2 * random());
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  private armDeadline(): void {
    clearTimeout(this.deadline);
    const renewedAt = this.lastRenew;
    this.deadline = setTimeout(() => {
      if (this.lastRenew === renewedAt) this.setLeader(false, `could not renew the lease for ${this.options.renewDeadlineMs} ms`);
    }, this.options.renewDeadlineMs);
  }

  private setLeader(leader: boolean, message: string): void {
    if (this.leader.value === leader || this.leader.closed) return;
    if (!leader) clearTimeout(this.deadline);
    this.leader.next(leader);
    this.options.onNotice?.({ leader, message });
  }

  private requestTimeout(): number {
    return Math.max(200, Math.floor(this.options.renewDeadlineMs / 2));
  }

  private async tryAcquireOrRenew(): Promise<Attempt> {
    const signal = this.abort.signal;
    const timeoutMs = this.requestTimeout();
    const got = await this.api.request<LeaseObject>('GET', this.ref, { signal, timeoutMs });
    if (!got.ok && got.status !== 404) return this.failed(`cannot read the lease: ${got.message}`);
    const now = Date.now();
    const { decision, observed } = decideLease(got.ok ? got.body : undefined, { identity: this.options.identity, now, leaseDurationMs: this.options.leaseDurationMs, ...(this.observed && { observed: this.observed }) });
    this.observed = observed;
    if (decision.action === 'wait') return 'follower';
    const body = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.options.name, namespace: this.options.namespace, ...(decision.action === 'update' && { resourceVersion: decision.resourceVersion }) },
      spec: decision.spec,
    };
    const written =
      decision.action === 'create'
        ? await this.api.request('POST', { ...this.ref, name: undefined }, { body, signal, timeoutMs })
        : await this.api.request('PUT', this.ref, { body, signal, timeoutMs });
    if (written.ok) return 'leader';
    // Another replica wrote first: it leads.
    if (written.status === 409) return 'follower';
    return this.failed(`cannot write the lease: ${written.message}`);
  }

  private failed(message: string): Attempt {
    if (!this.stopped) this.options.onNotice?.({ leader: this.leader.value, message });
    return 'error';
  }

  private async release(): Promise<void> {
    const timeoutMs = this.requestTimeout();
    const got = await this.api.request<LeaseObject>('GET', this.ref, { timeoutMs });
    if (!got.ok || got.body.spec?.holderIdentity !== this.options.identity) return;
    const now = microTime(Date.now());
    const released = await this.api.request('PUT', this.ref, {
      timeoutMs,
      body: {
        ...got.body,
        spec: { ...got.body.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
      },
    });
    this.options.onNotice?.({ leader: false, message: released.ok ? 'released the lease' : `could not release the lease: ${released.message}` });
  }
}
