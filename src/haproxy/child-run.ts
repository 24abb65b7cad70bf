/**
 * Runs one short-lived program (`haproxy -c`) to its end: its output collected up to a
 * limit, killed with everything it started on a timeout or an abort. The controller does
 * not call this itself on its main thread: starting a child forks the calling process,
 * and forking a process of several hundred MiB stalls its event loop (page tables are
 * copied). The spawn helper (spawn-helper.ts), a small process started early, calls it
 * on the controller's behalf.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { errorMessage } from '../errors.ts';

export interface ChildRequest {
  bin: string;
  args: readonly string[];
  cwd: string;
  /** The environment of the child; the caller's own when absent. */
  env?: NodeJS.ProcessEnv;
  /** A child that runs longer is killed and reported as a timeout. */
  timeoutMs: number;
  /** Bytes of each output stream kept; the rest is read and dropped. */
  outputLimit: number;
}

/** How a run ended; only `exited` and `signaled` mean the program ran. */
export type ChildOutcome =
  | { kind: 'exited'; code: number; stdout: string; stderr: string }
  | { kind: 'signaled'; signal: string; stdout: string; stderr: string }
  | { kind: 'timeout'; message: string }
  | { kind: 'aborted'; message: string }
  | { kind: 'spawn'; message: string };

/** Runs a request to its end; who runs it (this process or a helper) is the caller's choice. */
export type ChildRunner = (request: ChildRequest, signal?: AbortSignal) => Promise<ChildOutcome>;

/** Kills a child started by runChild and everything it started. */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    // The child leads its own process group, so helpers it started die with it.
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** Runs the request from this process; `onStart` learns the child's process id. */
export function runChild(request: ChildRequest, signal?: AbortSignal, onStart?: (pid: number) => void): Promise<ChildOutcome> {
  if (signal?.aborted) return Promise.resolve({ kind: 'aborted', message: 'aborted' });
  return new Promise((resolve) => {
    let settled = false;
    let stopping = false;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;

    let child: ChildProcess;
    try {
      child = spawn(request.bin, [...request.args], {
        cwd: request.cwd,
        env: request.env ?? process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, so that a kill reaches anything it started.
        detached: true,
      });
    } catch (e) {
      resolve({ kind: 'spawn', message: `could not start ${request.bin}: ${errorMessage(e)}` });
      return;
    }
    const settle = (outcome: ChildOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const stop = (outcome: ChildOutcome) => {
      if (settled || stopping) return;
      stopping = true;
      killGroup(child.pid);
      const done = () => {
        // A surviving grandchild may still hold the pipes; do not wait for it.
        child.stdout?.destroy();
        child.stderr?.destroy();
        settle(outcome);
      };
      if (child.exitCode !== null || child.signalCode !== null) done();
      else child.once('exit', done);
    };
    const onAbort = () => stop({ kind: 'aborted', message: 'aborted' });

    child.stdout?.on('data', (chunk: Buffer) => {
      if (outBytes < request.outputLimit) out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      if (errBytes < request.outputLimit) err.push(chunk);
      errBytes += chunk.length;
    });
    child.once('error', (e) => {
      if (child.pid === undefined) settle({ kind: 'spawn', message: `could not start ${request.bin}: ${e.message}` });
    });
    child.once('close', (code, sig) => {
      if (stopping) return;
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code !== null) settle({ kind: 'exited', code, stdout, stderr });
      else settle({ kind: 'signaled', signal: sig ?? 'unknown signal', stdout, stderr });
    });

    const timer = setTimeout(() => stop({ kind: 'timeout', message: `${request.bin} did not finish within ${request.timeoutMs} ms` }), request.timeoutMs);
    if (child.pid === undefined) return; // 'error' follows.
    onStart?.(child.pid);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
