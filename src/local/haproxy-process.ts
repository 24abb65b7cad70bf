import { type ChildProcess, spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliSession, type ProcInfo, cliCommand, parseShowProc } from './master-cli.ts';

/** How often a reload is asked after: its end is seen at most this late. */
const RELOAD_POLL_MS = 5;

export interface HaproxyProcessOptions {
  bin: string;
  /** Holds haproxy.cfg and its aux files; haproxy runs with it as working directory. */
  stateDir: string;
  /** How long a start may take until the first worker runs; default 60 s. */
  startTimeoutMs?: number;
  /** How long a reload may take until show proc confirms it; default 60 s. */
  reloadTimeoutMs?: number;
  /** Receives haproxy's own output, line by line. */
  onOutput?: (line: string) => void;
  /**
   * Told when a haproxy that had started stops without being asked to (its master was
   * killed, or a worker died and the master followed), with what haproxy said about it.
   */
  onExit?: (cause: string) => void;
}

export type ReloadResult = { ok: true } | { ok: false; message: string };

const KEEP_LINES = 200;
/** The most of its output a start hands to the caller that asked for it. */
const COLLECT_LIMIT = 4 * 1024 * 1024;

/** Runtime commands that only read. */
const READ = /^show\s/;

/**
 * One haproxy in master-worker mode, driven through its master CLI: runtime
 * commands go to the current worker (`@1 …`), reloads to the master. HAProxy 2.6's
 * master `reload` answers nothing, so the outcome is read from `show proc`: the
 * reload counter moves, and the failed counter with it when the new config was
 * refused — haproxy's reasons are the ALERT lines it printed meanwhile.
 */
export class HaproxyProcess {
  readonly masterSocket: string;
  private readonly options: Required<Omit<HaproxyProcessOptions, 'onOutput' | 'onExit'>> & Pick<HaproxyProcessOptions, 'onOutput' | 'onExit'>;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private output: string[] = [];
  private outputSeq = 0;
  private stopping = false;
  /** Output number when the running haproxy became ready, or last finished a reload: later ALERTs explain an exit. */
  private readyMark = 0;
  /** Runtime commands share one pipelined connection per running master. */
  private session: CliSession | undefined;

  constructor(options: HaproxyProcessOptions) {
    // haproxy reads the whole configuration before it answers: at 10k certificates that
    // took 6.8 s to start and 6.6-7.9 s to reload on two cores, and a busier machine takes
    // longer. A haproxy that exits is seen at once whatever these are.
    this.options = { startTimeoutMs: 60_000, reloadTimeoutMs: 60_000, ...options };
    this.masterSocket = join(options.stateDir, 'master.sock');
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Lines printed during a start that asked for them (`start`'s `output`), and their size so far. */
  private collecting: { lines: string[]; bytes: number } | undefined;

  /**
   * Starts haproxy and waits until its first worker runs. `whileStarting` runs once
   * haproxy has been spawned: work that can go on while haproxy reads its configuration.
   * `output` receives the lines haproxy prints until it runs (or fails to start), up to
   * 4 MiB of them, as much as a check's output is read (a configuration can make haproxy
   * warn about each of 10k backends).
   */
  async start(whileStarting?: () => void, output?: string[]): Promise<void> {
    this.collecting = output && { lines: output, bytes: 0 };
    try {
      await this.spawnMaster(whileStarting);
    } finally {
      this.collecting = undefined;
    }
  }

  private async spawnMaster(whileStarting?: () => void): Promise<void> {
    this.closeSession();
    // A haproxy left behind by a previous run that was killed would hold the ports.
    await stopLeftHaproxy(this.options.stateDir);
    await rm(this.masterSocket, { force: true });
    // Only what this process prints explains why it did not start.
    const mark = this.outputSeq;
    const child = spawn(this.options.bin, ['-W', '-S', this.masterSocket, '-f', 'haproxy.cfg', '-p', 'haproxy.pid'], {
      cwd: this.options.stateDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.stopping = false;
    let started = false;
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    // A binary that cannot be spawned fires 'error' and never 'exit'.
    this.exited = new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
    child.once('exit', (code, signal) => {
      if (!started || this.stopping) return;
      // What the master printed about it arrives with the last output, before the pipes close.
      void Promise.race([closed, sleep(50)]).then(() => {
        if (!this.stopping && this.child === child) this.options.onExit?.(this.describeExit(child.pid, code, signal));
      });
    });
    child.once('error', (err) => this.record(`cannot start ${this.options.bin}: ${err.message}`));
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line.trim()) this.record(line);
      });
    }
    whileStarting?.();
    const deadline = Date.now() + this.options.startTimeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) {
        await this.exited;
        throw new Error(`haproxy did not start: ${this.alerts(mark) || this.output.slice(Math.max(0, this.output.length - (this.outputSeq - mark))).slice(-5).join('\n') || `exit ${child.exitCode ?? child.signalCode}`}`);
      }
      const proc = await this.showProc().catch(() => undefined);
      if (proc && proc.workers.length > 0) {
        started = true;
        this.readyMark = this.outputSeq;
        return;
      }
      await sleep(25);
    }
    await this.stop();
    throw new Error(`haproxy did not start within ${this.options.startTimeoutMs} ms`);
  }

  /**
   * Sends a runtime API command to the current worker. Commands sent without waiting
   * for each other's answers are pipelined over one connection, answered in order.
   *
   * A `show` goes on a connection of its own, whose close ends the answer, once every
   * command sent before it has its answer (so that it reads what they did). A read can
   * answer megabytes (a map of 20k entries, the crt-list of 10k certificates), and
   * haproxy 2.6's master CLI at times leaves the prompt off after such an answer: the
   * session, whose answers end at the prompt, then waited for it until its timeout.
   */
  async runtime(command: string): Promise<string> {
    this.session ??= new CliSession(this.masterSocket);
    if (!READ.test(command)) return this.session.send(`@1 ${command}`);
    await this.session.idle();
    return cliCommand(this.masterSocket, `@1 ${command}`);
  }

  async showProc(): Promise<ProcInfo> {
    const info = parseShowProc(await cliCommand(this.masterSocket, 'show proc'));
    if (!info) throw new Error('unexpected answer to show proc');
    return info;
  }

  /** Reloads the configuration on disk and reports whether haproxy took it. */
  async reload(): Promise<ReloadResult> {
    const before = await this.showProc();
    const mark = this.outputSeq;
    // The master drops its connections as it re-executes: later commands open a new one.
    this.closeSession();
    // The master re-executes itself and drops the connection: no answer to wait for.
    await cliCommand(this.masterSocket, 'reload').catch(() => '');
    const deadline = Date.now() + this.options.reloadTimeoutMs;
    while (Date.now() < deadline) {
      // Asking is cheap (one connection to the master); a new backend waits on this loop.
      await sleep(RELOAD_POLL_MS);
      if (!this.running) return { ok: false, message: `haproxy exited during the reload${this.alerts(mark) ? `: ${this.alerts(mark)}` : ''}` };
      const after = await this.showProc().catch(() => undefined);
      if (!after || after.reloads <= before.reloads) continue;
      if (after.failedReloads > before.failedReloads) {
        const message = this.alerts(mark) || 'haproxy refused the new configuration';
        this.readyMark = this.outputSeq;
        return { ok: false, message };
      }
      if (after.workers.some((w) => w.reloads === 0)) {
        this.readyMark = this.outputSeq;
        return { ok: true };
      }
    }
    return { ok: false, message: `no reload confirmed within ${this.options.reloadTimeoutMs} ms` };
  }

  /**
   * Tells haproxy to stop and returns at once (haprx exits right after): the master
   * stops its workers on SIGTERM. Nothing is left serving after haprx is gone.
   */
  kill(): void {
    this.stopping = true;
    if (this.child && this.running) this.child.kill('SIGTERM');
  }

  /** Stops haproxy and its workers: SIGTERM, then SIGKILL if it lingers. */
  async stop(): Promise<void> {
    const child = this.child;
    const running = this.running;
    this.closeSession();
    this.kill();
    if (!child || !running) return;
    // The bound must not outlive a haproxy that stopped at once: a pending timer would hold the process for its full length.
    const bound = new AbortController();
    const stopped = await Promise.race([this.exited.then(() => true), sleep(5_000, false, { signal: bound.signal }).catch(() => false)]);
    bound.abort();
    if (!stopped) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  private closeSession(): void {
    this.session?.close();
    this.session = undefined;
  }

  /** Recent output lines; for logs and failure messages. */
  recentOutput(): readonly string[] {
    return this.output;
  }

  private record(line: string): void {
    this.output.push(line);
    if (this.collecting && this.collecting.bytes + line.length < COLLECT_LIMIT) {
      this.collecting.lines.push(line);
      this.collecting.bytes += line.length + 1;
    }
    this.outputSeq++;
    if (this.output.length > KEEP_LINES) this.output.shift();
    this.options.onOutput?.(line);
  }

  /** ALERT lines printed since output number `mark`, without haproxy's pid prefix. */
  private alerts(mark: number): string {
    const fresh = this.output.slice(Math.max(0, this.output.length - (this.outputSeq - mark)));
    return fresh
      .filter((l) => l.includes('[ALERT]'))
      .map((l) => l.replace(/^\[ALERT\]\s+\(\d+\)\s*:\s*/, '').replace(/^config\s*:\s*/, ''))
      .join('\n');
  }

  /** Why the master went away: its signal or code, and the ALERT lines it printed since it was ready. */
  private describeExit(pid: number | undefined, code: number | null, signal: NodeJS.Signals | null): string {
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const said = this.alerts(this.readyMark).split('\n').filter(Boolean).slice(-2).join('; ');
    return `haproxy master (pid ${pid ?? '?'}) ${how}${said ? `: ${said}` : ''}`;
  }
}

/**
 * Stops the haproxy master that a haprx killed without its clean stop left running
 * from this state folder (its pid file names it; it is only ours if its command line
 * names this folder's master socket). haproxy binds with SO_REUSEPORT: left running,
 * it would share the ports with the next haproxy and answer with its old configuration.
 */
export async function stopLeftHaproxy(stateDir: string): Promise<void> {
  const pid = Number((await readFile(join(stateDir, 'haproxy.pid'), 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmdline.includes(join(stateDir, 'master.sock'))) return;
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100; i++) {
      await sleep(50);
      process.kill(pid, 0);
    }
  } catch {
    // Gone, or never ours.
  }
}
