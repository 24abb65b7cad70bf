import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Observable, defer, finalize, map, of, tap } from 'rxjs';
import type { ControllerEvent, Endpoint, InstanceOutcome } from '../src/events.ts';
import type { KubeObject, ResourceChange } from '../src/k8s/resource.ts';
import type { ResourceView } from '../src/k8s/store.ts';
import { sealRendered } from '../src/templating/rendered.ts';
import { DEFAULT_SETTINGS } from '../src/config/controller-config.ts';
import { type FastPlanInput, type GraphDeps, type GraphSettings, graph } from '../streams/graph.ts';
import type { FastPathOutcome } from '../streams/fast-path.ts';
import type { RenderOutcome } from '../streams/render.ts';
import type { ValidateOutcome } from '../streams/validate.ts';
import { OK, endpoint, marbles, synced, upsert } from './helpers.ts';

const settings: GraphSettings = { ...DEFAULT_SETTINGS, watched: [{ name: 'services' }, { name: 'slices' }] };

/** One short label per event, so a whole run reads as one marble line. */
const label = map((e: ControllerEvent): string => {
  switch (e.type) {
    case 'ReconcileTriggered':
      return `T${e.reconcile.seq}`;
    case 'Rendered':
      return `R:${e.config.main}`;
    case 'RenderUnchanged':
      return 'R=';
    case 'RenderFailed':
      return 'R!';
    case 'Validated':
      return 'V';
    case 'ValidationFailed':
      return 'V!';
    case 'ValidationUnavailable':
      return `V?${e.attempt}`;
    case 'StageFailed':
      return `failed:${e.stage}:${e.restartInMs}`;
    case 'LeadershipLost':
      return 'lost';
    case 'DeploymentStarted':
      return `D${e.deployment.id}:${e.deployment.reason}`;
    case 'InstanceDeployed':
      return `ok:${e.result.endpoint.id}`;
    case 'InstanceDeployFailed':
      return `fail:${e.result.endpoint.id}`;
    case 'DeploymentCompleted':
      return `done${e.deployment.id}`;
    case 'SourceProblem':
      return `problem:${e.source}:${e.line}`;
    case 'FastPathPlanned':
      return `F:${e.config.main}`;
    default:
      return e.type;
  }
});

type Cold = <T>(marbles: string, values?: Record<string, T>, error?: unknown) => Observable<T>;

type Resources = ReadonlyMap<string, ResourceView>;

/** The names of the Services the stores hold, joined: what the fake render writes. */
const serviceNames = (resources: Resources) => resources.get('services')!.list().map((o) => o.metadata.name).join('+');

/** A fake fast path plan: every change is one runtime operation, to a configuration whose text `main` makes of the stores. */
const runtimePlan =
  (main: (resources: Resources) => string): ((input: FastPlanInput) => FastPathOutcome) =>
  ({ resources }) => ({
    kind: 'runtime',
    config: sealRendered({ main: main(resources), maps: {}, files: {}, certs: {} }),
    ops: [{ kind: 'server-state', backend: 'be', server: 's', state: 'ready' }],
    backends: ['be'],
  });

/** Fakes with fixed latencies: render 10 ms (lists the services it sees), validate 50 ms, deploy 20 ms. */
function deps(
  cold: Cold,
  changes$: Observable<ResourceChange>,
  endpoints$: Observable<readonly Endpoint[]>,
  graphSettings: GraphSettings = settings,
): { deps: GraphDeps; settings: GraphSettings } {
  const d: GraphDeps = {
    changes$,
    endpoints$,
    render: ({ resources }) => {
      const names = serviceNames(resources);
      return cold<RenderOutcome>('10ms (r|)', { r: { ok: true, config: sealRendered({ main: names, maps: {}, files: {}, certs: {} }) } });
    },
    validate: (config) => cold<ValidateOutcome>('50ms (r|)', { r: config.main.includes('bad') ? { ok: false, problems: [{ file: 'haproxy.cfg', message: 'bad' }] } : { ok: true } }),
    deployTo: (): Observable<InstanceOutcome> => cold('20ms (r|)', { r: OK }),
    // No jitter: the feedback edges wait exactly 1 s, 2 s, 4 s ...
    random: () => 0,
  };
  return { deps: d, settings: graphSettings };
}

describe('graph', () => {
  it('renders nothing before every watched set has synced', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('a 9ms b 9ms s', { a: upsert('services', 'web', '1'), b: upsert('slices', 'web-1', '1'), s: synced('services') });
      return deps(cold, changes, hot<readonly Endpoint[]>('e', { e: [endpoint('e1')] }));
    }, 10_000);
    assert.deepEqual(timeline, []);
  });

  it('goes from the initial sync through render and validation to every endpoint; a burst goes at once and what follows is batched', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('a 9ms b 9ms s 79ms t 899ms c 49ms d 49ms f', {
        a: upsert('services', 'web', '1'),
        b: upsert('slices', 'web-1', '1'),
        s: synced('services'),
        t: synced('slices'),
        c: upsert('services', 'api', '1'),
        d: upsert('services', 'db', '1'),
        f: upsert('services', 'web', '2'),
      });
      return deps(cold, changes, hot<readonly Endpoint[]>('e', { e: [endpoint('e1'), endpoint('e2')] }));
    }, 5_000);
    assert.deepEqual(timeline, [
      // The last sync at 100 reconciles at once: render 10 ms, validate 50 ms, deploy 20 ms.
      [100, 'T1'],
      [110, 'R:web'],
      [160, 'V'],
      [160, 'D1:change'],
      [180, 'ok:e1'],
      [180, 'ok:e2'],
      [180, 'done1'],
      // The burst at 1000, 1050 and 1100: its first change comes after a quiet period and
      // reconciles at once; the two that follow are quiet from 1100, one reconcile at 1600.
      [1000, 'T2'],
      [1010, 'R:api+web'],
      [1060, 'V'],
      [1600, 'T3'],
      [1610, 'R:api+db+web'],
      [1660, 'V'],
      // Valid at 1060 and 1660, but deployments start at least 2 s apart: 160 + 2000, with the newest.
      [2160, 'D2:change'],
      [2180, 'ok:e1'],
      [2180, 'ok:e2'],
      [2180, 'done2'],
    ]);
  });

  it('loses nothing when the source emits its initial list synchronously, as a file source does', () => {
    const timeline = run((cold, hot) => {
      // of() emits during subscribe, before any virtual frame: only connect() makes every branch see it.
      const changes: Observable<ResourceChange> = of(upsert('services', 'web', '1'), synced('services'));
      return deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
    }, 1_000);
    assert.deepEqual(timeline.map(([, label]) => label), ['T1', 'R:web', 'V', 'D1:change', 'ok:e1', 'done1']);
  });

  it('reports a source problem as an event, and it triggers nothing', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s 999ms p', {
        s: synced('services'),
        p: { type: 'problem', source: 'demo/ingress.yaml', line: 4, message: 'bad indentation' },
      });
      return deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
    }, 5_000);
    assert.deepEqual(timeline.map(([t, label]) => `${t} ${label}`), ['0 T1', '10 R:', '60 V', '60 D1:change', '80 ok:e1', '80 done1', '1000 problem:demo/ingress.yaml:4']);
  });

  it('reports an object a store cannot take as a problem naming it, and every later change still deploys', () => {
    const nameless = { kind: 'Service', metadata: { namespace: 'shop' } } as unknown as KubeObject;
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s 999ms n 999ms g', {
        s: synced('services'),
        n: { type: 'upsert', resource: 'services', object: nameless },
        g: upsert('services', 'good', '1'),
      });
      return deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
    }, 5_000);
    assert.deepEqual(timeline.map(([t, label]) => `${t} ${label}`), [
      '0 T1',
      '10 R:',
      '60 V',
      '60 D1:change',
      '80 ok:e1',
      '80 done1',
      // The store could not take it: a problem, no reconcile.
      '1000 problem:store services:undefined',
      // A lone change after a quiet period reconciles at once.
      '2000 T2',
      '2010 R:good',
      '2060 V',
      '2060 D2:change',
      '2080 ok:e1',
      '2080 done2',
    ]);
  });

  it('keeps the last good configuration live when a render fails validation, and sends it to an instance that joins', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s 999ms b 2999ms g', {
        s: synced('services'),
        b: upsert('services', 'bad', '1'),
        g: upsert('services', 'good', '1'),
      });
      const endpoints = hot<readonly Endpoint[]>('x 1999ms y', { x: [endpoint('e1')], y: [endpoint('e1'), endpoint('e2')] });
      return deps(cold, changes, endpoints, { ...settings, watched: [{ name: 'services' }] });
    }, 6_000);
    assert.deepEqual(timeline, [
      [0, 'T1'],
      [10, 'R:'],
      [60, 'V'],
      [60, 'D1:change'],
      [80, 'ok:e1'],
      [80, 'done1'],
      [1000, 'T2'],
      [1010, 'R:bad'],
      [1060, 'V!'],
      // e2 joins at 2000 and gets the last valid configuration, once 2 s have passed since 60.
      [2060, 'D2:endpoints'],
      [2080, 'ok:e2'],
      [2080, 'done2'],
      [4000, 'T3'],
      [4010, 'R:bad+good'],
      [4060, 'V!'],
    ]);
  });

  for (const [what, fastMain, rest] of [
    ['the full render agrees: nothing more is sent', (names: string) => names, []],
    [
      'the full render differs: it follows, within the interval',
      (names: string) => `fast:${names}`,
      [
        // The full configuration keeps to the interval between deployments: 60 + 2000.
        [2060, 'D3:change'],
        [2080, 'ok:e1'],
        [2080, 'ok:e2'],
        [2080, 'done3'],
      ],
    ],
  ] as const) {
    it(`takes an endpoint change to every instance at once through the fast path; ${what}`, () => {
      const timeline = run((cold, hot) => {
        const changes = hot<ResourceChange>('s 999ms w', { s: synced('services'), w: upsert('services', 'web', '1') });
        const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1'), endpoint('e2')] }), { ...settings, watched: [{ name: 'services' }] });
        // The fake plan: the services the stores hold, as new server lines at runtime.
        setup.deps.fastPlan = runtimePlan((resources) => fastMain(serviceNames(resources)));
        return setup;
      }, 5_000);
      assert.deepEqual(timeline, [
        [0, 'T1'],
        [10, 'R:'],
        [60, 'V'],
        [60, 'D1:change'],
        [80, 'ok:e1'],
        [80, 'ok:e2'],
        [80, 'done1'],
        // The change at 1000: planned and deployed at once, though the last deployment was at 60.
        [1000, 'T2'],
        [1000, `F:${fastMain('web')}`],
        [1000, 'D2:fast'],
        [1020, 'ok:e1'],
        [1020, 'ok:e2'],
        [1020, 'done2'],
        // The full render starts once the fast deployment is over (1020), not beside it.
        [1030, 'R:web'],
        [1080, 'V'],
        ...rest,
      ]);
    });
  }

  it('keeps what the fast path applied when the full render that should confirm it is refused: the drift redeploys it, not the configuration before', () => {
    const deployed: string[] = [];
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s 999ms w', { s: synced('services'), w: upsert('services', 'bad', '1') });
      const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
      setup.deps.fastPlan = runtimePlan((resources) => `fast:${serviceNames(resources)}`);
      setup.deps.deployTo = (e, d): Observable<InstanceOutcome> => {
        deployed.push(`${d.reason}:${d.config.main}`);
        return cold('20ms (r|)', { r: OK });
      };
      return setup;
    }, 62_000);
    // The full render of 'bad' is refused by the check (1080); the drift, 60 s after the fast path's configuration, sends that.
    assert.deepEqual(
      timeline.filter(([, l]) => /^(F|V|D)/.test(l)),
      [
        [60, 'V'],
        [60, 'D1:change'],
        [1000, 'F:fast:bad'],
        [1000, 'D2:fast'],
        [1080, 'V!'],
        [61_000, 'D3:drift'],
      ],
    );
    assert.deepEqual(deployed, ['change:', 'fast:fast:bad', 'drift:fast:bad']);
  });

  it('retries an instance whose fast deployment failed with what the fast path applied', () => {
    const deployed: string[] = [];
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s 999ms w', { s: synced('services'), w: upsert('services', 'bad', '1') });
      const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1'), endpoint('e2')] }), { ...settings, watched: [{ name: 'services' }], driftIntervalMs: 0 });
      setup.deps.fastPlan = runtimePlan((resources) => `fast:${serviceNames(resources)}`);
      let e2Fast = 0;
      setup.deps.deployTo = (e, d): Observable<InstanceOutcome> => {
        deployed.push(`${e.id}:${d.reason}:${d.config.main}`);
        const fails = e.id === 'e2' && d.reason === 'fast' && ++e2Fast === 1;
        return cold('20ms (r|)', { r: fails ? { ok: false, reloaded: false, runtimeOps: 0, error: 'e2: HTTP 503' } : OK });
      };
      return setup;
    }, 5_000);
    assert.deepEqual(
      timeline.filter(([, l]) => /^(D|fail)/.test(l)),
      [
        [60, 'D1:change'],
        [1000, 'D2:fast'],
        [1020, 'fail:e2'],
        // 1 s after the failure, once 2 s have passed since the last scheduled deployment (60).
        [2060, 'D3:retry'],
      ],
    );
    assert.deepEqual(deployed, ['e1:change:', 'e2:change:', 'e1:fast:fast:bad', 'e2:fast:fast:bad', 'e2:retry:fast:bad']);
  });

  for (const [what, fast, longest, confirmMaxWaitMs] of [
    ['a change the full path alone applies waits for its render no longer than the maximum wait (2 s)', false, [-Infinity, 2_000], undefined],
    ['a change the fast path applied lets newer ones cancel its render for up to 10 s, as that render only confirms it', true, [4_000, 10_000], undefined],
    ['that wait is a setting (confirmMaxWait: 4 s): renders are cancelled, for no more than 4 s', true, [-600, 4_000], 4_000],
  ] as const) {
    it(`renders under sustained churn that outpaces the render: ${what}`, () => {
      const letters = 'abcdefghijklmnopqrtuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ'; // not s: the sync
      const timeline = run((cold, hot) => {
        // Synced at 0; then a new version of one Service every 600 ms from 1000 to 30400. Each comes after
        // the debounce's quiet, so each triggers at once; a render takes 3 s.
        const values: Record<string, ResourceChange> = { s: synced('services') };
        for (const [i, c] of [...letters].entries()) values[c] = upsert('services', 'web', String(i + 1));
        const changes = hot<ResourceChange>(`s 999ms ${[...letters].join(' 599ms ')}`, values);
        const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, ...(confirmMaxWaitMs && { confirmMaxWaitMs }), watched: [{ name: 'services' }] });
        const version = (resources: Resources) => resources.get('services')!.list()[0]?.metadata.resourceVersion ?? '0';
        setup.deps.render = ({ resources }) => cold<RenderOutcome>('3000ms (r|)', { r: { ok: true, config: sealRendered({ main: `v${version(resources)}`, maps: {}, files: {}, certs: {} }) } });
        if (fast) {
          setup.deps.fastPlan = runtimePlan((resources) => `fast:v${version(resources)}`);
        }
        return setup;
      }, 40_000);
      // Renders that finished while the churn went on, after the first one (the fast path needs a validated base).
      const finished = timeline.filter(([t, l]) => l.startsWith('R:') && t <= 30_400).map(([t]) => t);
      const gaps = finished.slice(1).map((t, i) => t - finished[i]!);
      // A render's 3 s, the wait, and up to one trigger interval before the render that the wait lets finish began.
      const beyondRender = Math.max(...gaps) - 3_000 - 600;
      assert.ok(gaps.length >= 2, `renders finished at ${finished.join(', ')}`);
      assert.ok(beyondRender > longest[0] && beyondRender <= longest[1], `renders finished at ${finished.join(', ')}: ${beyondRender} ms beyond the render`);
    });
  }

  it('deploys under sustained churn when a check takes longer than the time between renders: checks are cancelled for no more than the maximum wait', () => {
    const letters = 'abcdefghijklmnopqrtuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ'; // not s: the sync
    const timeline = run((cold, hot) => {
      // A new version of one Service every 600 ms from 1000 to 30400, each rendered in 100 ms; each
      // check takes 3 s (haproxy -c at 10k certificates takes seconds), so every check would be
      // cancelled by the next render.
      const values: Record<string, ResourceChange> = { s: synced('services') };
      for (const [i, c] of [...letters].entries()) values[c] = upsert('services', 'web', String(i + 1));
      const changes = hot<ResourceChange>(`s 999ms ${[...letters].join(' 599ms ')}`, values);
      const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
      const version = (resources: Resources) => resources.get('services')!.list()[0]?.metadata.resourceVersion ?? '0';
      setup.deps.render = ({ resources }) => cold<RenderOutcome>('100ms (r|)', { r: { ok: true, config: sealRendered({ main: `v${version(resources)}`, maps: {}, files: {}, certs: {} }) } });
      setup.deps.validate = () => cold<ValidateOutcome>('3000ms (r|)', { r: { ok: true } });
      return setup;
    }, 40_000);
    const deployed = timeline.filter(([t, l]) => l.startsWith('D') && t <= 30_400).map(([t]) => t);
    const gaps = deployed.slice(1).map((t, i) => t - deployed[i]!);
    // A check's 3 s, the maximum wait (2 s), and a render and a trigger interval before the check that finishes began.
    assert.ok(deployed.length >= 4, `deployments during the churn began at ${deployed.join(', ')}`);
    assert.ok(Math.max(...gaps) <= 3_000 + 2_000 + 100 + 600, `deployments began at ${deployed.join(', ')}`);
  });

  it('starts a render that only confirms the fast path at most once per confirm wait: under churn the render thread is not kept busy with renders cancelled one after the other', () => {
    const letters = 'abcdefghijklmnopqrtuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ'; // not s: the sync
    const starts: number[] = [];
    const timeline = run((cold, hot, now) => {
      const values: Record<string, ResourceChange> = { s: synced('services') };
      for (const [i, c] of [...letters].entries()) values[c] = upsert('services', 'web', String(i + 1));
      const changes = hot<ResourceChange>(`s 999ms ${[...letters].join(' 599ms ')}`, values);
      const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
      const version = (resources: Resources) => resources.get('services')!.list()[0]?.metadata.resourceVersion ?? '0';
      setup.deps.render = ({ resources }) => {
        starts.push(now());
        return cold<RenderOutcome>('3000ms (r|)', { r: { ok: true, config: sealRendered({ main: `v${version(resources)}`, maps: {}, files: {}, certs: {} }) } });
      };
      setup.deps.fastPlan = runtimePlan((resources) => `fast:v${version(resources)}`);
      return setup;
    }, 45_000);
    // Until the sync's render has validated (3060), the fast path has no base: those changes render at
    // once, latest wins, and the last of those renders ends at 10600. From then on the fast path
    // applies every change, and a render that only confirms starts at most once per 10 s.
    const confirming = starts.filter((t) => t >= 10_600);
    const gaps = confirming.slice(1).map((t, i) => t - confirming[i]!);
    assert.ok(confirming.length >= 3 && gaps.every((gap) => gap >= 10_000), `renders started at ${starts.join(', ')}`);
    // After the churn, the last version is rendered.
    assert.equal(timeline.filter(([, label]) => label.startsWith('R:')).at(-1)?.[1], `R:v${letters.length}`);
  });

  it('lets a change the fast path cannot take cancel a render that only confirms, rather than wait behind it', () => {
    const starts: number[] = [];
    const timeline = run((cold, hot, now) => {
      // Synced at 0; web moves (the fast path takes it) at 5000; api, a new Service (it cannot), at 7500.
      const changes = hot<ResourceChange>('s 4999ms w 2499ms a', { s: synced('services'), w: upsert('services', 'web', '2'), a: upsert('services', 'api', '1') });
      const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
      setup.deps.render = ({ resources }) => {
        starts.push(now());
        return cold<RenderOutcome>('3000ms (r|)', { r: { ok: true, config: sealRendered({ main: serviceNames(resources), maps: {}, files: {}, certs: {} }) } });
      };
      const fast = runtimePlan((resources) => `fast:${serviceNames(resources)}`);
      setup.deps.fastPlan = (input) => (input.resources.get('services')!.first('default', 'api') ? { kind: 'unsupported', reason: 'a new backend' } : fast(input));
      return setup;
    }, 15_000);
    // The confirming render starts at 5000 (after the fast deployment); api's at once at 7500, cancelling it.
    assert.deepEqual(starts.filter((t) => t >= 5_000), [5_020, 7_500]);
    assert.equal(timeline.filter(([, label]) => label.startsWith('R:')).at(-1)?.[0], 10_500);
  });

  it('renders at once after a change the fast path applied only in part (a TLS host\'s routes, whose certificate the render brings), where a mere confirmation waits', () => {
    for (const partial of [true, false]) {
      const starts: number[] = [];
      run((cold, hot, now) => {
        // Synced at 0; web changes at 5000 and at 7500, both taken by the fast path.
        const changes = hot<ResourceChange>('s 4999ms w 2499ms x', { s: synced('services'), w: upsert('services', 'web', '2'), x: upsert('services', 'web', '3') });
        const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
        setup.deps.render = ({ resources }) => {
          starts.push(now());
          return cold<RenderOutcome>('1000ms (r|)', { r: { ok: true, config: sealRendered({ main: `v${resources.get('services')!.list()[0]?.metadata.resourceVersion}`, maps: {}, files: {}, certs: {} }) } });
        };
        const fast = runtimePlan((resources) => `fast:v${resources.get('services')!.list()[0]?.metadata.resourceVersion}`);
        setup.deps.fastPlan = (input) => {
          const plan = fast(input);
          return partial && plan.kind === 'runtime' ? { ...plan, partial: true } : plan;
        };
        return setup;
      }, 30_000);
      // Each render starts once its change's fast deployment (20 ms) has ended.
      if (partial) assert.deepEqual(starts.filter((t) => t >= 5_000), [5_020, 7_520]);
      // A confirmation right after another waits for the confirm wait's quiet (10 s).
      else assert.deepEqual(starts.filter((t) => t >= 5_000), [5_020, 17_520]);
    }
  });

  it('starts a held confirmation that the quiet lets go only once the fast deployment then under way has ended', () => {
    const starts: number[] = [];
    run((cold, hot, now) => {
      // Synced at 0; web moves at 5000 (its confirmation renders at once), at 8000 (held once its fast
      // deployment is over, at 8020: 10 s without another let it go at 18020) and at 18005, whose
      // fast deployment runs until 18025.
      const changes = hot<ResourceChange>('s 4999ms a 2999ms b 10004ms c', { s: synced('services'), a: upsert('services', 'web', '2'), b: upsert('services', 'web', '3'), c: upsert('services', 'web', '4') });
      const setup = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
      const render = setup.deps.render;
      setup.deps.render = (input) => {
        starts.push(now());
        return render(input);
      };
      setup.deps.fastPlan = runtimePlan((resources) => `fast:${resources.get('services')!.list()[0]?.metadata.resourceVersion}`);
      return setup;
    }, 20_000);
    assert.deepEqual(starts.filter((t) => t >= 5_000 && t < 20_000), [5_020, 18_025]);
  });

  it('renders and validates but deploys nothing until this replica leads, then deploys at once', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s', { s: synced('services') });
      const built = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
      return { ...built, deps: { ...built.deps, leader$: hot<boolean>('f 4999ms t', { f: false, t: true }) } };
    }, 6_000);
    assert.deepEqual(timeline.map(([t, label]) => `${t} ${label}`), ['0 T1', '10 R:', '60 V', '5000 D1:leader', '5020 ok:e1', '5020 done1']);
  });

  it('redeploys after the drift interval when nothing else deployed', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s', { s: synced('services') });
      return deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), { ...settings, watched: [{ name: 'services' }] });
    }, 125_000);
    assert.deepEqual(
      timeline.filter(([, label]) => label.startsWith('D')),
      [
        [60, 'D1:change'],
        [60_060, 'D2:drift'],
        [120_060, 'D3:drift'],
      ],
    );
  });
});

describe('graph feedback edges', () => {
  const one: GraphSettings = { ...settings, watched: [{ name: 'services' }], driftIntervalMs: 0 };
  const failing = (e: Endpoint) => ({ ok: false, reloaded: false, runtimeOps: 0, error: `${e.id}: HTTP 503` });

  it('retries a failed instance alone with backoff, drift off, with the newest configuration, until it succeeds', () => {
    const deployedTo: string[] = [];
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s 1999ms c', { s: synced('services'), c: upsert('services', 'api', '1') });
      const built = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1'), endpoint('e2')] }), one);
      let e2Attempts = 0;
      const deployTo = (e: Endpoint, d: { config: { main: string } }): Observable<InstanceOutcome> => {
        deployedTo.push(`${e.id}:${d.config.main}`);
        return cold('20ms (r|)', { r: e.id === 'e2' && ++e2Attempts <= 2 ? failing(e) : OK });
      };
      return { ...built, deps: { ...built.deps, deployTo } };
    }, 10_000);
    assert.deepEqual(
      timeline.filter(([, l]) => /^(D|ok|fail)/.test(l)),
      [
        [60, 'D1:change'],
        [80, 'ok:e1'],
        [80, 'fail:e2'],
        // Due 1 s after the failure, e2 alone goes once 2 s have passed since 60 (the minimum interval); it fails again.
        [2060, 'D2:retry'],
        [2080, 'fail:e2'],
        // The change validated at 2560 goes 2 s after 2060, to both; it replaces e2's retry due at 4080.
        [4060, 'D3:change'],
        [4080, 'ok:e1'],
        [4080, 'ok:e2'],
      ],
    );
    assert.deepEqual(deployedTo, ['e1:', 'e2:', 'e2:', 'e1:api', 'e2:api']);
  });

  it('checks a configuration again when its check could not run, without calling it refused, and deploys it once it passes', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s', { s: synced('services') });
      const built = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), one);
      let checks = 0;
      const validate = (): Observable<ValidateOutcome> =>
        cold('50ms (r|)', { r: ++checks <= 2 ? { ok: false, unavailable: 'haproxy -c did not finish within 30000 ms' } : { ok: true } });
      return { ...built, deps: { ...built.deps, validate } };
    }, 10_000);
    // Checks at 10, 1060 (1 s later) and 3110 (2 s later); never V! (refused).
    assert.deepEqual(timeline, [
      [0, 'T1'],
      [10, 'R:'],
      [60, 'V?1'],
      [1110, 'V?2'],
      [3160, 'V'],
      [3160, 'D1:change'],
      [3180, 'ok:e1'],
      [3180, 'done1'],
    ]);
  });

  it('sends the current configuration to every instance when the Data Plane credentials change', () => {
    const timeline = run((cold, hot) => {
      const changes = hot<ResourceChange>('s', { s: synced('services') });
      const built = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1'), endpoint('e2')] }), one);
      return { ...built, deps: { ...built.deps, credentials$: hot<string>('v 4999ms w', { v: 'version-1', w: 'version-2' }) } };
    }, 10_000);
    assert.deepEqual(
      timeline.filter(([, l]) => l.startsWith('D')),
      [
        [60, 'D1:change'],
        [5000, 'D2:credentials'],
      ],
    );
  });

  it('aborts the deployment in flight when leadership is lost, deploys nothing while following, and sends the newest to every instance on regaining it', () => {
    const aborted: number[] = [];
    const timeline = run((cold, hot, now) => {
      const changes = hot<ResourceChange>('s 2999ms c', { s: synced('services'), c: upsert('services', 'api', '1') });
      const built = deps(cold, changes, hot<readonly Endpoint[]>('x', { x: [endpoint('e1'), endpoint('e2')] }), one);
      // Each deployment takes 1 s: the first is still running when the lead goes at 500.
      const deployTo = (): Observable<InstanceOutcome> =>
        defer(() => {
          let answered = false;
          return cold<InstanceOutcome>('1000ms (r|)', { r: OK }).pipe(
            tap(() => (answered = true)),
            finalize(() => answered || aborted.push(now())),
          );
        });
      return { ...built, deps: { ...built.deps, deployTo, leader$: hot<boolean>('t 499ms f 5999ms t', { t: true, f: false }) } };
    }, 10_000);
    assert.deepEqual(
      timeline.filter(([, l]) => /^(D|ok|done|lost)/.test(l)),
      [
        [60, 'D1:change'],
        [500, 'lost'],
        // The change validated at 3560 waits; the lead comes back at 6500 and deploys it to both.
        [6500, 'D2:leader'],
        [7500, 'ok:e1'],
        [7500, 'ok:e2'],
        [7500, 'done2'],
      ],
    );
    assert.deepEqual(aborted, [500, 500], 'both instance deployments of the first were unsubscribed at the loss');
  });

  it('reports a stage that errors, restarts the graph after 1 s, and deploys again only once everything has synced again', () => {
    const timeline = run((cold) => {
      let runs = 0;
      // The first run's source errors at 1000; the second takes 3 s to list.
      const changes = defer(() => (++runs === 1 ? cold<ResourceChange>('s 999ms #', { s: synced('services') }, new TypeError('watch stream ended badly')) : cold<ResourceChange>('3000ms s', { s: synced('services') })));
      return deps(cold, changes, cold<readonly Endpoint[]>('x', { x: [endpoint('e1')] }), one);
    }, 10_000);
    assert.deepEqual(timeline, [
      [0, 'T1'],
      [10, 'R:'],
      [60, 'V'],
      [60, 'D1:change'],
      [80, 'ok:e1'],
      [80, 'done1'],
      [1000, 'failed:sources:1000'],
      // Rebuilt at 2000; nothing renders or deploys until the sync at 5000.
      [5000, 'T1'],
      [5010, 'R:'],
      [5060, 'V'],
      [5060, 'D1:change'],
      [5080, 'ok:e1'],
      [5080, 'done1'],
    ]);
  });
});

/** Runs the graph in virtual time for `ms` and returns [time, label] for every event. */
function run(setup: (cold: Cold, hot: Cold, now: () => number) => { deps: GraphDeps; settings: GraphSettings }, ms: number): [number, string][] {
  const scheduler = marbles();
  const timeline: [number, string][] = [];
  scheduler.run(({ cold, hot, flush }) => {
    const { deps: d, settings: s } = setup(cold, hot, () => scheduler.now());
    const subscription = graph(s, d).pipe(label).subscribe((l) => timeline.push([scheduler.now(), l]));
    scheduler.schedule(() => subscription.unsubscribe(), ms);
    flush();
  });
  return timeline;
}
