/**
 * Two-phase validation of a render: the structure checks of phase one, then
 * `haproxy -c` on a private copy of every file. A configuration reaches an
 * instance only after both passed. The one exception is a local haproxy's first
 * start, where the start is the check (`ValidateOptions.start`).
 *
 * Facts about `haproxy -c` (2.6) this relies on:
 * - `-q` would silence the alerts as well, so it is not passed; the useful
 *   output is the [ALERT]/[WARNING] lines on stderr.
 * - Exit status 0 means valid (possibly with warnings), 1 means errors, 2 means
 *   "no error but will not start (no listener)", which is treated as a failure.
 * - A check neither binds listeners nor applies daemon, master-worker, chroot,
 *   user/group, pidfile or stats socket settings, and does not run programs.
 *   It does resolve user/group names and server host names on this host, and
 *   it runs lua-load scripts.
 * - It creates and truncates a ring's `backing-file`; that path is therefore
 *   redirected into the check directory (the line keeps its number).
 *
 * Warnings do not fail a check unless `failOnWarnings` is set: haproxy itself
 * starts with them, and several (missing timeouts, ignored keywords) are
 * common in working configurations.
 */
import { mkdir, mkdtemp, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ValidationProblem } from '../events.ts';
import { AUX_DIRS, AUX_KINDS, auxPath } from '../templating/rendered.ts';
import type { RenderedConfig, RenderedFiles } from '../templating/rendered.ts';
import { tokenize } from './config.ts';
import { certificateCheck } from './certificate-check.ts';
import { unchangedCheckSteps } from './unchanged-check.ts';
import { configOf, configOfSteps } from './plan.ts';
import { MAIN_FILE, checkStructure, fileNameProblem } from './structure.ts';
import { errorMessage } from '../errors.ts';
import { runChild, type ChildRunner } from './child-run.ts';
import { nextTurn, runInTurns } from '../turns.ts';

/**
 * Where a check ended: structure and haproxy are verdicts on the render; timeout,
 * spawn, killed and aborted mean the check could not run (see `couldNotRun`).
 */
export type ValidationPhase = 'structure' | 'haproxy' | 'timeout' | 'spawn' | 'killed' | 'aborted';

/** Phases that say nothing about the render: the same render may pass or fail next time. */
export function couldNotRun(phase: ValidationPhase): boolean {
  return phase === 'timeout' || phase === 'spawn' || phase === 'killed' || phase === 'aborted';
}

export type ValidationResult =
  /**
   * `partial`: checked as what it changed from a render that passed: its certificates
   * (certificate-check.ts), or itself without its unchanged backends (`backends`) or their
   * servers (`servers`) (unchanged-check.ts).
   */
  | { ok: true; warnings: ValidationProblem[]; durationMs: number; cached: boolean; partial?: PartialCheck }
  | { ok: false; phase: ValidationPhase; problems: ValidationProblem[]; warnings: ValidationProblem[]; durationMs: number; cached: boolean };

export type PartialCheck = 'certificates' | 'backends' | 'servers';

export interface ValidatorOptions {
  /** The haproxy executable; looked up in PATH unless it contains a slash. */
  haproxyBin?: string;
  /** A check that runs longer is killed and reported with phase 'timeout'. */
  timeoutMs?: number;
  /** How many definitive results to remember, keyed by the render's hash; 0 disables the cache. */
  cacheSize?: number;
  /** Where the private check directories are created. */
  tmpDir?: string;
  /** Fail a check that only produced warnings. */
  failOnWarnings?: boolean;
  /** Environment for haproxy, which expands "${VAR}" in the configuration. */
  env?: NodeJS.ProcessEnv;
  /** Who starts haproxy; this process when absent. A long-running controller passes its spawn helper. */
  runner?: ChildRunner;
}

export interface ValidateOptions {
  /**
   * Checks by starting haproxy on the render, where that is as good as haproxy -c: a
   * local haproxy that has never run has no configuration a bad render could replace,
   * and reads the render as the check would (and at 10k backends the check alone takes
   * over half a second). Answers what haproxy printed when it started on the render;
   * nothing when it did not start or was not asked to, and haproxy -c then decides, so
   * a refusal is reported as the check reports it.
   */
  start?: (rendered: RenderedConfig) => Promise<{ output: string } | undefined>;
}

export interface HaproxyCheckOptions {
  haproxyBin: string;
  timeoutMs: number;
  tmpDir: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Who starts haproxy; this process when absent (see spawn-helper.ts for why not). */
  runner?: ChildRunner;
}

/** What one `haproxy -c` run said, before any policy is applied. */
export type HaproxyCheckOutcome =
  | { kind: 'exited'; code: number; errors: ValidationProblem[]; warnings: ValidationProblem[] }
  | { kind: 'signaled'; signal: string; errors: ValidationProblem[]; warnings: ValidationProblem[] }
  | { kind: 'timeout'; message: string }
  | { kind: 'aborted'; message: string }
  | { kind: 'spawn'; message: string };

const OUTPUT_LIMIT = 4 * 1024 * 1024;
const SUMMARY = [/^Error\(s\) found in configuration file\b/, /^Fatal errors found in configuration\b/];
const STDOUT_NOISE = [/^Configuration file is valid$/, /^Warnings were found\.$/];

// "[haproxy.cfg:12]", "(haproxy.cfg:7)", or "at line 2 of file 'maps/ips.map'".
const LOCATION = /[[(]([^\s[\]():]+):(\d+)[\])]|at line (\d+) of file '([^']+)'/g;

/**
 * Turns haproxy's output into problems. `files` are the paths haproxy was given
 * (relative to its working directory); a location naming one of them becomes the
 * problem's file and line. Auxiliary files win over haproxy.cfg because the
 * defect is in them (e.g. "at line 2 of file 'maps/ips.map'").
 */
export function parseHaproxyOutput(stderr: string, stdout: string, files: Iterable<string>): { errors: ValidationProblem[]; warnings: ValidationProblem[]; other: string[] } {
  const known = new Set(files);
  const errors: ValidationProblem[] = [];
  const warnings: ValidationProblem[] = [];
  const other: string[] = [];
  let last: { list: ValidationProblem[]; text: string } | undefined;
  const flush = () => {
    if (!last) return;
    let file = MAIN_FILE;
    let line: number | undefined;
    for (const m of last.text.matchAll(LOCATION)) {
      const f = m[1] ?? m[4]!;
      const n = Number(m[2] ?? m[3]);
      if (!known.has(f)) continue;
      if (line === undefined || (file === MAIN_FILE && f !== MAIN_FILE)) {
        file = f;
        line = n;
      }
    }
    last.list.push(line === undefined ? { file, message: last.text } : { file, line, message: last.text });
    last = undefined;
  };
  for (const raw of stderr.split('\n')) {
    const text = raw.trimEnd();
    const m = /^\[(ALERT|WARNING|NOTICE|DIAG)\]\s*\(\d+\)\s*:\s*(?:config\s*:\s*)?(.*)$/.exec(text);
    if (m) {
      flush();
      // NOTICE carries the version banner and .notice directives; DIAG needs -dD.
      if (m[1] === 'ALERT') last = { list: errors, text: m[2]! };
      else if (m[1] === 'WARNING') last = { list: warnings, text: m[2]! };
      continue;
    }
    if (text === '') continue;
    // Continuation lines: "   | ..." explanations, or the echoed line and a caret.
    if (last) last.text += `\n${text}`;
    else other.push(text);
  }
  flush();
  for (const raw of stdout.split('\n')) {
    const text = raw.trim();
    if (text !== '' && !STDOUT_NOISE.some((r) => r.test(text))) other.push(text);
  }
  return { errors, warnings, other };
}

/** Writes the render into `dir` at the paths the configuration uses. */
async function writeRender(dir: string, files: RenderedFiles): Promise<void> {
  await Promise.all(AUX_KINDS.map((kind) => mkdir(join(dir, AUX_DIRS[kind]), { mode: 0o700 })));
  const writes: Promise<void>[] = [writeFile(join(dir, MAIN_FILE), sandboxMain(files.main), { mode: 0o600 })];
  for (const kind of AUX_KINDS) {
    for (const [name, content] of Object.entries(files[kind])) {
      // Phase one rejects such names; this guards callers that skip it.
      const problem = fileNameProblem(name);
      if (problem) throw new Error(`${auxPath(kind, name)}: ${problem}`);
      writes.push(writeFile(join(dir, auxPath(kind, name)), content, { mode: 0o600 }));
    }
  }
  await Promise.all(writes);
}

/**
 * haproxy -c creates, truncates and maps a ring's backing-file; pointing it
 * into the check directory keeps the check from clobbering a live ring.
 */
function sandboxMain(main: string): string {
  if (!main.includes('backing-file')) return main;
  const lines = main.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const tokens = tokenize(raw.replace(/\r$/, ''));
    if ('error' in tokens || tokens.args[0] !== 'backing-file') continue;
    const indent = /^\s*/.exec(raw)![0];
    lines[i] = `${indent}backing-file ring-backing-file.${i + 1}`;
  }
  return lines.join('\n');
}

/**
 * Runs `haproxy -c -f haproxy.cfg` once, in a fresh private directory holding
 * the render, and removes the directory afterwards. No phase one, no queue, no cache.
 */
export async function runHaproxyCheck(files: RenderedFiles, options: HaproxyCheckOptions): Promise<HaproxyCheckOutcome> {
  const { signal } = options;
  if (signal?.aborted) return { kind: 'aborted', message: 'validation aborted' };
  let dir: string | undefined;
  try {
    try {
      dir = await mkdtemp(join(options.tmpDir, 'haprx-check-'));
      await chmod(dir, 0o700);
      await writeRender(dir, files);
    } catch (err) {
      return { kind: 'spawn', message: `could not prepare the check directory: ${errorMessage(err)}` };
    }
    if (signal?.aborted) return { kind: 'aborted', message: 'validation aborted' };
    return await spawnCheck(dir, files, options);
  } finally {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function spawnCheck(dir: string, files: RenderedFiles, options: HaproxyCheckOptions): Promise<HaproxyCheckOutcome> {
  const run = options.runner ?? runChild;
  const outcome = await run({ bin: options.haproxyBin, args: ['-c', '-f', MAIN_FILE], cwd: dir, env: options.env, timeoutMs: options.timeoutMs, outputLimit: OUTPUT_LIMIT }, options.signal);
  switch (outcome.kind) {
    case 'timeout':
      return { kind: 'timeout', message: `haproxy -c did not finish within ${options.timeoutMs} ms` };
    case 'aborted':
      return { kind: 'aborted', message: 'validation aborted' };
    case 'spawn':
      return outcome;
  }
  try {
    // Messages name files relative to the check directory; never leak its path.
    const sanitize = (text: string) => text.split(`${dir}/`).join('');
    const parsed = parseHaproxyOutput(sanitize(outcome.stderr), sanitize(outcome.stdout), renderedPaths(files));
    const errors = [...parsed.errors, ...parsed.other.map((message) => ({ file: MAIN_FILE, message }))];
    if (outcome.kind === 'exited') return { kind: 'exited', code: outcome.code, errors, warnings: parsed.warnings };
    return { kind: 'signaled', signal: outcome.signal, errors, warnings: parsed.warnings };
  } catch (e) {
    return { kind: 'spawn', message: `could not read the output of ${options.haproxyBin}: ${errorMessage(e)}` };
  }
}

/** The paths of a render's files, as haproxy names them from its working directory. */
function renderedPaths(files: RenderedFiles): string[] {
  const paths = [MAIN_FILE];
  for (const kind of AUX_KINDS) for (const name of Object.keys(files[kind])) paths.push(auxPath(kind, name));
  return paths;
}

/** FIFO mutual exclusion; a waiter whose signal fires leaves the queue without ever holding it. */
class Queue {
  private busy = false;
  private readonly waiters: { grant: () => void }[] = [];

  acquire(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    if (!this.busy) {
      this.busy = true;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        },
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next.grant();
    else this.busy = false;
  }
}

type Verdict = Omit<Extract<ValidationResult, { ok: true }>, 'durationMs' | 'cached'> | Omit<Extract<ValidationResult, { ok: false }>, 'durationMs' | 'cached'>;

const SIGNAL_NAMES: Readonly<Record<string, string>> = { SIGSEGV: 'crashed (SIGSEGV)', SIGABRT: 'aborted (SIGABRT)', SIGKILL: 'was killed (SIGKILL)' };

/** The longest a check may be given, however long the ones before took. */
const MAX_CHECK_MS = 600_000;

/** The last render haproxy -c passed, whole or in part, with its warnings. */
interface Passed {
  files: RenderedConfig;
  warnings: ValidationProblem[];
}

/**
 * What a render is checked as in place of itself, from the last render that passed:
 * its certificates alone, when nothing else changed; otherwise itself without the
 * backends that did not change (or their server lines), unless the render that passed
 * had warnings (a warning about a line left out would not be repeated).
 */
async function partialCheck(passed: Passed, rendered: RenderedConfig): Promise<{ files: RenderedFiles; kind: PartialCheck } | undefined> {
  const certificates = certificateCheck(passed.files, rendered, () => configOf(rendered));
  if (certificates) return { files: certificates, kind: 'certificates' };
  // Read in turns: at 10k backends, parsing and comparing both renders would hold the event loop for tens of ms.
  return passed.warnings.length === 0 ? await runInTurns(unchangedCheckSteps(passed.files, rendered, configOfSteps)) : undefined;
}

/**
 * Validates renders: phase one, then one `haproxy -c` at a time (callers queue
 * in order), remembering definitive verdicts by the render's hash. Only what
 * haproxy decided by exiting is remembered; timeouts, aborts, crashes and
 * start-up failures say nothing about the render and are retried next time.
 * `durationMs` is the wall time of the call, queueing included; a cached
 * result reports the time of the lookup.
 */
export class Validator {
  private readonly haproxyBin: string;
  private readonly timeoutMs: number;
  private readonly cacheSize: number;
  private readonly tmpDir: string;
  private readonly failOnWarnings: boolean;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly runner: ChildRunner | undefined;
  private readonly queue = new Queue();
  /**
   * How long the next check may run: `timeoutMs` at first; twice as long after a check
   * that ran out of time (up to 10 min); four times the last finished check's run,
   * and never less than `timeoutMs`, after one that finished. At 10k certificates
   * haproxy -c takes 9-11 s on two cores, and on a slower or busier machine it could
   * take longer than any fixed bound: every check would time out, and nothing deploy.
   */
  private allowedMs: number;
  // Map iteration follows insertion order; re-inserting on a hit makes the first key the least recently used.
  private readonly cache = new Map<string, Verdict>();
  /** The last render haproxy -c passed, whole or in part, and its warnings: what the next is checked in part against (partialCheck). */
  private passed: Passed | undefined;

  constructor(options: ValidatorOptions = {}) {
    this.haproxyBin = options.haproxyBin ?? 'haproxy';
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.allowedMs = this.timeoutMs;
    this.cacheSize = options.cacheSize ?? 16;
    this.tmpDir = options.tmpDir ?? tmpdir();
    this.failOnWarnings = options.failOnWarnings ?? false;
    this.env = options.env;
    this.runner = options.runner;
  }

  async validate(rendered: RenderedConfig, signal?: AbortSignal, options: ValidateOptions = {}): Promise<ValidationResult> {
    const started = performance.now();
    // Copies, so that no caller can alter a remembered verdict.
    const finish = (verdict: Verdict, cached: boolean, partial?: PartialCheck): ValidationResult => {
      const durationMs = performance.now() - started;
      const warnings = verdict.warnings.map((p) => ({ ...p }));
      if (verdict.ok) return { ok: true, warnings, durationMs, cached, ...(partial && { partial }) };
      return { ok: false, phase: verdict.phase, problems: verdict.problems.map((p) => ({ ...p })), warnings, durationMs, cached };
    };
    const aborted: Verdict = { ok: false, phase: 'aborted', problems: [{ file: MAIN_FILE, message: 'validation aborted' }], warnings: [] };
    if (signal?.aborted) return finish(aborted, false);

    const hit = this.lookup(rendered.hash);
    if (hit?.ok) this.passed = { files: rendered, warnings: hit.warnings };
    if (hit) return finish(hit, true);
    // The check (writing a copy of every file, at 10k backends megabytes) starts on a turn of
    // its own, not in one stretch with the render's bookkeeping in the turn it arrived.
    await nextTurn();
    if (signal?.aborted) return finish(aborted, false);
    const structure = checkStructure(rendered);
    if (structure.length > 0) return finish({ ok: false, phase: 'structure', problems: structure, warnings: [] }, false);

    if (!(await this.queue.acquire(signal))) return finish(aborted, false);
    try {
      // An identical render may have been checked while this one waited.
      const late = this.lookup(rendered.hash);
      if (late) return finish(late, true);
      // A policy that refuses warnings must see them before anything runs the render.
      const started = options.start && !this.failOnWarnings ? await options.start(rendered) : undefined;
      if (started) {
        // What a start prints besides its ALERT and WARNING lines is no verdict on the render.
        const { errors, warnings } = parseHaproxyOutput(started.output, '', renderedPaths(rendered));
        const verdict = this.judge({ kind: 'exited', code: 0, errors, warnings });
        this.decided(rendered, verdict);
        return finish(verdict, false);
      }
      const check = (files: RenderedFiles, timeoutMs: number) => runHaproxyCheck(files, { haproxyBin: this.haproxyBin, timeoutMs, tmpDir: this.tmpDir, env: this.env, signal, runner: this.runner });
      const small = this.passed && (await partialCheck(this.passed, rendered));
      if (small) {
        // Anything but a clean pass (a refusal, a warning, a check that could not run) checks the render whole.
        const outcome = await check(small.files, this.timeoutMs);
        if (outcome.kind === 'aborted') return finish(aborted, false);
        if (outcome.kind === 'exited' && outcome.code === 0 && outcome.errors.length === 0 && outcome.warnings.length === 0) {
          const verdict: Verdict = { ok: true, warnings: this.passed!.warnings };
          this.decided(rendered, verdict);
          return finish(verdict, false, small.kind);
        }
      }
      const checkStarted = performance.now();
      const outcome = await check(rendered, this.allowedMs);
      if (outcome.kind === 'timeout') this.allowedMs = Math.min(this.allowedMs * 2, Math.max(this.timeoutMs, MAX_CHECK_MS));
      else if (outcome.kind === 'exited') this.allowedMs = Math.max(this.timeoutMs, Math.min(4 * (performance.now() - checkStarted), MAX_CHECK_MS));
      const verdict = this.judge(outcome);
      // Only haproxy's own verdicts are facts about the render; the rest may differ next time.
      if (outcome.kind === 'exited') this.decided(rendered, verdict);
      return finish(verdict, false);
    } finally {
      this.queue.release();
    }
  }

  private judge(outcome: HaproxyCheckOutcome): Verdict {
    if (outcome.kind === 'timeout' || outcome.kind === 'aborted' || outcome.kind === 'spawn') {
      return { ok: false, phase: outcome.kind, problems: [{ file: MAIN_FILE, message: outcome.message }], warnings: [] };
    }
    const { errors, warnings } = outcome;
    if (outcome.kind === 'exited' && outcome.code === 0) {
      // Alerts that did not make haproxy fail are reported, not enforced.
      const all = [...errors, ...warnings];
      if (this.failOnWarnings && all.length > 0) return { ok: false, phase: 'haproxy', problems: all, warnings: [] };
      return { ok: true, warnings: all };
    }
    // The summary lines repeat what the specific alerts say; keep them only when they are all there is.
    const specific = errors.filter((p) => !SUMMARY.some((r) => r.test(p.message)));
    const problems = specific.length > 0 ? specific : errors;
    if (outcome.kind === 'signaled') {
      // Killed (the OOM killer, a timeout elsewhere) or crashed: no verdict on the render.
      const message = `haproxy -c ${SIGNAL_NAMES[outcome.signal] ?? `was killed by ${outcome.signal}`}`;
      return { ok: false, phase: 'killed', problems: [...problems, { file: MAIN_FILE, message }], warnings };
    }
    if (problems.length === 0) problems.push({ file: MAIN_FILE, message: `haproxy -c exited with status ${outcome.code}` });
    return { ok: false, phase: 'haproxy', problems, warnings };
  }

  private lookup(hash: string): Verdict | undefined {
    const verdict = this.cache.get(hash);
    if (verdict) {
      this.cache.delete(hash);
      this.cache.set(hash, verdict);
    }
    return verdict;
  }

  /** haproxy's own verdict on a render: remembered, and a pass is what the next render may differ from in certificates only. */
  private decided(rendered: RenderedConfig, verdict: Verdict): void {
    this.remember(rendered.hash, verdict);
    if (verdict.ok) this.passed = { files: rendered, warnings: verdict.warnings };
  }

  private remember(hash: string, verdict: Verdict): void {
    if (this.cacheSize <= 0) return;
    this.cache.delete(hash);
    this.cache.set(hash, verdict);
    while (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
  }
}
