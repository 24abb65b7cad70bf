/**
 * `haprx local` as the benchmarks run it: a child process on a folder of manifests,
 * its JSON log read for deployments, and a stop that never waits for an exit that
 * already happened (a benchmark whose haprx died ends, with the reason, instead of
 * hanging).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { KubeObject } from '../src/k8s/resource.ts';
import { stopLeftHaproxy } from '../src/local/haproxy-process.ts';
import { cliCommand, parseShowProc } from '../src/local/master-cli.ts';
import { promisify } from 'node:util';

const root = new URL('..', import.meta.url).pathname;
const execFileP = promisify(execFile);

/**
 * What haprx runs as: the compiled build, as the image runs it (`npm run build` first,
 * here), unless BENCH_SOURCE=1 runs the TypeScript sources as a checkout does. Node's
 * type stripping costs each thread memory (about 18 MiB) that the image does not pay.
 */
const fromSource = Boolean(process.env.BENCH_SOURCE);
if (!fromSource) await execFileP(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { cwd: root });
/** haprx's entry point, relative to the repository root. */
export const program = fromSource ? 'bin/haprx.js' : 'dist/src/cli/main.js';

export interface Deployment {
  at: number;
  reloaded: boolean;
}

/** `haprx local`; `stop` also stops a haproxy it left behind. */
export interface LocalRun extends HaprxChild {
  stateDir: string;
  deployments: Deployment[];
  reloads(): Promise<number>;
}

export interface LocalRunOptions {
  manifests: string;
  stateDir: string;
  sets?: Record<string, string | number>;
  healthPort?: number;
  metricsPort?: number;
  env?: NodeJS.ProcessEnv;
}

/** A haprx process as a benchmark runs it. */
export interface HaprxChild {
  child: ChildProcess;
  /** Set once the process has exited, with how. */
  exited: string | undefined;
  /** Throws when haprx has exited: call it in every wait loop. */
  alive(): void;
  /** SIGTERM, then SIGKILL after 15 s; nothing when it has exited already. */
  stop(): Promise<void>;
}

/**
 * Starts haprx with `args` (`local …`, `run …`): PROFILE_DIR=<dir> writes a CPU profile
 * of it there when it stops, and its event loop's stalls (bench/stall-probe.ts);
 * HAPRX_NODE_FLAGS adds V8/Node flags; BENCH_LOG=1 shows its output, V8's own lines
 * (HAPRX_NODE_FLAGS=--trace-gc) included. `onLine` gets each line it prints.
 */
export function spawnHaprx(args: readonly string[], env: NodeJS.ProcessEnv, onLine?: (line: string) => void): HaprxChild {
  const child = spawn(
    process.execPath,
    [...(process.env.PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`, `--import=${new URL('./stall-probe.ts', import.meta.url).pathname}`] : []), ...(process.env.HAPRX_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), program, ...args],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env },
  );
  const haprx: HaprxChild = {
    child,
    exited: undefined,
    alive() {
      if (haprx.exited !== undefined) throw new Error(`haprx ${args[0]} ${haprx.exited}`);
    },
    async stop() {
      if (haprx.exited !== undefined) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([gone, sleep(15_000).then(() => child.kill('SIGKILL'))]);
    },
  };
  child.once('exit', (code, signal) => {
    haprx.exited = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  });
  createInterface({ input: child.stdout!, crlfDelay: Infinity }).on('line', (line) => {
    if (process.env.BENCH_LOG) process.stderr.write(`${line}\n`);
    onLine?.(line);
  });
  return haprx;
}

export function startLocal(options: LocalRunOptions): LocalRun {
  const sets = Object.entries({ bindAddress: '127.0.0.1', ...options.sets }).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
  const deployments: Deployment[] = [];
  const haprx = spawnHaprx(
    ['local', options.manifests, '--state-dir', options.stateDir, ...sets, '--health-port', String(options.healthPort ?? 0), '--debug-port', '0', '--metrics-port', String(options.metricsPort ?? 0)],
    options.env ?? process.env,
    (line) => {
      if (!line.startsWith('{')) return;
      const record = JSON.parse(line) as { msg: string; reloaded?: boolean };
      if (record.msg.startsWith('deployed to local')) deployments.push({ at: performance.now(), reloaded: record.reloaded === true });
    },
  );
  return {
    child: haprx.child,
    stateDir: options.stateDir,
    deployments,
    get exited() {
      return haprx.exited;
    },
    alive: () => haprx.alive(),
    async reloads() {
      // The master re-executes on a reload and refuses connections for a moment.
      for (let attempt = 0; ; attempt++) {
        haprx.alive();
        try {
          return parseShowProc(await cliCommand(join(options.stateDir, 'master.sock'), 'show proc'))!.reloads;
        } catch (err) {
          if (attempt > 50) throw err;
          await sleep(100);
        }
      }
    },
    async stop() {
      await haprx.stop();
      // A haprx killed or dead leaves its haproxy running, sharing the ports (SO_REUSEPORT)
      // with the next run's: that one's changes would seem not to be served.
      await stopLeftHaproxy(options.stateDir);
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function tempDir(prefix: string): Promise<{ dir: string; manifests: string; stateDir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  return { dir, manifests, stateDir: join(dir, 'state'), remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Writes objects as multi-document YAML files of `chunk` objects each: `<kind>-<n>.yaml`. */
export async function writeChunks(dir: string, kind: string, objects: readonly KubeObject[], chunk = 500): Promise<void> {
  for (let i = 0; i < objects.length; i += chunk) await writeChunk(dir, kind, objects, i, chunk);
}

/** Rewrites the chunk file that holds object `index`. */
export async function writeChunk(dir: string, kind: string, objects: readonly KubeObject[], index: number, chunk = 500): Promise<void> {
  const file = chunkFile(dir, kind, objects, index, chunk);
  await writeFile(file.path, file.text);
}

/** The chunk file that holds object `index`, made ahead of writing it (so that a timed burst times only the writes). */
export function chunkFile(dir: string, kind: string, objects: readonly KubeObject[], index: number, chunk = 500): { path: string; text: string } {
  const first = Math.floor(index / chunk) * chunk;
  return { path: join(dir, `${kind}-${first / chunk}.yaml`), text: objects.slice(first, first + chunk).map((o) => stringify(o)).join('---\n') };
}

/** Waits for `condition` every `everyMs`, up to `timeoutMs`, checking that haprx still runs. */
export async function until(run: Pick<LocalRun, 'alive'>, what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 120_000, everyMs = 20): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    run.alive();
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/**
 * What the configuration haprx deployed costs haproxy itself: `haproxy -c` on a copy
 * of the state folder, and a reload of the running master (to the same files), until
 * the new worker runs. The references for the change latencies.
 */
export async function haproxyReferences(stateDir: string, runs = 3): Promise<{ checkMs: number; reloadMs: number }> {
  const copy = await mkdtemp(join(tmpdir(), 'haprx-check-'));
  const checks: number[] = [];
  const reloads: number[] = [];
  try {
    // Without sockets, pid files and a deployment's files still being written.
    await cp(stateDir, copy, { recursive: true, filter: (src) => !/\.(sock|pid|haprx-tmp)$/.test(src) });
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await execFileP('haproxy', ['-c', '-f', 'haproxy.cfg'], { cwd: copy, maxBuffer: 16 * 1024 * 1024 });
      checks.push(performance.now() - t0);
    }
    // The master haprx started, reloaded as haprx reloads it: until show proc has a new worker.
    const socket = join(stateDir, 'master.sock');
    const proc = async () => parseShowProc(await cliCommand(socket, 'show proc').catch(() => ''));
    for (let i = 0; i < runs; i++) {
      const before = (await proc())!;
      const t0 = performance.now();
      await cliCommand(socket, 'reload').catch(() => '');
      for (;;) {
        await sleep(5);
        if (performance.now() - t0 > 60_000) throw new Error('no reload within 60 s');
        const after = await proc();
        if (!after || after.reloads <= before.reloads) continue;
        if (after.failedReloads > before.failedReloads) throw new Error('haproxy refused the reload');
        if (after.workers.some((w) => w.reloads === 0)) break;
      }
      reloads.push(performance.now() - t0);
    }
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { checkMs: Math.round(median(checks)), reloadMs: Math.round(median(reloads)) };
}
