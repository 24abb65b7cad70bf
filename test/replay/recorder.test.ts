/**
 * Recording a graph that runs in real time, and replaying what was recorded: the same
 * timeline, nothing secret in the file, a cap that ends the file cleanly, a file that
 * cannot be written that stops nothing, and recordings started and stopped at runtime.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Observable, Subject, map, of, timer } from 'rxjs';
import { DEFAULT_SETTINGS } from '../../src/config/controller-config.ts';
import type { CanaryCheck, ControllerEvent, Endpoint, InstanceOutcome } from '../../src/events.ts';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { RecordingControl } from '../../src/replay/control.ts';
import { RecordingSession } from '../../src/replay/recorder.ts';
import { parseRecording } from '../../src/replay/format.ts';
import { type RenderedConfig, sealRendered } from '../../src/templating/rendered.ts';
import { type GraphDeps, type GraphSettings, graph } from '../../streams/graph.ts';
import type { RenderOutcome } from '../../streams/render.ts';
import { firstDifference, recordedTimeline, replayRecording } from '../../src/cli/replay-command.ts';
import { until } from '../k8s/helpers.ts';

const SECRET_VALUE = 's3cr3t-value';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n';
const settings: GraphSettings = { ...DEFAULT_SETTINGS, debounceMs: 5, debounceMaxWaitMs: 20, minDeployIntervalMs: 10, driftIntervalMs: 0, watched: [{ name: 'secrets' }, { name: 'services' }] };
const endpoints: Endpoint[] = [
  { id: 'a', address: 'http://a:5555' },
  { id: 'b', address: 'http://b:5555' },
];

let dir: string;
before(async () => (dir = await mkdtemp(join(tmpdir(), 'haprx-recorder-'))));
after(() => rm(dir, { recursive: true, force: true }));

/** A small world in real time: renders list the services, instance b fails with credentials in its error. */
function world(): { deps: GraphDeps; changes: Subject<ResourceChange> } {
  const changes = new Subject<ResourceChange>();
  const deps: GraphDeps = {
    changes$: changes,
    endpoints$: of(endpoints),
    render: ({ resources }): Observable<RenderOutcome> => {
      const names = resources.get('services')!.list().map((s) => s.metadata.name).join(' ');
      const main = `global\nuserlist admins\n  user admin password ${SECRET_VALUE}\n# ${names}\n`;
      return timer(2).pipe(map(() => ({ ok: true, config: sealRendered({ main, maps: {}, files: {}, certs: { 'site.pem': KEY } }) })));
    },
    validate: () => timer(2).pipe(map(() => ({ ok: true }) as const)),
    deployTo: (endpoint): Observable<InstanceOutcome> =>
      timer(3).pipe(map(() => (endpoint.id === 'b' ? { ok: false, reloaded: false, runtimeOps: 0, error: `POST http://admin:${SECRET_VALUE}@b:5555/v3 failed` } : { ok: true, reloaded: true, runtimeOps: 0 }))),
    diff: (_from, to) => ({ to: to.hash, files: [], text: '', truncated: false }),
  };
  return { deps, changes };
}

const secret: ResourceChange = {
  type: 'upsert',
  resource: 'secrets',
  object: {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'tls', namespace: 'apps', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': `{"data":{"tls.key":"${SECRET_VALUE}"}}` } },
    data: { 'tls.key': Buffer.from(SECRET_VALUE).toString('base64') },
    stringData: { token: SECRET_VALUE },
  },
};
const svc = (name: string): ResourceChange => ({ type: 'upsert', resource: 'services', object: { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'apps' } } });

interface Logged {
  level: string;
  message: string;
}

function control(file: string, logged: Logged[], maxBytes = 1024 * 1024): RecordingControl {
  // The observer's scrubber blanks the values of watched Secrets; this one knows the one value.
  return new RecordingControl({ file, maxBytes, scrub: (s) => s.replaceAll(SECRET_VALUE, '[secret]'), log: (level, message) => logged.push({ level, message }) });
}

async function load(file: string) {
  const parsed = parseRecording(await readFile(file, 'utf8'), file);
  if (!parsed.ok) throw parsed.error;
  return parsed.recording;
}

/** Runs the scripted changes through a recorded graph of `world()`, and closes the recording. */
async function recordScripted(file: string, logged: Logged[], maxBytes?: number): Promise<ControllerEvent[]> {
  const recording = control(file, logged, maxBytes);
  const { deps, changes } = world();
  const events: ControllerEvent[] = [];
  const sub = recording.record(graph, settings, deps).subscribe((e) => events.push(e));
  await scripted(changes, events);
  sub.unsubscribe();
  await recording.close();
  return events;
}

async function scripted(changes: Subject<ResourceChange>, events: ControllerEvent[]): Promise<void> {
  changes.next(secret);
  changes.next(svc('web'));
  changes.next({ type: 'synced', resource: 'secrets' });
  changes.next({ type: 'synced', resource: 'services' });
  await until('the first deployment', () => events.some((e) => e.type === 'DeploymentCompleted'));
  changes.next(svc('api'));
  changes.next(svc('shop'));
  await until('a second deployment', () => events.filter((e) => e.type === 'DeploymentCompleted').length >= 2);
}

describe('recording', () => {
  it('writes what replays to the same timeline, with no Secret value, password, private key or URL credentials in it', async () => {
    const file = join(dir, 'scrubbed.jsonl');
    const logged: Logged[] = [];
    const events = await recordScripted(file, logged);

    const text = await readFile(file, 'utf8');
    for (const leak of [SECRET_VALUE, Buffer.from(SECRET_VALUE).toString('base64'), 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC', 'admin:']) assert.ok(!text.includes(leak), `no ${leak} in the recording`);
    assert.match(text, /"tls\.key":"\[redacted\]"/);
    assert.match(text, /user admin password \[redacted\]/);
    assert.ok(!text.includes('last-applied-configuration'));

    const recorded = await load(file);
    assert.match(recorded.entries.at(-1)!.k, /^end$/);
    const replayed = replayRecording(recorded);
    assert.deepEqual(replayed.divergences, []);
    assert.equal(firstDifference(recordedTimeline(recorded), replayed.timeline), undefined);
    assert.equal(replayed.timeline.length, events.length);
    assert.ok(replayed.timeline.some((e) => e.event.type === 'InstanceDeployFailed'));
    assert.deepEqual(
      logged.map((l) => l.level),
      ['info', 'info'],
    );
  });

  it('records a canary rollout (checks, what instances run, whether a change reloads) that replays to the same timeline', async () => {
    const file = join(dir, 'canary.jsonl');
    const recording = control(file, []);
    const { deps, changes } = world();
    // The rest (b) runs an earlier configuration: each change's verdict is worked out from it.
    const running = new Map<string, RenderedConfig>([['b', sealRendered({ main: 'global\n# earlier\n', maps: {}, files: {}, certs: {} })]]);
    const canaried: GraphDeps = {
      ...deps,
      deployTo: (endpoint, deployment): Observable<InstanceOutcome> =>
        timer(2).pipe(
          map(() => {
            running.set(endpoint.id, deployment.config);
            return { ok: true, reloaded: true, runtimeOps: 0 };
          }),
        ),
      canary: {
        // The configuration with "api" in it fails its canary's checks.
        check: (_endpoint, config) => timer(3).pipe(map((): CanaryCheck => (config.main.includes('api') ? { ok: false, problems: ['probe: 503'] } : { ok: true }))),
        // As haprx works it out: in steps, the value known when they have run.
        reloads: function* (from, to) {
          yield;
          return from.hash !== to.hash;
        },
        running: (endpoint) => running.get(endpoint.id),
      },
    };
    const events: ControllerEvent[] = [];
    const sub = recording.record(graph, { ...settings, canary: { checkForMs: 15, intervalMs: 5 } }, canaried).subscribe((e) => events.push(e));
    await scripted(changes, events);
    await until('the canary failed', () => events.some((e) => e.type === 'CanaryFailed'));
    sub.unsubscribe();
    await recording.close();
    const recorded = await load(file);
    assert.deepEqual(recorded.header.inputs, ['diff', 'canary']);
    const verdicts = recorded.entries.flatMap((e) => (e.k === 'value' && e.dep === 'reloads' ? [e.v] : []));
    assert.ok(verdicts.length > 0 && verdicts.every((v) => v === true), JSON.stringify(verdicts));
    const replayed = replayRecording(recorded);
    assert.deepEqual(replayed.divergences, []);
    assert.equal(firstDifference(recordedTimeline(recorded), replayed.timeline), undefined);
    assert.ok(replayed.timeline.some((e) => e.event.type === 'CanaryStarted'));
    assert.ok(replayed.timeline.some((e) => e.event.type === 'CanaryFailed' && e.event.fields.problems === 'probe: 503'));
  });

  it('ends the file cleanly at its cap, says so, and the graph goes on', async () => {
    const file = join(dir, 'capped.jsonl');
    const logged: Logged[] = [];
    const events = await recordScripted(file, logged, 4096);
    const text = await readFile(file, 'utf8');
    assert.ok(Buffer.byteLength(text) <= 4096, `${Buffer.byteLength(text)} bytes`);
    const recorded = await load(file);
    const end = recorded.entries.at(-1)!;
    assert.ok(end.k === 'end' && end.reason === 'size cap of 4096 bytes reached', JSON.stringify(end));
    assert.ok(logged.some((l) => l.level === 'warn' && /reached its cap of 4096 bytes/.test(l.message)));
    // The graph was not held back: it deployed twice all the same.
    assert.equal(events.filter((e) => e.type === 'DeploymentCompleted').length >= 2, true);
    // What was recorded replays as far as it goes.
    assert.ok(replayRecording(recorded).timeline.length > 0);
  });

  it('stops rather than hold memory when the disk falls behind, and the file ends readable', async () => {
    const file = join(dir, 'behind.jsonl');
    const logged: Logged[] = [];
    const session = new RecordingSession({ file, maxBytes: 1024 * 1024, maxPendingBytes: 2048, scrub: (s) => s, log: (level, message) => logged.push({ level, message }) });
    session.begin(settings, world().deps);
    // Written in one go, faster than any disk: the stream's buffer passes its bound.
    for (let i = 0; i < 200; i++) session.event({ type: 'SourceProblem', source: `file-${i}.yaml`, message: 'x'.repeat(100) });
    assert.equal(session.active, false);
    await session.closed;
    const recorded = await load(file);
    const end = recorded.entries.at(-1)!;
    assert.ok(end.k === 'end' && end.reason === 'the disk fell behind', JSON.stringify(end));
    assert.ok(recorded.entries.length < 200);
    assert.ok(logged.some((l) => l.level === 'warn' && /fell behind the disk/.test(l.message)));
  });

  it('logs a file it cannot write, and the graph goes on unrecorded', async () => {
    const logged: Logged[] = [];
    const events = await recordScripted(join(dir, 'no-such-dir', 'x.jsonl'), logged);
    assert.ok(events.filter((e) => e.type === 'DeploymentCompleted').length >= 2);
    assert.ok(logged.some((l) => l.level === 'error' && /recording to .*x\.jsonl stopped: ENOENT/.test(l.message)), JSON.stringify(logged));
  });

  it('stops at runtime, and starts again in a new numbered file with a rebuilt graph that replays from its sync', async () => {
    const file = join(dir, 'toggled.jsonl');
    const logged: Logged[] = [];
    const recording = control(file, logged);
    const { deps, changes } = world();
    const events: ControllerEvent[] = [];
    // A source that lists everything again on each subscription, as a watch does.
    let subscribed = 0;
    const listing: GraphDeps = {
      ...deps,
      changes$: new Observable<ResourceChange>((subscriber) => {
        subscribed++;
        const s = changes.subscribe(subscriber);
        for (const c of [secret, svc('web'), { type: 'synced', resource: 'secrets' } as const, { type: 'synced', resource: 'services' } as const]) subscriber.next(c);
        return s;
      }),
    };
    const sub = recording.record(graph, settings, listing).subscribe((e) => events.push(e));
    await until('the first deployment', () => events.some((e) => e.type === 'DeploymentCompleted'));
    recording.toggle();
    assert.equal(recording.recording, false);
    const before = events.length;
    recording.toggle();
    assert.equal(subscribed, 2, 'the graph was rebuilt');
    await until('a deployment of the rebuilt graph', () => events.slice(before).some((e) => e.type === 'DeploymentCompleted'));
    changes.next(svc('api'));
    await until('its next deployment', () => events.slice(before).filter((e) => e.type === 'DeploymentCompleted').length >= 2);
    sub.unsubscribe();
    await recording.close();

    const first = await load(file);
    const last = first.entries.at(-1)!;
    assert.ok(last.k === 'end' && last.reason === 'stopped at runtime');
    const second = await load(join(dir, 'toggled-2.jsonl'));
    const replayed = replayRecording(second);
    assert.deepEqual(replayed.divergences, []);
    assert.equal(firstDifference(recordedTimeline(second), replayed.timeline), undefined);
    assert.equal(replayed.timeline[0]!.event.type, 'ReconcileTriggered');
    assert.equal(replayed.timeline.filter((e) => e.event.type === 'DeploymentCompleted').length, 2);
  });
});
