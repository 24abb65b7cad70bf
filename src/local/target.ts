import { mkdir } from 'node:fs/promises';
import type { InstanceOutcome } from '../events.ts';
import { type Plan, type RuntimeOp, planDeploymentSteps } from '../haproxy/plan.ts';
import { crtListLineNumber, parsePreparedVersion, prepareMapCommand, replySucceeded, replyText, runtimeCommands, showCrtListCommand } from '../haproxy/runtime-commands.ts';
import { readdOps } from '../haproxy/server-readd.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { HaproxyProcess, type HaproxyProcessOptions } from './haproxy-process.ts';
import { writeStateFiles } from './state-files.ts';
import { nextTurn, runInTurns } from '../turns.ts';

const STILL_CONNECTED = /still has connections/i;
const DELETE_RETRY_MS = 1_000;
const DELETE_ATTEMPTS = 120;
/** Fast plans with more runtime operations than this are applied on a turn of their own. */
const TURN_OVER_OPS = 32;
/** Runtime operations turned into commands and written in one turn (a few milliseconds' work). */
const OPS_PER_TURN = 256;

export interface LocalTargetOptions extends Omit<HaproxyProcessOptions, 'onExit'> {
  /** Told about each step, for logs. */
  onStep?: (step: { kind: 'start' | 'reload' | 'runtime' | 'fallback'; detail: string }) => void;
  /** Told when haproxy stopped on its own, and when it runs again. */
  onHealth?: (health: TargetHealth) => void;
}

export type TargetHealth = { up: false; cause: string } | { up: true; cause: string; downMs: number };

/** Restarts follow each other this closely at most: 0, then 250 ms doubling up to 30 s. */
const RESTART_BACKOFF_MS = [0, 250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000];
/** A haproxy that ran this long before it stopped is restarted at once again. */
const STABLE_MS = 10_000;

/**
 * A haproxy on this machine that haprx starts and drives. A deployment is planned
 * against the configuration the process runs: runtime operations through the
 * runtime API when the plan allows, otherwise the files are written and haproxy
 * reloads. A refused reload puts the previous files back, so the state directory
 * always holds what is running. Deployments to the target never overlap.
 */
export class LocalTarget {
  readonly haproxy: HaproxyProcess;
  private readonly options: LocalTargetOptions;
  /**
   * What haproxy runs; between deployments the state folder holds its files too, so a
   * deployment writes only the files that differ from it.
   */
  private running: RenderedConfig | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * `del server` commands haproxy refused because connections were still attached
   * (an idle keep-alive, a request in flight). The server is in maintenance and takes
   * no new traffic, so instead of reloading the deletion is retried until it goes.
   * Wanted again meanwhile, it is taken back into rotation (server-readd.ts).
   */
  private readonly pendingDeletes = new Map<string, { command: string; attempts: number; settings: string[] | undefined }>();
  private retryTimer: NodeJS.Timeout | undefined;
  /**
   * Why the running haproxy differs from `running`: runtime commands of a deployment
   * that failed went in, and the reload that should have settled them was refused. Only
   * a reload (or a start) makes it match again, so the next deployment reloads.
   */
  private unsettled: string | undefined;
  /** Set while haproxy is down after stopping on its own: since when, and why. */
  private down: { since: number; cause: string } | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** The start a check made, until the deployment of its configuration reports it. */
  private startedByCheck: { hash: string; outcome: InstanceOutcome } | undefined;
  private restartAttempt = 0;
  private startedAt = 0;
  private stopped = false;

  constructor(options: LocalTargetOptions) {
    this.options = options;
    this.haproxy = new HaproxyProcess({ ...options, onExit: (cause) => this.exited(cause) });
  }

  /** The configuration the process runs now. */
  get current(): RenderedConfig | undefined {
    return this.running;
  }

  /**
   * Deploys a configuration. With `fast` (the fast path's runtime operations from the
   * configuration hashed `from`), it is applied at runtime or not at all: never by a
   * reload, since haproxy -c has not seen it; the full deployment that follows does what
   * is left.
   */
  deploy(config: RenderedConfig, fast?: { from: string; ops: readonly RuntimeOp[] }): Promise<InstanceOutcome> {
    return this.enqueue(() => (fast ? this.applyFast(config, fast) : this.apply(config))).catch((err: unknown) => ({ ok: false, reloaded: false, runtimeOps: 0, error: (err as Error).message }));
  }

  /**
   * Starts haproxy on a configuration as its check (the Validator's `start`): only while
   * haproxy has never run here, so that no configuration is serving that this one could
   * replace. Answers what haproxy printed when it started; nothing when it did not start
   * (haproxy -c then gives the verdict) or when haproxy has run here before. The
   * deployment of the same configuration that follows reports that start as its own.
   */
  checkByStarting(config: RenderedConfig): Promise<{ output: string } | undefined> {
    return this.enqueue(async () => {
      if (this.running !== undefined || this.haproxy.running || this.stopped) return undefined;
      const output: string[] = [];
      const outcome = await this.start(config, output);
      if (!outcome.ok) return undefined;
      this.startedByCheck = { hash: config.hash, outcome };
      return { output: output.join('\n') };
    }).catch(() => undefined);
  }

  /** Runs `work` after everything queued before it: nothing that touches haproxy overlaps. */
  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const result = this.queue.then(work);
    this.queue = result.catch(() => undefined);
    return result;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.queue;
    await this.haproxy.stop();
  }

  /** Servers whose deletion is still waiting for their connections to go. */
  get deletionsPending(): readonly string[] {
    return [...this.pendingDeletes.keys()];
  }

  private async apply(config: RenderedConfig): Promise<InstanceOutcome> {
    const started = this.startedByCheck;
    this.startedByCheck = undefined;
    if (!this.haproxy.running) return this.start(config);
    // Its check started haproxy on it, and nothing came between: that start was this deployment.
    if (started?.hash === config.hash && this.running?.hash === config.hash) return started.outcome;
    // The plan (tens of ms for a new configuration at 10k backends, over 100 when its maps
    // are read) starts on a turn of its own, not in one stretch with what led here in the
    // same turn, and runs in slices: /healthz is answered in between.
    await nextTurn();
    const planned = await runInTurns(planDeploymentSteps(this.running, config));
    const plan: Plan = this.unsettled && planned.kind !== 'reload' ? { kind: 'reload', reasons: [`haproxy still holds runtime changes of a deployment that failed (${this.unsettled})`], after: [] } : planned;
    switch (plan.kind) {
      case 'none':
        // Another text that runs the same (a map in another order: what a full render does after
        // the fast path appended an entry) becomes the running one, on disk too: the next fast
        // path plans from this render, and from anything else the plan is done again in full.
        if (this.running?.hash !== config.hash) {
          await writeStateFiles(this.options.stateDir, config, this.running);
          this.running = config;
        }
        return { ok: true, reloaded: false, runtimeOps: 0 };
      case 'runtime': {
        const failure = await this.runtime(plan.ops);
        if (failure === undefined) {
          await writeStateFiles(this.options.stateDir, config, this.running);
          this.running = config;
          return { ok: true, reloaded: false, runtimeOps: plan.ops.length };
        }
        // The runtime state is now partly changed; a reload on the new files settles it.
        this.step('fallback', failure);
        const outcome = await this.reload(config, { kind: 'reload', reasons: [failure], after: [] });
        if (!outcome.reloaded) this.unsettled = failure;
        return outcome;
      }
      case 'reload':
        return this.reload(config, plan);
    }
  }

  private async applyFast(config: RenderedConfig, fast: { from: string; ops: readonly RuntimeOp[] }): Promise<InstanceOutcome> {
    if (!this.haproxy.running || !this.running) return { ok: false, reloaded: false, runtimeOps: 0, error: 'fast path: haproxy is not running a configuration yet' };
    if (this.unsettled) return { ok: false, reloaded: false, runtimeOps: 0, error: 'fast path: haproxy still holds runtime changes of a deployment that failed; left to the full deployment' };
    // Planned from what this instance runs: apply as planned; from anything else, plan again.
    const plan: Plan = this.running.hash === fast.from ? { kind: 'runtime', ops: [...fast.ops] } : await runInTurns(planDeploymentSteps(this.running, config));
    if (plan.kind === 'none') {
      this.running = config;
      return { ok: true, reloaded: false, runtimeOps: 0 };
    }
    if (plan.kind === 'reload') return { ok: false, reloaded: false, runtimeOps: 0, error: `fast path: ${plan.reasons[0] ?? 'needs a reload'}; left to the full deployment` };
    // Many commands (a burst at 10k: 1,000 of them, some 50 ms to build and send) start on a
    // turn of their own, not in one stretch with the plan that led here: /healthz is
    // answered in between. One change's few go at once.
    if (plan.ops.length > TURN_OVER_OPS) await nextTurn();
    const failure = await this.runtime(plan.ops);
    // What failed stays for the full deployment, which plans from what ran before.
    if (failure !== undefined) return { ok: false, reloaded: false, runtimeOps: 0, error: `fast path: ${failure}` };
    await writeStateFiles(this.options.stateDir, config, this.running);
    this.running = config;
    return { ok: true, reloaded: false, runtimeOps: plan.ops.length };
  }

  private async start(config: RenderedConfig, output?: string[]): Promise<InstanceOutcome> {
    await mkdir(this.options.stateDir, { recursive: true, mode: 0o700 });
    await writeStateFiles(this.options.stateDir, config);
    this.step('start', this.options.stateDir);
    // What follows the start is planned while haproxy reads the configuration (at 10k
    // backends that takes it most of a second); if planning fails there, it is planned
    // again below, where a failure counts as it always did.
    // In turns: haproxy's start is polled meanwhile, and /healthz answered.
    const planStart = () => runInTurns(planDeploymentSteps(undefined, config));
    let planning: Promise<Plan | undefined> | undefined;
    try {
      await this.haproxy.start(() => {
        planning = planStart().catch(() => undefined);
      }, output);
    } catch (err) {
      // The state directory goes on holding the last configuration haproxy took, for the next restart.
      if (this.running && this.running !== config) await writeStateFiles(this.options.stateDir, this.running, config);
      if (this.down) this.scheduleRestart();
      return { ok: false, reloaded: false, runtimeOps: 0, error: (err as Error).message };
    }
    this.running = config;
    this.startedAt = Date.now();
    this.pendingDeletes.clear();
    this.unsettled = undefined;
    if (this.down) {
      const { since, cause } = this.down;
      this.down = undefined;
      if (this.restartTimer) clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
      this.options.onHealth?.({ up: true, cause, downMs: Date.now() - since });
    }
    // Planned again when planning failed above: here a failure counts.
    const plan = (await planning) ?? (await planStart());
    const after = plan.kind === 'reload' ? plan.after : [];
    await this.runtime(after);
    return { ok: true, reloaded: true, runtimeOps: after.length };
  }

  private async reload(config: RenderedConfig, plan: Extract<Plan, { kind: 'reload' }>): Promise<InstanceOutcome> {
    const previous = this.running;
    await writeStateFiles(this.options.stateDir, config, previous);
    this.step('reload', plan.reasons.join('; '));
    const result = await this.haproxy.reload();
    // The new process starts from the files: nothing is left to delete, nothing differs.
    if (result.ok) {
      this.pendingDeletes.clear();
      this.unsettled = undefined;
    }
    if (!result.ok) {
      if (previous) await writeStateFiles(this.options.stateDir, previous, config);
      return { ok: false, reloaded: false, runtimeOps: 0, error: result.message };
    }
    this.running = config;
    const failure = await this.runtime(plan.after);
    return failure === undefined
      ? { ok: true, reloaded: true, runtimeOps: plan.after.length }
      : { ok: false, reloaded: true, runtimeOps: 0, error: `reloaded, but ${failure}` };
  }

  /**
   * Applies runtime operations in order; returns what failed, if anything did. Every
   * command is sent at once over the one runtime connection, and the answers are read
   * in order afterwards: commands after a failed one still run, which is harmless,
   * since a failure falls back to a reload of the new files.
   */
  private async runtime(planned: readonly RuntimeOp[]): Promise<string | undefined> {
    const ops = await this.takeBack(planned);
    if (typeof ops === 'string') return ops;
    const mapVersions = new Map<RuntimeOp, number>();
    const crtListLines = new Map<RuntimeOp, number>();
    for (const op of ops) {
      if (op.kind === 'map-replace') {
        // haproxy allocates the version the entries are added to: one round trip first.
        const reply = await this.haproxy.runtime(prepareMapCommand(op));
        const version = parsePreparedVersion(reply);
        if (version === undefined) return `prepare map ${op.ref} failed: ${reply.trim()}`;
        mapVersions.set(op, version);
      }
      if (op.kind === 'crt-list-del' && op.entry !== undefined) {
        // An edited line is deleted by its number, which the line added before it does not change.
        const reply = await this.haproxy.runtime(showCrtListCommand(op));
        const number = crtListLineNumber(reply, op.entry);
        if (number === undefined) return `crt-list ${op.list}: the running haproxy has no line "${op.entry}"`;
        crtListLines.set(op, number);
      }
    }
    const sent: { op: RuntimeOp; command: string; reply: Promise<string> }[] = [];
    for (const [i, op] of ops.entries()) {
      // Thousands of commands (a burst at 10k backends) are written a few hundred per turn: the
      // loop answers in between, and haproxy starts on the first ones meanwhile.
      if (i > 0 && i % OPS_PER_TURN === 0) await nextTurn();
      for (const command of runtimeCommands(op, { mapVersion: mapVersions.get(op), crtListLine: crtListLines.get(op) })) sent.push({ op, command, reply: this.haproxy.runtime(command) });
    }
    // Every answer is awaited, so none is left to fail unobserved.
    const replies = await Promise.allSettled(sent.map((s) => s.reply));
    let failure: string | undefined;
    for (const [i, { op, command }] of sent.entries()) {
      const settled = replies[i]!;
      const reply = settled.status === 'fulfilled' ? settled.value : '';
      if (failure !== undefined) continue;
      if (settled.status === 'rejected') {
        failure = `runtime command "${command.split(' ').slice(0, 3).join(' ')}" failed: ${(settled.reason as Error).message}`;
        continue;
      }
      if (op.kind === 'server-del' && command.startsWith('del server ') && STILL_CONNECTED.test(reply)) {
        this.pendingDeletes.set(`${op.backend}/${op.server}`, { command, attempts: 0, settings: op.settings });
        this.scheduleRetry();
      } else if (!replySucceeded(command, reply)) {
        failure = `runtime command "${command.split(' ').slice(0, 3).join(' ')}" failed: ${replyText(reply) || 'no answer'}`;
        continue;
      }
      // The op's last command answered well: the op is done.
      if (sent[i + 1]?.op !== op) this.step('runtime', `${op.kind} ${'backend' in op ? `${op.backend}/${op.server}` : 'map' in op ? op.map : 'list' in op ? `${op.list} ${op.cert}` : op.cert}`);
    }
    return failure;
  }

  /**
   * The operations with each add of a server whose name is still taken by one waiting
   * to be deleted replaced: by nothing when it went meanwhile, else by taking that one
   * back; or why it can be neither.
   */
  private async takeBack(planned: readonly RuntimeOp[]): Promise<RuntimeOp[] | string> {
    const ops: RuntimeOp[] = [];
    for (const op of planned) {
      const key = op.kind === 'server-add' ? `${op.backend}/${op.server}` : '';
      if (op.kind === 'server-add' && this.pendingDeletes.has(key)) await this.retryDeletes();
      const pending = this.pendingDeletes.get(key);
      if (op.kind !== 'server-add' || !pending) {
        ops.push(op);
        continue;
      }
      const readd = readdOps(pending, op);
      if ('reason' in readd) return `server ${key} is still being deleted (${readd.reason})`;
      // No longer pending before anything is sent, so that no later retry deletes it.
      this.pendingDeletes.delete(key);
      ops.push(...readd.ops);
    }
    return ops;
  }

  /** haproxy stopped on its own: say so, and restart it with the configuration it last took. */
  private exited(cause: string): void {
    if (this.stopped) return;
    if (Date.now() - this.startedAt >= STABLE_MS) this.restartAttempt = 0;
    this.down ??= { since: Date.now(), cause };
    this.options.onHealth?.({ up: false, cause });
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.stopped || this.restartTimer) return;
    const delay = RESTART_BACKOFF_MS[Math.min(this.restartAttempt++, RESTART_BACKOFF_MS.length - 1)]!;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.enqueue(() => this.restart());
    }, delay);
  }

  private async restart(): Promise<void> {
    // A deployment may have started it meanwhile; nothing was ever started, nothing to restart.
    if (this.stopped || !this.down || this.haproxy.running || !this.running) return;
    const outcome = await this.start(this.running);
    if (!outcome.ok && this.down) this.options.onHealth?.({ up: false, cause: `${this.down.cause}; restarting failed: ${outcome.error ?? 'unknown error'}` });
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.pendingDeletes.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.enqueue(() => this.retryDeletes()).finally(() => this.scheduleRetry());
    }, DELETE_RETRY_MS);
    this.retryTimer.unref();
  }

  private async retryDeletes(): Promise<void> {
    if (!this.haproxy.running) return this.pendingDeletes.clear();
    for (const [server, pending] of this.pendingDeletes) {
      const reply = await this.haproxy.runtime(pending.command).catch(() => '');
      if (replySucceeded(pending.command, reply) || /No such server|No such backend/i.test(reply)) {
        this.pendingDeletes.delete(server);
        this.step('runtime', `server-del ${server} (retried)`);
      } else if (++pending.attempts >= DELETE_ATTEMPTS) {
        // Gave up: the server stays in maintenance until the next reload removes it.
        this.pendingDeletes.delete(server);
        this.step('fallback', `server ${server} kept its connections; it stays in maintenance until the next reload`);
      }
    }
  }

  private step(kind: 'start' | 'reload' | 'runtime' | 'fallback', detail: string): void {
    this.options.onStep?.({ kind, detail });
  }
}
