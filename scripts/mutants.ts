/**
 * Swaps the key operator of each stream stage and checks that a marble test fails.
 * Each mutant runs in a scratch copy of the tree, so the working tree is never touched.
 *
 *   npm run mutants
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const ALIASES =
  "import { mergeMap as mutMergeMap, concatMap as mutConcatMap, zip as mutZip, zipWith as mutZipWith, share as mutShare, identity as mutIdentity } from 'rxjs';\n";

interface Mutant {
  stage: string;
  file: string;
  from: string;
  to: string;
  test: string;
}

const selected = process.argv[2];
const all: Mutant[] = [
  { stage: 'stores', file: 'streams/stores.ts', from: 'return changed ? [...problems, change] : [...problems];', to: 'return [...problems, change];', test: 'marble-tests/stores.test.ts' },
  { stage: 'trigger: sync gate', file: 'streams/trigger.ts', from: "g.opens || (g.wasOpen && g.change.type !== 'synced')", to: "g.opens || g.change.type !== 'synced'", test: 'marble-tests/trigger.test.ts' },
  { stage: 'trigger: max wait', file: 'streams/operators/debounce-batch.ts', from: 'timer(deadline - now, scheduler),', to: '', test: 'marble-tests/trigger.test.ts' },
  { stage: 'trigger: what arrives with the first change after quiet waits for the debounce', file: 'streams/operators/debounce-batch.ts', from: 'timer(0, scheduler)', to: 'of(undefined)', test: 'marble-tests/trigger.test.ts' },
  { stage: 'trigger: a lone change after quiet waits for the debounce', file: 'streams/operators/debounce-batch.ts', from: 'leading && quiet\n', to: 'false\n', test: 'marble-tests/trigger.test.ts' },
  { stage: 'render: a newer trigger no longer cancels the running render (mergeMap)', file: 'streams/operators/latest-wins.ts', from: 'inner?.unsubscribe();\n        const id', to: 'const id', test: 'marble-tests/render.test.ts' },
  { stage: 'render: latest wins without its bound (switchMap: renders starve under churn)', file: 'streams/operators/latest-wins.ts', from: 'if (running !== 0 && now >= deadline && !idle) {', to: 'if (false) {', test: 'marble-tests/render.test.ts' },
  { stage: 'validate: a newer configuration no longer cancels the running check (mergeMap)', file: 'streams/operators/latest-wins.ts', from: 'inner?.unsubscribe();\n        const id', to: 'const id', test: 'marble-tests/validate.test.ts' },
  { stage: 'validate: without the bound (switchMap: checks longer than the time between renders starve)', file: 'streams/validate.ts', from: 'maxWaitMs: deps.maxWaitMs ?? Infinity,', to: 'maxWaitMs: Infinity,', test: 'marble-tests/validate.test.ts' },
  { stage: 'validate: a check waiting to run again keeps newer configurations waiting', file: 'streams/validate.ts', from: "givesWay: (event: ValidateEvent) => event.type === 'ValidationUnavailable',", to: '', test: 'marble-tests/validate.test.ts' },
  { stage: 'graph: validation starves under churn (no bound passed)', file: 'streams/graph.ts', from: 'maxWaitMs: settings.debounceMaxWaitMs, ...retrying', to: '...retrying', test: 'marble-tests/graph.test.ts' },
  { stage: 'validate: a check that could not run is not retried', file: 'streams/validate.ts', from: 'repeat({ delay: () => timer(retryInMs, scheduler) }),', to: '', test: 'marble-tests/validate.test.ts' },
  { stage: 'render: unchanged ignores what validation said', file: 'streams/render.ts', from: "last.refused = verdict.type === 'ValidationFailed'", to: 'last.refused = false', test: 'marble-tests/render.test.ts' },
  { stage: 'desired: combineLatest → zip', file: 'streams/endpoints.ts', from: 'combineLatest([applied$, endpoints$])', to: 'mutZip([applied$, endpoints$])', test: 'marble-tests/endpoints.test.ts' },
  { stage: 'requests: a returning instance looks known', file: 'streams/endpoints.ts', from: "`${e.id}\\n${e.address}\\n${e.incarnation ?? ''}`", to: 'e.id', test: 'marble-tests/endpoints.test.ts' },
  { stage: 'credentials: withLatestFrom → zipWith', file: 'streams/endpoints.ts', from: 'withLatestFrom(desired$)', to: 'mutZipWith(desired$)', test: 'marble-tests/endpoints.test.ts' },
  { stage: 'retry: switchMap → mergeMap (a new deployment no longer replaces the pending retry)', file: 'streams/retry.ts', from: 'switchMap((s) =>', to: 'mutMergeMap((s) =>', test: 'marble-tests/retry.test.ts' },
  { stage: 'retry: no doubling', file: 'streams/retry.ts', from: 'backoffDelay(s.failures - 1,', to: 'backoffDelay(0,', test: 'marble-tests/retry.test.ts' },
  { stage: 'retry: an instance that leaves keeps its retries', file: 'streams/retry.ts', from: 'merge(outcomes$, left$)', to: 'merge(outcomes$)', test: 'marble-tests/retry.test.ts' },
  { stage: 'drift: switchMap → mergeMap', file: 'streams/drift.ts', from: 'switchMap((state) =>', to: 'mutMergeMap((state) =>', test: 'marble-tests/drift.test.ts' },
  { stage: 'leadership: switchMap → mergeMap (a lost lead no longer aborts)', file: 'streams/leadership.ts', from: 'switchMap((leads, term)', to: 'mutMergeMap((leads, term)', test: 'marble-tests/leadership.test.ts' },
  { stage: 'leadership: gate removed', file: 'streams/leadership.ts', from: 'if (!leads) return', to: 'if (leads === undefined) return', test: 'marble-tests/leadership.test.ts' },
  { stage: 'schedule: throttle removed', file: 'streams/schedule.ts', from: 'throttle((run$) =>', to: '((_d: unknown, _o: unknown) => mutIdentity)((run$: unknown) =>', test: 'marble-tests/schedule.test.ts' },
  { stage: 'schedule: window ignores the running deployment', file: 'streams/schedule.ts', from: 'forkJoin([timer(minIntervalMs, scheduler), run$.pipe(ignoreElements(), defaultIfEmpty(null))])', to: 'timer(minIntervalMs, scheduler)', test: 'marble-tests/schedule.test.ts' },
  { stage: 'schedule: a torn-down graph keeps deploying', file: 'streams/schedule.ts', from: 'shareReplay({ bufferSize: Infinity, refCount: true })', to: 'shareReplay()', test: 'marble-tests/schedule.test.ts' },
  { stage: 'schedule: waiting requests no longer merge', file: 'streams/schedule.ts', from: 'waiting = waiting ? coalesce(waiting, request) : request;', to: 'waiting = request;', test: 'marble-tests/schedule.test.ts' },
  { stage: 'canary: a failed check no longer ends the canary', file: 'streams/canary.ts', from: 'return race(abandon$, failure$, passed$);', to: 'return race(abandon$, passed$);', test: 'marble-tests/canary.test.ts' },
  { stage: 'canary: a newer configuration no longer ends the check', file: 'streams/canary.ts', from: 'return race(abandon$, failure$, passed$);', to: 'return race(failure$, passed$);', test: 'marble-tests/canary.test.ts' },
  { stage: 'canary: the refused configuration reaches the rest', file: 'streams/canary.ts', from: 'if (refused?.hash === request.config.hash) {', to: 'if (refused === undefined && request.config.hash === "") {', test: 'marble-tests/canary.test.ts' },
  { stage: 'canary: a round that hangs is waited for', file: 'streams/canary.ts', from: 'timeout({ first: options.intervalMs, scheduler }),', to: '', test: 'marble-tests/canary.test.ts' },
  { stage: 'canary: a verdict that comes as steps is not waited for', file: 'streams/canary.ts', from: 'const rollout$ = isSteps(verdict) ? sliced(() => verdict, slicing).pipe(mergeMap(byVerdict)) : byVerdict(verdict);', to: 'const rollout$ = byVerdict(verdict !== false);', test: 'marble-tests/canary.test.ts' },
  { stage: 'canary: every configuration goes everywhere at once', file: 'streams/canary.ts', from: 'if (request.endpoints.length < 2) return run(request);', to: 'return run(request);', test: 'marble-tests/canary.test.ts' },
  { stage: 'deploy: mergeMap → concatMap', file: 'streams/deploy.ts', from: 'mergeMap((endpoint) => deployOne(endpoint, deployment), concurrency)', to: 'mutConcatMap((endpoint) => deployOne(endpoint, deployment))', test: 'marble-tests/deploy.test.ts' },
  { stage: 'deploy: timeout removed', file: 'streams/deploy.ts', from: 'timeout({ first: options.timeoutMs, scheduler }),', to: '', test: 'marble-tests/deploy.test.ts' },
  { stage: 'diff: a failed instance still counts as running the configuration', file: 'streams/deployment-diff.ts', from: 'event.result.ok ? event.deployment.config : undefined', to: 'event.deployment.config', test: 'marble-tests/deployment-diff.test.ts' },
  { stage: 'diff: the base is the first instance known, not what most ran', file: 'streams/deployment-diff.ts', from: 'if (!best || c.n > best.n) best = c;', to: 'if (!best) best = c;', test: 'marble-tests/deployment-diff.test.ts' },
  { stage: 'boundary: errors are not caught', file: 'streams/operators/supervise.ts', from: 'retry({', to: '((_o: unknown) => mutIdentity)({', test: 'marble-tests/supervise.test.ts' },
  { stage: 'boundary: the delay between restarts does not grow', file: 'streams/operators/supervise.ts', from: 'backoffDelay(failures++, backoff, random)', to: 'backoffDelay((failures++, 0), backoff, random)', test: 'marble-tests/supervise.test.ts' },
  { stage: 'status: writes not spaced', file: 'streams/status.ts', from: 'concatWith(timer(minIntervalMs, scheduler).pipe(ignoreElements()), defer(drain))', to: 'concatWith(defer(drain))', test: 'marble-tests/status.test.ts' },
  { stage: 'status: no doubling', file: 'streams/status.ts', from: 'retryMs * 2 ** (n - 1)', to: 'retryMs', test: 'marble-tests/status.test.ts' },
  { stage: 'status: written while not leading', file: 'streams/status.ts', from: 'while (leader && pending.size > 0)', to: 'while (pending.size > 0)', test: 'marble-tests/status.test.ts' },
  { stage: 'warnings: every render reports again', file: 'streams/object-warnings.ts', from: '.filter(([key]) => !current.has(key))', to: '', test: 'marble-tests/object-warnings.test.ts' },
  { stage: 'warnings: reported while not leading', file: 'streams/object-warnings.ts', from: 'return leader ? from(fresh) : EMPTY;', to: 'return from(fresh);', test: 'marble-tests/object-warnings.test.ts' },
  { stage: 'fast path: a validated configuration older than its servers deploys all the same', file: 'streams/fast-path.ts', from: 'if (behind.length > 0 || missing.length > 0) return', to: 'if (missing.length > 0) return', test: 'marble-tests/fast-path.test.ts' },
  { stage: 'fast path: plans on a base that lacks a change it declined', file: 'streams/fast-path.ts', from: 'if (waitFor !== 0) return', to: 'if (waitFor < 0) return', test: 'marble-tests/fast-path.test.ts' },
  { stage: 'render hold: the full render starts beside a fast deployment', file: 'streams/render-hold.ts', from: 'if (idle()) return of(reconcile);', to: 'return of(reconcile);', test: 'marble-tests/render-hold.test.ts' },
  { stage: 'render hold: no maximum', file: 'streams/render-hold.ts', from: 'race(ended$.pipe(filter(idle)), timer(left, scheduler))', to: 'ended$.pipe(filter(idle))', test: 'marble-tests/render-hold.test.ts' },
  { stage: 'render hold: a deployment that never ends holds forever', file: 'streams/render-hold.ts', from: 'if (now - startedAt >= maxHoldMs) running.delete(id);', to: '', test: 'marble-tests/render-hold.test.ts' },
  { stage: 'graph: the full render is not held', file: 'streams/graph.ts', from: 'render(toRender$,', to: 'render(reconciles$,', test: 'marble-tests/graph.test.ts' },
  { stage: 'fast path: a new base is not made ready', file: 'streams/fast-path.ts', from: 'if (base?.config !== event.config) prepared = deps.prepare?.(event.config);', to: '', test: 'marble-tests/fast-path.test.ts' },
  { stage: 'fast path: a validated configuration is taken while a plan runs in slices', file: 'streams/fast-path.ts', from: "concatMap((input) => ('validated' in input", to: "mergeMap((input) => ('validated' in input", test: 'marble-tests/fast-path.test.ts' },
  { stage: 'sliced: runs the whole work in one task', file: 'streams/operators/sliced.ts', from: 'if (now() - started >= budgetMs) break;', to: '', test: 'marble-tests/sliced.test.ts' },
  { stage: 'render hold: the full render starts while the fast path plans', file: 'streams/render-hold.ts', from: 'if (busy) running.set(PLANNING, scheduler.now());', to: '', test: 'marble-tests/render-hold.test.ts' },
  { stage: 'fast path: builds on the last validated configuration, never on its own plans', file: 'streams/fast-path.ts', from: 'base = { config: outcome.config, seq: reconcile.seq };', to: '', test: 'marble-tests/fast-path.test.ts' },
  { stage: 'requests: what the fast path sent everywhere is sent again', file: 'streams/endpoints.ts', from: 'if (state.appliedByFastPath && current !== seen.current) return { hash: current, current, known, request: undefined };', to: '', test: 'marble-tests/endpoints.test.ts' },
  { stage: 'graph: what the fast path applied is not desired (a redeploy takes it back)', file: 'streams/graph.ts', from: "e.type === 'Validated' || e.type === 'FastPathPlanned'", to: "e.type === 'Validated'", test: 'marble-tests/graph.test.ts' },
  { stage: 'graph: a change the fast path applied waits for its render no longer than others', file: 'streams/graph.ts', from: 'fastTaken.delete(reconcile.seq) ? confirmWait', to: 'fastTaken.delete(reconcile.seq) ? settings.debounceMaxWaitMs', test: 'marble-tests/graph.test.ts' },
  { stage: 'graph: the render that confirms a fast change waits without bound', file: 'src/config/controller-config.ts', from: 'confirmMaxWaitMs: 10_000,', to: 'confirmMaxWaitMs: 1e9,', test: 'marble-tests/graph.test.ts' },
  { stage: 'graph: the confirm wait ignores its setting', file: 'streams/graph.ts', from: 'settings.confirmMaxWaitMs ?? DEFAULT_SETTINGS', to: 'DEFAULT_SETTINGS', test: 'marble-tests/graph.test.ts' },
  { stage: 'graph: renders that only confirm the fast path are not paced', file: 'streams/graph.ts', from: '(reconcile) => fastTaken.has(reconcile.seq),', to: '() => false,', test: 'marble-tests/graph.test.ts' },
  { stage: 'graph: a paced confirmation starts its render during a fast deployment', file: 'streams/graph.ts', from: 'const toRender$ = hold(paceConfirmations(', to: 'const toRender$ = ((r: Observable<Reconcile>, _: boolean) => r)(paceConfirmations(', test: 'marble-tests/graph.test.ts' },
  { stage: 'confirm pace: a held confirmation is never sent on its own', file: 'streams/confirm-pace.ts', from: 'quiet = scheduler.schedule(() => held && send(held), intervalMs);', to: '', test: 'marble-tests/confirm-pace.test.ts' },
  { stage: 'confirm pace: the interval is not kept', file: 'streams/confirm-pace.ts', from: 'if (scheduler.now() - lastSent >= intervalMs) return send(reconcile);', to: 'return send(reconcile);', test: 'marble-tests/confirm-pace.test.ts' },
  { stage: 'graph: fast path requests are not deployed', file: 'streams/graph.ts', from: "filter((r) => r.reason === 'fast'),", to: 'filter(() => false),', test: 'marble-tests/graph.test.ts' },
  { stage: 'controller: switchMap → mergeMap', file: 'streams/controller.ts', from: 'switchMap((d, index) =>', to: 'mutMergeMap((d, index) =>', test: 'marble-tests/controller.test.ts' },
  { stage: 'graph: deploy outcomes not fed back to the retries', file: 'streams/graph.ts', from: 'tap((event) => deployEvents.next(event)),', to: '', test: 'marble-tests/graph.test.ts' },
  { stage: 'graph: connect → share', file: 'streams/graph.ts', from: 'connect((changes$) => {', to: '((f: (c: Observable<ResourceChange>) => unknown) => (c: Observable<ResourceChange>) => f(c.pipe(mutShare())) as never)((changes$) => {', test: 'marble-tests/graph.test.ts' },
  // The recorded incident (a burst of churn while an instance fails) catches stages changed since it was recorded.
  { stage: 'recorded incident: retry without doubling', file: 'streams/retry.ts', from: 'backoffDelay(s.failures - 1,', to: 'backoffDelay(0,', test: 'marble-tests/recorded-incident.test.ts' },
  { stage: 'recorded incident: schedule throttle removed', file: 'streams/schedule.ts', from: 'throttle((run$) =>', to: '((_d: unknown, _o: unknown) => mutIdentity)((run$: unknown) =>', test: 'marble-tests/recorded-incident.test.ts' },
  { stage: 'recorded incident: deploy mergeMap → concatMap', file: 'streams/deploy.ts', from: 'mergeMap((endpoint) => deployOne(endpoint, deployment), concurrency)', to: 'mutConcatMap((endpoint) => deployOne(endpoint, deployment))', test: 'marble-tests/recorded-incident.test.ts' },
  { stage: 'recorded incident: deploy outcomes not fed back to the retries', file: 'streams/graph.ts', from: 'tap((event) => deployEvents.next(event)),', to: '', test: 'marble-tests/recorded-incident.test.ts' },
  { stage: 'recorded incident: trigger without max wait', file: 'streams/operators/debounce-batch.ts', from: 'timer(deadline - now, scheduler),', to: '', test: 'marble-tests/recorded-incident.test.ts' },
];

// `npm run mutants -- <text>` runs only the mutants whose stage contains the text.
const mutants = selected ? all.filter((m) => m.stage.includes(selected)) : all;

async function killedBy(mutant: Mutant): Promise<string[]> {
  const scratch = await mkdtemp(join(tmpdir(), 'haprx-mutant-'));
  try {
    for (const dir of ['src', 'streams', 'marble-tests']) await cp(join(root, dir), join(scratch, dir), { recursive: true });
    await cp(join(root, 'package.json'), join(scratch, 'package.json'));
    await symlink(join(root, 'node_modules'), join(scratch, 'node_modules'));
    const path = join(scratch, mutant.file);
    const source = await readFile(path, 'utf8');
    if (!source.includes(mutant.from)) throw new Error(`${mutant.file} no longer contains: ${mutant.from}`);
    await writeFile(path, ALIASES + source.replace(mutant.from, mutant.to));
    // A mutant that makes a test loop for ever (virtual time never ends) is cut short.
    const result = await run(process.execPath, ['--test', '--test-reporter=spec', mutant.test], { cwd: scratch, timeout: 120_000 }).then(
      (r) => ({ ok: true, stdout: r.stdout }),
      (e: { stdout?: string }) => ({ ok: false, stdout: e.stdout ?? '' }),
    );
    const names = [...new Set(result.stdout.split('\n').filter((l) => /^\s+✖ /.test(l)).map((l) => l.trim().replace(/^✖ /, '').replace(/ \([\d.]+ms\)$/, '')))];
    // A run that failed without naming a test (a crash, a hang) still caught the mutant, but say so.
    return names.length === 0 && !result.ok ? ['(the test run ended without a result: it crashed or hung)'] : names;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

let survivors = 0;
for (const mutant of mutants) {
  const failed = await killedBy(mutant);
  if (failed.length === 0) survivors++;
  console.log(`${failed.length ? 'killed  ' : 'SURVIVED'} ${mutant.stage}`);
  for (const name of failed) console.log(`         ✖ ${name}`);
}
console.log(`${mutants.length - survivors} of ${mutants.length} mutants killed`);
process.exitCode = survivors === 0 ? 0 : 1;
