/** A Data Plane API double in a child process (see serve.ts), with the few handles timing tests need. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { cliCommand, parseShowProc } from '../../../src/local/master-cli.ts';
import type { DataplaneDoubleOptions } from './index.ts';

export interface RemoteDouble {
  url: string;
  configFile: string;
  masterSocket: string;
  reloadCounts(): Promise<{ reloads: number; failed: number }>;
  stop(): Promise<void>;
}

const SERVE = fileURLToPath(new URL('./serve.ts', import.meta.url));

export async function startRemoteDouble(options: DataplaneDoubleOptions = {}): Promise<RemoteDouble> {
  const child: ChildProcess = spawn(process.execPath, [SERVE, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  let buffer = '';
  const first = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      buffer += chunk;
      const nl = buffer.indexOf('\n');
      if (nl >= 0) resolve(buffer.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`the double exited with ${code} before it started`)));
  });
  const info = JSON.parse(first) as { url: string; configFile: string; masterSocket: string };
  return {
    ...info,
    async reloadCounts() {
      const proc = parseShowProc(await cliCommand(info.masterSocket, 'show proc'));
      if (!proc) throw new Error('unexpected answer to show proc');
      return { reloads: proc.reloads, failed: proc.failedReloads };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
