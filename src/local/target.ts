import { mkdir } from 'node:fs/promises';
import type { InstanceOutcome } from '../events.ts';
import { type Plan, type RuntimeOp, planDeployment } from '../haproxy/plan.ts';
import { parsePreparedVersion, prepareMapCommand, replySucceeded, runtimeCommands } from '../haproxy/runtime-commands.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { HaproxyProcess, type HaproxyProcessOptions } from './haproxy-process.ts';
import { writeStateFiles } from './state-files.ts';

export interface LocalTargetOptions extends HaproxyProcessOptions {
  /** Told about each step, for logs. */
  onStep?: (step: { kind: 'start' | 'reload' | 'runtime' | 'fallback'; detail: string }) => void;
}

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
  private running: RenderedConfig | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: LocalTargetOptions) {
    this.options = options;
    this.haproxy = new HaproxyProcess(options);
  }

  /** The configuration the process runs now. */
  get current(): RenderedConfig | undefined {
    return this.running;
  }

  deploy(config: RenderedConfig): Promise<InstanceOutcome> {
    const result = this.queue.then(() => this.apply(config));
    this.queue = result.catch(() => undefined);
    return result.catch((err: unknown) => ({ ok: false, reloaded: false, runtimeOps: 0, error: (err as Error).message }));
  }

  async stop(): Promise<void> {
    await this.queue;
    await this.haproxy.stop();
  }

  private async apply(config: RenderedConfig): Promise<InstanceOutcome> {
    if (!this.haproxy.running) return this.start(config);
    const plan = planDeployment(this.running, config);
    switch (plan.kind) {
      case 'none':
        return { ok: true, reloaded: false, runtimeOps: 0 };
      case 'runtime': {
        const failure = await this.runtime(plan.ops);
        if (failure === undefined) {
          await writeStateFiles(this.options.stateDir, config);
          this.running = config;
          return { ok: true, reloaded: false, runtimeOps: plan.ops.length };
        }
        // The runtime state is now partly changed; a reload on the new files settles it.
        this.step('fallback', failure);
        return this.reload(config, { kind: 'reload', reasons: [failure], after: [] });
      }
      case 'reload':
        return this.reload(config, plan);
    }
  }

  private async start(config: RenderedConfig): Promise<InstanceOutcome> {
    await mkdir(this.options.stateDir, { recursive: true, mode: 0o700 });
    await writeStateFiles(this.options.stateDir, config);
    this.step('start', this.options.stateDir);
    try {
      await this.haproxy.start();
    } catch (err) {
      this.running = undefined;
      return { ok: false, reloaded: false, runtimeOps: 0, error: (err as Error).message };
    }
    this.running = config;
    const plan = planDeployment(undefined, config);
    const after = plan.kind === 'reload' ? plan.after : [];
    await this.runtime(after);
    return { ok: true, reloaded: true, runtimeOps: after.length };
  }

  private async reload(config: RenderedConfig, plan: Extract<Plan, { kind: 'reload' }>): Promise<InstanceOutcome> {
    const previous = this.running;
    await writeStateFiles(this.options.stateDir, config);
    this.step('reload', plan.reasons.join('; '));
    const result = await this.haproxy.reload();
    if (!result.ok) {
      if (previous) await writeStateFiles(this.options.stateDir, previous);
      return { ok: false, reloaded: false, runtimeOps: 0, error: result.message };
    }
    this.running = config;
    const failure = await this.runtime(plan.after);
    return failure === undefined
      ? { ok: true, reloaded: true, runtimeOps: plan.after.length }
      : { ok: false, reloaded: true, runtimeOps: 0, error: `reloaded, but ${failure}` };
  }

  /** Applies runtime operations in order; returns what failed, if anything did. */
  private async runtime(ops: readonly RuntimeOp[]): Promise<string | undefined> {
    for (const op of ops) {
      let mapVersion: number | undefined;
      if (op.kind === 'map-replace') {
        const reply = await this.haproxy.runtime(prepareMapCommand(op));
        mapVersion = parsePreparedVersion(reply);
        if (mapVersion === undefined) return `prepare map ${op.ref} failed: ${reply.trim()}`;
      }
      for (const command of runtimeCommands(op, { mapVersion })) {
        const reply = await this.haproxy.runtime(command);
        if (!replySucceeded(command, reply)) return `runtime command "${command.split(' ').slice(0, 3).join(' ')}" failed: ${reply.trim() || 'no answer'}`;
      }
      this.step('runtime', `${op.kind} ${'backend' in op ? `${op.backend}/${op.server}` : op.map}`);
    }
    return undefined;
  }

  private step(kind: 'start' | 'reload' | 'runtime' | 'fallback', detail: string): void {
    this.options.onStep?.({ kind, detail });
  }
}
