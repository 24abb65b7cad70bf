/**
 * The Data Plane API double's reload agent: reloads are batched like the real
 * API's (a change made while a reload is pending gets the pending reload's ID;
 * pending reloads run after `delayMs`), IDs look like `YYYY-MM-DD-N`, a failed
 * reload puts the last known good configuration file back, and status lookups
 * answer as the real agent does (in_progress / succeeded / failed, unknown → none).
 */
import { readFile, writeFile } from 'node:fs/promises';

export interface ReloadRecord {
  id: string;
  status: 'in_progress' | 'succeeded' | 'failed';
  response?: string;
  reload_timestamp?: number;
}

export interface ReloadAgentDeps {
  /** Reloads haproxy on the configuration file as it is now. */
  reload(): Promise<{ ok: true } | { ok: false; message: string }>;
  configFile: string;
  delayMs: number;
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export class ReloadAgent {
  /** The configuration file as of the last successful reload (or the start). */
  lastKnownGood: string;
  private index = 0;
  private next: string | undefined;
  private current: string | undefined;
  private lastSuccess: ReloadRecord | undefined;
  private readonly failed = new Map<string, ReloadRecord>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private readonly deps: ReloadAgentDeps;
  private readonly waiters: (() => void)[] = [];

  constructor(deps: ReloadAgentDeps, initialConfig: string) {
    this.deps = deps;
    this.lastKnownGood = initialConfig;
  }

  /** Schedules a reload, or joins the pending one; returns its ID. */
  schedule(): string {
    if (this.next !== undefined) return this.next;
    this.next = `${today()}-${this.index++}`;
    this.arm();
    return this.next;
  }

  /** Runs the pending reload now (force_reload); resolves with its outcome. */
  async force(): Promise<{ ok: true } | { ok: false; message: string }> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    const id = this.next ?? 'force';
    this.next = undefined;
    return this.runOne(id);
  }

  get(id: string): ReloadRecord | undefined {
    if (id === this.current || id === this.next) return { id, status: 'in_progress' };
    const failed = this.failed.get(id);
    if (failed) return failed;
    if (!this.lastSuccess) return undefined;
    if (this.lastSuccess.id === id) return this.lastSuccess;
    const asked = parseId(id);
    const success = parseId(this.lastSuccess.id);
    if (!asked || !success) return undefined;
    // Older than the last success, and not failed: it succeeded.
    if (asked.date < success.date || (asked.date === success.date && asked.index < success.index)) return { id, status: 'succeeded' };
    return undefined;
  }

  list(): ReloadRecord[] {
    const out = [...this.failed.values()];
    if (this.lastSuccess) out.push(this.lastSuccess);
    if (this.current) out.push({ id: this.current, status: 'in_progress' });
    if (this.next) out.push({ id: this.next, status: 'in_progress' });
    return out;
  }

  /** Resolves once nothing is pending or running. */
  async idle(): Promise<void> {
    while (this.next !== undefined || this.current !== undefined) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Cancels the pending reload; resolves once a reload that is running has ended. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running.catch(() => undefined);
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.running
        .then(async () => {
          const id = this.next;
          if (id === undefined) return;
          this.next = undefined;
          await this.runOne(id);
          if (this.next !== undefined) this.arm();
        })
        // A double being stopped may lose its files under a reload: nothing to report.
        .catch(() => undefined);
    }, this.deps.delayMs);
  }

  private async runOne(id: string): Promise<{ ok: true } | { ok: false; message: string }> {
    this.current = id;
    let result: { ok: true } | { ok: false; message: string };
    try {
      result = await this.deps.reload();
    } catch (err) {
      result = { ok: false, message: (err as Error).message };
    }
    const now = Math.floor(Date.now() / 1000);
    if (result.ok) {
      this.lastKnownGood = await readFile(this.deps.configFile, 'utf8');
      this.lastSuccess = { id, status: 'succeeded', response: '', reload_timestamp: now };
    } else {
      // As the real agent does: the file goes back to the last configuration haproxy took.
      await writeFile(this.deps.configFile, this.lastKnownGood);
      this.failed.set(id, { id, status: 'failed', response: result.message, reload_timestamp: now });
    }
    this.current = undefined;
    for (const wake of this.waiters.splice(0)) wake();
    return result;
  }
}

function parseId(id: string): { date: string; index: number } | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})-(\d+)$/.exec(id);
  return m ? { date: m[1]!, index: Number(m[2]) } : undefined;
}
