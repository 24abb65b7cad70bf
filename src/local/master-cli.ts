import { type Socket, createConnection } from 'node:net';

/**
 * Sends one command to a haproxy CLI socket (master or stats) and returns the whole
 * answer: haproxy closes the connection after a command in non-interactive mode.
 */
export function cliCommand(socketPath: string, command: string, timeoutMs = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = createConnection(socketPath);
    const timer = setTimeout(() => socket.destroy(new Error(`no answer to "${firstWords(command)}" within ${timeoutMs} ms`)), timeoutMs);
    socket.on('connect', () => socket.end(`${command}\n`));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', (hadError) => {
      clearTimeout(timer);
      if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** Why a command cannot be sent as it is: a line break outside a payload, or an empty payload line. */
function commandProblem(command: string): string | undefined {
  if (command.includes('\r')) return 'a CLI command cannot carry a carriage return';
  const lines = command.split('\n');
  if (lines.length === 1) return undefined;
  if (!lines[0]!.endsWith(' <<')) return 'a CLI command cannot carry a line break, except after "<<" for its payload';
  if (lines.slice(1).some((l) => l.trim() === '')) return 'a CLI payload cannot carry an empty line, which would end it';
  return undefined;
}

/** Command names only, so map values or addresses never end up in an error message. */
function firstWords(command: string): string {
  return command.split(/\s+/).slice(0, 3).join(' ');
}

export interface ProcInfo {
  masterPid: number;
  reloads: number;
  failedReloads: number;
  workers: { pid: number; reloads: number }[];
}

/** Parses the master CLI's `show proc`. */
export function parseShowProc(text: string): ProcInfo | undefined {
  let info: ProcInfo | undefined;
  let section = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('# ')) section = line.slice(2).trim();
    const master = /^(\d+)\s+master\s+(\d+)\s+\[failed:\s*(\d+)\]/.exec(line);
    if (master) {
      info = { masterPid: Number(master[1]), reloads: Number(master[2]), failedReloads: Number(master[3]), workers: [] };
      continue;
    }
    const worker = /^(\d+)\s+worker\s+(\d+)/.exec(line);
    if (worker && info && section === 'workers') info.workers.push({ pid: Number(worker[1]), reloads: Number(worker[2]) });
  }
  return info;
}

/** The master CLI's prompt in interactive mode, at the start of a line: "master> " (later versions add "[…]"). */
const PROMPT = /(?:^|\n)master(?:\[[^\]\n]*\])?> /;

interface Pending {
  command: string;
  resolve: (reply: string) => void;
  reject: (err: Error) => void;
}

/**
 * One connection to a haproxy master CLI, kept open in interactive mode (`prompt`), over
 * which commands are pipelined: each is written at once, and the answers come back in
 * order, each ended by the next prompt. Opening a connection per command costs more than
 * the command: a thousand `add server` take about three times as long that way.
 *
 * The master drops every connection when it reloads (it re-executes itself) or stops;
 * commands waiting for an answer then fail, and the next command connects again. An
 * answer that does not come within the timeout closes the connection and fails every
 * command still waiting on it, since the order of answers cannot be trusted after that.
 */
export class CliSession {
  private readonly socketPath: string;
  private readonly timeoutMs: number;
  private socket: Socket | undefined;
  private pending: Pending[] = [];
  private buffer = '';
  /** The prompt that answers `prompt` itself has not come yet. */
  private awaitingFirstPrompt = false;
  private timer: NodeJS.Timeout | undefined;
  /** Told when no command waits for its answer any more. */
  private idlers: (() => void)[] = [];

  constructor(socketPath: string, options: { timeoutMs?: number } = {}) {
    this.socketPath = socketPath;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  /**
   * Sends one command; resolves with its answer. Commands sent together are pipelined.
   * A command may carry a payload: its first line ends with ` <<`, the lines after it
   * are the payload, none of them empty (an empty line ends it, and is sent here).
   */
  send(command: string): Promise<string> {
    const problem = commandProblem(command);
    if (problem) return Promise.reject(new RangeError(problem));
    const payload = command.includes('\n');
    return new Promise<string>((resolve, reject) => {
      this.pending.push({ command, resolve, reject });
      const socket = this.connection();
      // The commands sent in one turn go out in one write, not one write each (thousands in a burst).
      if (socket.writableCorked === 0) {
        socket.cork();
        process.nextTick(() => socket.uncork());
      }
      socket.write(payload ? `${command}\n\n` : `${command}\n`);
      // The timer runs for the oldest command: one sent behind it does not give it more time.
      if (!this.timer) this.arm();
    });
  }

  /** Resolves once every command sent so far has its answer (or has failed). */
  idle(): Promise<void> {
    if (this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idlers.push(resolve));
  }

  /** Closes the connection; commands still waiting fail. */
  close(): void {
    this.socket?.destroy();
    this.drop(new Error('the CLI session was closed'));
  }

  private connection(): Socket {
    if (this.socket) return this.socket;
    const socket = createConnection(this.socketPath);
    this.socket = socket;
    this.buffer = '';
    this.awaitingFirstPrompt = true;
    socket.setEncoding('utf8');
    socket.write('prompt\n');
    socket.on('data', (chunk: string) => {
      if (this.socket !== socket) return;
      this.buffer += chunk;
      this.take();
    });
    socket.on('error', (err) => {
      if (this.socket === socket) this.drop(err);
    });
    socket.on('close', () => {
      if (this.socket === socket) this.drop(new Error('the haproxy master closed the CLI connection'));
    });
    return socket;
  }

  /** Hands out every complete answer in the buffer. */
  private take(): void {
    for (let m = PROMPT.exec(this.buffer); m; m = PROMPT.exec(this.buffer)) {
      const reply = this.buffer.slice(0, m.index + (m[0].startsWith('\n') ? 1 : 0));
      this.buffer = this.buffer.slice(m.index + m[0].length);
      if (this.awaitingFirstPrompt) {
        this.awaitingFirstPrompt = false;
        continue;
      }
      this.pending.shift()?.resolve(reply);
    }
    this.arm();
    if (this.pending.length === 0) this.wakeIdlers();
  }

  private wakeIdlers(): void {
    for (const resolve of this.idlers.splice(0)) resolve();
  }

  /** A timer for the oldest command still waiting; none when nothing waits. */
  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const oldest = this.pending[0];
    if (!oldest) return;
    this.timer = setTimeout(() => {
      this.socket?.destroy();
      this.drop(new Error(`no answer to "${firstWords(oldest.command)}" within ${this.timeoutMs} ms`));
    }, this.timeoutMs);
  }

  private drop(err: Error): void {
    this.socket = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const waiting = this.pending;
    this.pending = [];
    for (const p of waiting) p.reject(err);
    this.wakeIdlers();
  }
}
