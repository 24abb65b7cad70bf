/**
 * A real haproxy for tests: the rendered files written to a fresh temporary
 * directory (haproxy.cfg plus maps/, general/, ssl/), haproxy started in the
 * foreground with that directory as its working directory, and runtime API
 * commands sent over an admin stats socket the helper adds to `global`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RenderedFiles } from '../../src/templating/rendered.ts';
import { AUX_DIRS, AUX_KINDS } from '../../src/templating/rendered.ts';

export { freePort } from './ports.ts';

export const HAPROXY_BIN = process.env['HAPROXY_BIN'] ?? '/usr/sbin/haproxy';

export interface RunningHaproxy {
  dir: string;
  /** Sends one command line and resolves with haproxy's whole answer. */
  command(line: string): Promise<string>;
  stop(): Promise<void>;
}

/** Sends one line to a runtime API socket in non-interactive mode. */
export function sendCommand(socket: string, line: string, timeoutMs = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    let answer = '';
    conn.setEncoding('utf8');
    conn.setTimeout(timeoutMs, () => conn.destroy(new Error(`no answer to "${line}" within ${timeoutMs} ms`)));
    conn.on('data', (chunk: string) => (answer += chunk));
    conn.on('end', () => resolve(answer));
    conn.on('error', reject);
    conn.write(`${line}\n`);
  });
}

function withAdminSocket(main: string, socket: string): string {
  const lines = main.split('\n');
  const global = lines.findIndex((l) => /^\s*global\s*(#.*)?$/.test(l));
  const stats = `    stats socket ${socket} level admin`;
  if (global === -1) return `global\n${stats}\n${main}`;
  lines.splice(global + 1, 0, stats);
  return lines.join('\n');
}

export async function startHaproxy(files: RenderedFiles): Promise<RunningHaproxy> {
  const dir = await mkdtemp(join(tmpdir(), 'haprx-rt-'));
  const socket = join(dir, 'admin.sock');
  await writeFile(join(dir, 'haproxy.cfg'), withAdminSocket(files.main, socket));
  for (const kind of AUX_KINDS) {
    await mkdir(join(dir, AUX_DIRS[kind]), { recursive: true });
    for (const [name, content] of Object.entries(files[kind])) await writeFile(join(dir, AUX_DIRS[kind], name), content);
  }
  const child = spawn(HAPROXY_BIN, ['-db', '-f', 'haproxy.cfg'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c: string) => (stderr += c));
  const exited = once(child, 'exit');
  let running = true;
  void exited.then(() => (running = false));

  const stop = async () => {
    if (running) {
      child.kill('SIGTERM');
      const killed = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killed);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (!running) {
      await stop();
      throw new Error(`haproxy exited at start:\n${stderr}`);
    }
    try {
      await sendCommand(socket, 'show info', 1_000);
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`haproxy did not answer on its socket:\n${stderr}`, { cause: error });
      }
      await sleep(25);
    }
  }
  return { dir, command: (line) => sendCommand(socket, line), stop };
}

/** The columns of `show servers state` that configuration and runtime commands decide. */
export interface ServerStateRow {
  name: string;
  addr: string;
  port: string;
  opState: string;
  /** From srv_admin_state: forced, inherited or resolver maintenance (the config-time flag alone is not). */
  maint: boolean;
  /** From srv_admin_state: forced or inherited drain. */
  drain: boolean;
  /** srv_uweight: the weight in force (srv_iweight keeps the initial one after `set weight`). */
  weight: string;
  checkState: string;
  agentState: string;
  useSsl: string;
  checkPort: string;
  checkAddr: string;
  agentAddr: string;
  agentPort: string;
}

/** Parses `show servers state [backend]` into rows sorted by backend, then server name. */
export function parseServersState(text: string): (ServerStateRow & { backend: string })[] {
  const lines = text.split('\n');
  const header = lines.find((l) => l.startsWith('# be_id'));
  if (!header) throw new Error(`not a servers state dump:\n${text}`);
  const columns = header.slice(2).split(' ');
  const rows = lines
    .filter((l) => l !== '' && !l.startsWith('#') && l.includes(' '))
    .map((l) => {
      const cells = l.split(' ');
      const at = (name: string) => {
        const value = cells[columns.indexOf(name)];
        if (value === undefined) throw new Error(`no ${name} in "${l}"`);
        return value;
      };
      const admin = Number(at('srv_admin_state'));
      return {
        backend: at('be_name'),
        name: at('srv_name'),
        addr: at('srv_addr'),
        port: at('srv_port'),
        opState: at('srv_op_state'),
        maint: (admin & 0x23) !== 0,
        drain: (admin & 0x18) !== 0,
        weight: at('srv_uweight'),
        checkState: at('srv_check_state'),
        agentState: at('srv_agent_state'),
        useSsl: at('srv_use_ssl'),
        checkPort: at('srv_check_port'),
        checkAddr: at('srv_check_addr'),
        agentAddr: at('srv_agent_addr'),
        agentPort: at('srv_agent_port'),
      };
    });
  return rows.sort((a, b) => (a.backend + '/' + a.name < b.backend + '/' + b.name ? -1 : 1));
}

/** `show map` without argument: the map names haproxy knows. */
export function parseMapList(text: string): string[] {
  return [...text.matchAll(/^\d+ \((.*)\) /gm)].map((m) => m[1]!).sort();
}

/** `show map <ref>`: key and value of each entry, in haproxy's order. */
export function parseMapDump(text: string): { key: string; value: string }[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('0x'))
    .map((l) => {
      const rest = l.slice(l.indexOf(' ') + 1);
      const space = rest.indexOf(' ');
      return space === -1 ? { key: rest, value: '' } : { key: rest.slice(0, space), value: rest.slice(space + 1) };
    });
}
