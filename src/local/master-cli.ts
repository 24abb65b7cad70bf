import { createConnection } from 'node:net';

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
