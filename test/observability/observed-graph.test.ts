/**
 * The whole stream graph in virtual time, with observability as the consumer of its
 * events: metric values, the span tree of each reconciliation with exact times, the
 * outcomes the lifecycle gives, and health. No stage is touched.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { type Observable, concat, of, tap, throwError } from 'rxjs';
import { DEFAULT_SETTINGS } from '../../src/config/controller-config.ts';
import type { ControllerEvent, Endpoint, InstanceOutcome } from '../../src/events.ts';
import { configDiff } from '../../src/haproxy/config-diff.ts';
import { clusterEventFor } from '../../src/k8s/cluster-events.ts';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { type Observer, createObserver } from '../../src/observability/observer.ts';
import { type RenderedConfig, sealRendered } from '../../src/templating/rendered.ts';
import type { CanaryCheck } from '../../streams/canary.ts';
import { type GraphDeps, type GraphSettings, graph } from '../../streams/graph.ts';
import type { RenderOutcome } from '../../streams/render.ts';
import type { ValidateOutcome } from '../../streams/validate.ts';
import { OK, endpoint, marbles, synced, upsert } from '../../marble-tests/helpers.ts';
import { capturedLogger, outline, spanTrees, value } from './support.ts';

type Cold = <T>(marbles: string, values?: Record<string, T>) => Observable<T>;

const settings: GraphSettings = { ...DEFAULT_SETTINGS, watched: [{ name: 'services' }, { name: 'slices' }] };

/** Render 10 ms (lists the services; a service named boom throws), validate 50 ms (refuses "bad"), deploy 20 ms. */
function fakes(cold: Cold, changes$: Observable<ResourceChange>, endpoints: readonly Endpoint[], deploy?: (e: Endpoint) => Observable<InstanceOutcome>): GraphDeps {
  return {
    changes$,
    endpoints$: of(endpoints),
    render: ({ resources }) => {
      const names = resources.get('services')!.list().map((s) => s.metadata.name);
      if (names.includes('boom')) return concat(cold<RenderOutcome>('10ms |'), throwError(() => new Error('boom: cannot read spec.ports\n  at line 3')));
      return cold<RenderOutcome>('10ms (r|)', { r: { ok: true, config: sealRendered({ main: names.join('+'), maps: {}, files: {}, certs: {} }) } });
    },
    validate: (config) => cold<ValidateOutcome>('50ms (r|)', { r: config.main.includes('bad') ? { ok: false, problems: [{ file: 'haproxy.cfg', line: 7, message: 'bad' }] } : { ok: true } }),
    deployTo: (e) => deploy?.(e) ?? cold<InstanceOutcome>('20ms (r|)', { r: OK }),
  };
}

interface Run {
  obs: Observer;
  trees: ReturnType<typeof spanTrees>;
  spans: ReturnType<InMemorySpanExporter['getFinishedSpans']>;
  lines: string[];
  probes: Map<number, unknown>;
  events: ControllerEvent[];
}

/** Runs ConfigAccepted + the graph for `ms` of virtual time, every event into one observer. */
function observed(setup: (cold: Cold, hot: Cold) => { deps: GraphDeps; settings?: GraphSettings }, ms: number, probe?: Record<number, (obs: Observer) => unknown>): Run {
  const scheduler = marbles();
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const { log, lines } = capturedLogger();
  const obs = createObserver({ log, now: () => scheduler.now(), tracer: provider.getTracer('test'), defaultMetrics: false, stallAfterMs: 10_000 });
  const probes = new Map<number, unknown>();
  const events: ControllerEvent[] = [];
  scheduler.run(({ cold, hot, flush }) => {
    const built = setup(cold, hot);
    const events$ = concat(of<ControllerEvent>({ type: 'ConfigAccepted', generation: 1 }), graph(built.settings ?? settings, built.deps));
    const subscription = events$.subscribe((event) => {
      events.push(event);
      obs.record(event);
    });
    for (const [at, read] of Object.entries(probe ?? {})) scheduler.schedule(() => probes.set(Number(at), read(obs)), Number(at));
    scheduler.schedule(() => subscription.unsubscribe(), ms);
    flush();
  });
  return { obs, spans: exporter.getFinishedSpans(), trees: spanTrees(exporter.getFinishedSpans()), lines, probes, events };
}

describe('observability of the graph (virtual time)', () => {
  it('counts reconciliations, validations, deployments, scheduler waits and instance results', async () => {
    const { obs } = observed((cold, hot) => {
      const changes = hot<ResourceChange>('a 9ms b 9ms s 79ms t 899ms c 49ms d 49ms f', {
        a: upsert('services', 'web', '1'),
        b: upsert('slices', 'web-1', '1'),
        s: synced('services'),
        t: synced('slices'),
        c: upsert('services', 'api', '1'),
        d: upsert('services', 'db', '1'),
        f: upsert('services', 'web', '2'),
      });
      return { deps: fakes(cold, changes, [endpoint('e1'), endpoint('e2')]) };
    }, 5_000);
    const r = obs.metrics.registry;
    assert.equal(await value(r, 'haprx_reconciliations_total', { reason: 'config' }), 1);
    // The burst's first change after a quiet period reconciles at once (T2 at 1000), the two after it at 1600 (T3).
    assert.equal(await value(r, 'haprx_reconciliations_total', { reason: 'resources' }), 2);
    assert.equal(await value(r, 'haprx_reconciliation_errors_total'), 0);
    // T1 at 100 → done at 180; T3 at 1600 → done at 2180 (it waited 1660 → 2160 in the scheduler); T2 was superseded by it.
    assert.equal(await value(r, 'haprx_reconciliation_duration_seconds_count', { outcome: 'deployed' }), 2);
    assert.equal(await value(r, 'haprx_reconciliation_duration_seconds_sum', { outcome: 'deployed' }), 0.08 + 0.58);
    assert.equal(await value(r, 'haprx_render_duration_seconds_sum', { result: 'changed' }), 0.03);
    assert.equal(await value(r, 'haprx_validations_total'), 3);
    assert.equal(await value(r, 'haprx_validation_errors_total'), 0);
    assert.ok(Math.abs((await value(r, 'haprx_validation_duration_seconds_sum', { result: 'valid' }))! - 0.15) < 1e-9);
    assert.equal(await value(r, 'haprx_deployments_total', { reason: 'change' }), 2);
    assert.equal(await value(r, 'haprx_deployment_errors_total', { reason: 'change' }), 0);
    assert.equal(await value(r, 'haprx_deployment_duration_seconds_sum', { reason: 'change' }), 0.04);
    // The configuration valid at 1060 waited from then, joined by the one valid at 1660, until 2160.
    assert.equal(await value(r, 'haprx_deployment_wait_seconds_sum', { reason: 'change' }), 1.1);
    assert.equal(await value(r, 'haprx_deployments_in_progress'), 0);
    for (const id of ['e1', 'e2']) {
      assert.equal(await value(r, 'haprx_instance_deploys_total', { endpoint: id, result: 'ok' }), 2);
      assert.equal(await value(r, 'haprx_instance_updates_total', { endpoint: id, mode: 'runtime' }), 2);
      assert.equal(await value(r, 'haprx_instance_updates_total', { endpoint: id, mode: 'reload' }), undefined);
      assert.equal(await value(r, 'haprx_runtime_operations_total', { endpoint: id }), 2);
    }
    assert.equal(await value(r, 'haprx_events_total', { type: 'InstanceDeployed' }), 4);
    assert.equal(await value(r, 'haprx_events_total', { type: 'ReconcileTriggered' }), 3);
    assert.equal(await value(r, 'haprx_events_total', { type: 'ConfigAccepted' }), 1);
    assert.equal(await value(r, 'haprx_last_successful_deployment_timestamp_seconds'), 2.18);
    // The burst's batched changes (db seen at 1050) were live everywhere at 2180; the initial sync has no change to time.
    assert.equal(await value(r, 'haprx_propagation_seconds_count', { path: 'runtime' }), 1);
    assert.ok(Math.abs((await value(r, 'haprx_propagation_seconds_sum', { path: 'runtime' }))! - 1.13) < 1e-9);
    assert.equal(await value(r, 'haprx_ready'), 1);
    assert.equal(await value(r, 'haprx_config_generation'), 1);
  });

  it('builds one span tree per reconciliation with the times of the events, and records the triggering changes', () => {
    const { trees } = observed((cold, hot) => {
      const changes = hot<ResourceChange>('a 9ms b 9ms s 79ms t 899ms c 49ms d 49ms f', {
        a: upsert('services', 'web', '1'),
        b: upsert('slices', 'web-1', '1'),
        s: synced('services'),
        t: synced('slices'),
        c: upsert('services', 'api', '7'),
        d: upsert('services', 'db', '8'),
        f: upsert('services', 'web', '9'),
      });
      return { deps: fakes(cold, changes, [endpoint('e1'), endpoint('e2')]) };
    }, 5_000);
    assert.deepEqual(trees.map(outline), [
      'reconcile[100-180](render[100-110] validate[110-160] deploy[160-180](deploy.instance[160-180] deploy.instance[160-180]) schedule.wait[160-160])',
      // The burst's first change comes after a quiet period: it reconciles at once, and is
      // superseded once the two after it, batched, are valid at 1660.
      'reconcile[1000-1660](render[1000-1010] validate[1010-1060])',
      // The scheduler held the configuration valid at 1060 until 2 s after the first deployment
      // started; the newer one took its place while it waited.
      // Its first change (db, at 1050) was live everywhere at 2180: the reconciliation spans
      // from that change, so its propagation lies inside it.
      'reconcile[1050-2180](propagation[1050-2180] schedule.wait[1060-2160] render[1600-1610] validate[1610-1660] deploy[2160-2180](deploy.instance[2160-2180] deploy.instance[2160-2180]))',
    ]);
    const [first, lone, second] = trees;
    assert.equal(first!.attributes['haprx.reconcile.reason'], 'config');
    assert.equal(first!.attributes['haprx.reconcile.outcome'], 'deployed');
    assert.deepEqual(lone!.attributes['haprx.changes.name'], ['api']);
    assert.equal(lone!.attributes['haprx.reconcile.outcome'], 'superseded');
    assert.deepEqual(second!.attributes['haprx.changes.name'], ['db', 'web']);
    assert.deepEqual(second!.attributes['haprx.changes.kind'], ['Service', 'Service']);
    assert.deepEqual(second!.attributes['haprx.changes.namespace'], ['default', 'default']);
    assert.deepEqual(second!.attributes['haprx.changes.resource_version'], ['8', '9']);
    assert.deepEqual(second!.attributes['haprx.changes.type'], ['upsert', 'upsert']);
    assert.equal(second!.attributes['haprx.changes.count'], 2);
    const instances = second!.children.find((c) => c.name === 'deploy')!.children;
    assert.deepEqual(instances.map((i) => i.attributes['haprx.endpoint.id']).sort(), ['e1', 'e2']);
    assert.equal(instances[0]!.attributes['haprx.endpoint.address'], `http://${instances[0]!.attributes['haprx.endpoint.id']}:5555`);
  });

  it('ends a reconciliation whose render a newer trigger cancelled as superseded, and marks failures on their spans', async () => {
    // No debounce: each change reconciles at once, so a change 5 ms into a 10 ms render cancels it.
    const quick: GraphSettings = { ...settings, debounceMs: 0, watched: [{ name: 'services' }] };
    const { obs, trees } = observed((cold, hot) => {
      const changes = hot<ResourceChange>('s 99ms a 4ms b 995ms c 999ms d', {
        s: synced('services'),
        a: upsert('services', 'web', '1'),
        b: upsert('services', 'api', '1'),
        c: upsert('services', 'bad', '1'),
        d: upsert('services', 'boom', '1'),
      });
      return { deps: fakes(cold, changes, [endpoint('e1')]), settings: quick };
    }, 5_000);
    const r = obs.metrics.registry;
    assert.deepEqual(trees.map(outline), [
      'reconcile[0-80](render[0-10] validate[10-60] deploy[60-80](deploy.instance[60-80]) schedule.wait[60-60])',
      // Its render was cancelled 5 ms in by the next trigger.
      'reconcile[100-105]',
      // Valid at 165, it waits until 2 s after the first deployment started; the refused and
      // the failed reconciliations in between do not replace it.
      'reconcile[105-2080](propagation[105-2080] render[105-115] validate[115-165] schedule.wait[165-2060] deploy[2060-2080](deploy.instance[2060-2080]))',
      'reconcile[1101-1161]!(render[1101-1111] validate[1111-1161]!)',
      'reconcile[2101-2111]!(render[2101-2111]!)',
    ]);
    assert.equal(trees[1]!.attributes['haprx.reconcile.outcome'], 'superseded');
    assert.equal(trees[3]!.attributes['haprx.reconcile.outcome'], 'invalid');
    assert.equal(trees[3]!.error, 'refused by haproxy: haproxy.cfg:7: bad');
    assert.equal(trees[4]!.attributes['haprx.reconcile.outcome'], 'render_failed');
    assert.equal(trees[4]!.error, 'render failed at (render): boom: cannot read spec.ports');
    assert.equal(await value(r, 'haprx_reconciliation_duration_seconds_count', { outcome: 'superseded' }), 1);
    assert.equal(await value(r, 'haprx_reconciliation_errors_total', { stage: 'validate' }), 1);
    assert.equal(await value(r, 'haprx_reconciliation_errors_total', { stage: 'render' }), 1);
    assert.equal(await value(r, 'haprx_validation_errors_total'), 1);
    assert.equal(await value(r, 'haprx_render_duration_seconds_count', { result: 'failed' }), 1);
    assert.equal(await value(r, 'haprx_deployments_total', { reason: 'change' }), 2);
    assert.equal(await value(r, 'haprx_deployment_wait_seconds_sum', { reason: 'change' }), (2060 - 165) / 1000);
  });

  it('traces a drift redeploy as a trace of its own, linked to the reconciliation that produced the configuration', () => {
    const { trees, spans } = observed((cold) => {
      const changes: Observable<ResourceChange> = of(upsert('services', 'web', '1'), synced('services'));
      return { deps: fakes(cold, changes, [endpoint('e1')]), settings: { ...settings, watched: [{ name: 'services' }], driftIntervalMs: 10_000 } };
    }, 15_000);
    assert.deepEqual(trees.map(outline), [
      'reconcile[0-80](render[0-10] validate[10-60] deploy[60-80](deploy.instance[60-80]) schedule.wait[60-60])',
      // Nothing deployed for 10 s after the deployment was requested at 60.
      'redeploy[10060-10080](deploy[10060-10080](deploy.instance[10060-10080]) schedule.wait[10060-10060])',
    ]);
    const reconcile = spans.find((s) => s.name === 'reconcile')!;
    const redeploy = spans.find((s) => s.name === 'redeploy')!;
    assert.equal(redeploy.attributes['haprx.deployment.reason'], 'drift');
    assert.deepEqual(redeploy.links.map((l) => l.context.spanId), [reconcile.spanContext().spanId]);
    assert.notEqual(redeploy.spanContext().traceId, reconcile.spanContext().traceId);
  });

  it('reports a deployment that hangs past the stall bound on /healthz, and deploy failures per endpoint', async () => {
    const { obs, probes } = observed(
      (cold) => {
        const changes: Observable<ResourceChange> = of(upsert('services', 'web', '1'), synced('services'));
        // e1 answers, e2 never does: the deploy stage times it out after 30 s.
        return {
          deps: fakes(cold, changes, [endpoint('e1'), endpoint('e2')], (e) => (e.id === 'e1' ? cold<InstanceOutcome>('20ms (r|)', { r: OK }) : cold<InstanceOutcome>('-'))),
          settings: { ...settings, watched: [{ name: 'services' }] },
        };
      },
      40_000,
      {
        5_000: (obs) => obs.debug.health(),
        20_000: (obs) => obs.debug.health(),
        35_000: (obs) => obs.debug.health(),
      },
    );
    assert.deepEqual(probes.get(5_000), { ok: true, stalled: [], down: [] });
    assert.deepEqual(probes.get(20_000), { ok: false, stalled: [{ what: 'reconcile #1', stage: 'deploying', forMs: 20_000 - 60 }], down: [] });
    assert.deepEqual(probes.get(35_000), { ok: true, stalled: [], down: [] });
    const r = obs.metrics.registry;
    assert.equal(await value(r, 'haprx_instance_deploys_total', { endpoint: 'e1', result: 'ok' }), 1);
    assert.equal(await value(r, 'haprx_instance_deploys_total', { endpoint: 'e2', result: 'failed' }), 1);
    assert.equal(await value(r, 'haprx_deployment_errors_total', { reason: 'change' }), 1);
    assert.equal(await value(r, 'haprx_reconciliation_errors_total', { stage: 'deploy' }), 1);
    assert.equal(await value(r, 'haprx_last_successful_deployment_timestamp_seconds'), 0);
  });

  it('logs one line per event, each with the trace id of its reconciliation', () => {
    const { lines, spans } = observed((cold) => {
      const changes: Observable<ResourceChange> = of(upsert('services', 'web', '1'), synced('services'));
      return { deps: fakes(cold, changes, [endpoint('e1')]), settings: { ...settings, watched: [{ name: 'services' }] } };
    }, 1_000);
    const records = lines.map((l) => JSON.parse(l) as { event?: string; msg: string; trace_id?: string });
    assert.deepEqual(records.map((r) => r.event), ['ConfigAccepted', 'ReconcileTriggered', 'Rendered', 'Validated', 'DeploymentStarted', 'InstanceDeployed', 'DeploymentCompleted']);
    const traceId = spans.find((s) => s.name === 'reconcile')!.spanContext().traceId;
    assert.deepEqual(records.slice(1).map((r) => r.trace_id), Array(6).fill(traceId));
    assert.equal(records[5]!.msg, 'deployed to e1: 1 runtime change(s), no reload in 20 ms');
  });

  it('shows what each deployment changed in the debug log, /debug/vars, the deploy span and the Deployed Event, with credentials redacted', () => {
    const quick: GraphSettings = { ...settings, debounceMs: 0, watched: [{ name: 'services' }] };
    const { obs, lines, spans, events } = observed((cold, hot) => {
      const changes = hot<ResourceChange>('a s 2999ms b', { a: upsert('services', 'web', '1'), s: synced('services'), b: upsert('services', 'api', '1') });
      const deps = fakes(cold, changes, [endpoint('e1')]);
      return {
        settings: quick,
        deps: {
          ...deps,
          // One backend per Service, and a credential that must never show.
          render: ({ resources }) => {
            const names = resources.get('services')!.list().map((s) => s.metadata.name);
            const main = `userlist admins\n  user root password s3cr3t-${names.length}\n${names.map((n) => `backend be_${n}\n  server s1 10.0.0.1:80\n`).join('')}`;
            return cold<RenderOutcome>('10ms (r|)', { r: { ok: true, config: sealRendered({ main, maps: {}, files: {}, certs: {} }) } });
          },
          diff: (from, to) => configDiff(from, to),
        },
      };
    }, 6_000);
    const done = (obs.debug.snapshot() as { scheduling: { diffs: { deployment: number; reason: string; files: unknown[]; text: string }[] } }).scheduling.diffs;
    assert.deepEqual(done.map((d) => [d.deployment, d.reason, d.files]), [
      [1, 'change', [{ path: 'haproxy.cfg', change: 'added', added: 4, removed: 0 }]],
      [2, 'change', [{ path: 'haproxy.cfg', change: 'modified', added: 3, removed: 1 }]],
    ]);
    assert.match(done[1]!.text, /^\+backend be_api\n\+ {2}server s1 10\.0\.0\.1:80$/m);
    assert.match(done[1]!.text, /^- {2}user root password \[redacted\]\n\+ {2}user root password \[redacted\]$/m);
    const records = lines.map((l) => JSON.parse(l) as { event?: string; level: number; msg: string; diff?: string });
    const logged = records.filter((r) => r.event === 'DeploymentDiff');
    assert.deepEqual(logged.map((r) => [r.level, r.msg, r.diff]), [
      [20, 'deployment #1 changed: nothing to compare with: 1 file(s)', undefined],
      [20, 'deployment #2 changed: haproxy.cfg +3 -1', done[1]!.text],
    ]);
    const span = spans.filter((s) => s.name === 'deploy')[1]!;
    assert.equal(span.attributes['haprx.diff.summary'], 'haproxy.cfg +3 -1');
    assert.equal(span.events.find((e) => e.name === 'diff')?.attributes?.['haprx.diff.text'], done[1]!.text);
    const deployed = events.filter((e) => e.type === 'DeploymentCompleted').map((e) => clusterEventFor(e)!.note);
    assert.match(deployed[1]!, /^configuration [0-9a-f]{12} deployed to 1 instance\(s\) \(change\): haproxy\.cfg \+3 -1\n--- a\/haproxy\.cfg/);
    assert.ok(deployed[1]!.includes('\n+backend be_api\n'));
    for (const text of [...deployed]) assert.ok(!/s3cr3t/.test(text));
    for (const text of [...lines, JSON.stringify(obs.debug.snapshot())]) assert.ok(!/s3cr3t/.test(text), 'the credential never shows');
  });

  it('follows a canary through the whole graph: one instance first, a failed check, the rollback; the reconciliation ends canary_failed', async () => {
    const canary = { checkForMs: 1_000, intervalMs: 250 };
    const configs = new Map<string, RenderedConfig>();
    const { obs, trees, events } = observed((cold, hot) => {
      const changes = hot<ResourceChange>('a s 2999ms b', { a: upsert('services', 'web', '1'), s: synced('services'), b: upsert('services', 'flaky', '1') });
      const deps = fakes(cold, changes, [endpoint('e1'), endpoint('e2')], () => cold<InstanceOutcome>('20ms (r|)', { r: { ...OK, reloaded: true } }));
      return {
        settings: { ...settings, debounceMs: 0, watched: [{ name: 'services' }], canary },
        deps: {
          ...deps,
          // Instances remember what they were given, as the targets do.
          deployTo: (e, d) => deps.deployTo(e, d).pipe(tap(() => configs.set(e.id, d.config))),
          canary: {
            // The probe fails once the configuration routes to a Service named flaky.
            check: (_e, config) => cold<CanaryCheck>('5ms (r|)', { r: config.main.includes('flaky') ? { ok: false, problems: ['probe GET http://e1/: 503'] } : { ok: true } }),
            reloads: () => true,
            running: (e) => configs.get(e.id),
          },
        },
      };
    }, 6_000);
    const kinds = events.map((e) => (e.type === 'DeploymentStarted' ? `${e.type}(${e.deployment.reason} ${e.deployment.endpoints.map((x) => x.id).join(',')})` : e.type)).filter((t) => /Canary|DeploymentStarted/.test(t));
    assert.deepEqual(kinds, [
      // Nothing known to run yet: the first configuration is canaried too.
      'CanaryStarted',
      'DeploymentStarted(canary e1)',
      'CanaryPassed',
      'DeploymentStarted(change e2)',
      'CanaryStarted',
      'DeploymentStarted(canary e1)',
      'CanaryFailed',
      'DeploymentStarted(rollback e1)',
    ]);
    assert.deepEqual(trees.map(outline), [
      // Synced at 1 ms; the canary e1 checked from 81 to 1081, then the rest.
      'reconcile[1-1101](render[1-11] validate[11-61] deploy[61-81](deploy.instance[61-81]) schedule.wait[61-61] canary[81-1081] deploy[1081-1101](deploy.instance[1081-1101]) schedule.wait[1081-1081])',
      // Its first check fails at 3086: the reconciliation ends there, and the rollback is a redeploy of its own.
      'reconcile[3001-3086]!(render[3001-3011] validate[3011-3061] deploy[3061-3081](deploy.instance[3061-3081]) schedule.wait[3061-3061] canary[3081-3086]!)',
      'redeploy[3086-3106](deploy[3086-3106](deploy.instance[3086-3106]) schedule.wait[3086-3086])',
    ]);
    assert.equal(trees[1]!.attributes['haprx.reconcile.outcome'], 'canary_failed');
    assert.equal(trees[1]!.error, 'canary e1 failed: probe GET http://e1/: 503');
    const r = obs.metrics.registry;
    assert.equal(await value(r, 'haprx_canaries_total', { result: 'passed' }), 1);
    assert.equal(await value(r, 'haprx_canaries_total', { result: 'failed' }), 1);
    assert.equal(await value(r, 'haprx_reconciliation_errors_total', { stage: 'canary' }), 1);
    assert.equal(await value(r, 'haprx_deployments_total', { reason: 'rollback' }), 1);
    const warning = clusterEventFor(events.find((e) => e.type === 'CanaryFailed')!)!;
    assert.equal(warning.type, 'Warning');
    assert.equal(warning.reason, 'CanaryFailed');
    assert.match(warning.note, /^canary e1 failed with configuration [0-9a-f]{12}, rolled back to [0-9a-f]{12}, the rest left untouched: probe GET http:\/\/e1\/: 503$/);
    assert.ok(!configs.get('e2')!.main.includes('flaky'), 'the rest never got the configuration');
    assert.ok(!configs.get('e1')!.main.includes('flaky'), 'the canary is back');
  });
});
