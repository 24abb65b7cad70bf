/** `haprx local` as a child process with its health, debug and metrics ports, for the observability tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { freePort } from '../support/ports.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface LocalHaprx {
  child: ChildProcess;
  healthPort: number;
  metricsPort: number;
  debugPort: number;
  /** Every line haprx wrote, stdout and stderr. */
  output: string[];
  /** The JSON log records among them. */
  records(): { msg: string; event?: string; level: number; [field: string]: unknown }[];
  stop(): Promise<number | null>;
}

export async function startLocal(args: string[], env: NodeJS.ProcessEnv = {}): Promise<LocalHaprx> {
  const healthPort = await freePort();
  const metricsPort = await freePort();
  const debugPort = await freePort();
  // src/cli/main.ts rather than bin/haprx.js: a stale dist/ in the work tree must not stand in for the source.
  const child = spawn(process.execPath, ['src/cli/main.ts', 'local', ...args, '--health-port', String(healthPort), '--metrics-port', String(metricsPort), '--debug-port', String(debugPort)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HAPRX_LOG_LEVEL: 'debug', ...env },
  });
  const output: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => output.push(line));
  return {
    child,
    healthPort,
    metricsPort,
    debugPort,
    output,
    records: () =>
      output.flatMap((line) => {
        if (!line.startsWith('{')) return [];
        try {
          return [JSON.parse(line) as { msg: string; event?: string; level: number }];
        } catch {
          return [];
        }
      }),
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    },
  };
}

export { fetchText } from '../support/fetch-text.ts';
export { until } from '../support/until.ts';
