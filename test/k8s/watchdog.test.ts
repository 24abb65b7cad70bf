/**
 * The list/watch watchdog against the real API server's timing, with the real
 * @kubernetes/client-node and the API server double. A real server (v1.23) bookmarks
 * an idle watch that asked for bookmarks about once a minute, and once more 2 s
 * before the watch's timeout; it ends the watch at the timeoutSeconds it was given
 * (300-600 s here).
 *
 * Time scale: the double and the watchdog both run the server's clock SCALE times
 * as fast (SCALE = 0.02: one server minute is 1.2 s of test time, three minutes are
 * 3.6 s). Every duration below is written in server time and scaled with `s()`, so
 * the cadence, the watch timeout and the watchdog's margin keep the relation they
 * have against a real server.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { KubeApi } from '../../src/k8s/api.ts';
import { type ListWatchDiagnostic, type ListWatchOptions, type WatchSpec, listWatch, watchdogLimits } from '../../src/k8s/list-watch.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { apiFor, configMap, record, sleep, until } from './helpers.ts';

const SCALE = 0.02;
/** Server milliseconds as test milliseconds. */
const s = (serverMs: number) => serverMs * SCALE;
const MINUTE = 60_000;
const CONFIGMAPS: WatchSpec = { name: 'cms', apiVersion: 'v1', resource: 'configmaps' };
const SECRETS: WatchSpec = { name: 'secrets', apiVersion: 'v1', resource: 'secrets' };
const OPTIONS: ListWatchOptions = { timeScale: SCALE, minWatchMs: 0, backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 } };

let double: KubeApiDouble | undefined;
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await double?.stop();
  double = undefined;
});

function start(api: KubeApi, spec: WatchSpec, options: ListWatchOptions = {}) {
  const diagnostics: ListWatchDiagnostic[] = [];
  const { items, subscription } = record(listWatch(api, spec, { ...OPTIONS, ...options, onDiagnostic: (d) => diagnostics.push(d) }));
  stops.push(() => subscription.unsubscribe());
  return { changes: items, diagnostics };
}

const ended = (diagnostics: ListWatchDiagnostic[], reason?: string) =>
  diagnostics.filter((d): d is Extract<ListWatchDiagnostic, { type: 'watch-ended' }> => d.type === 'watch-ended' && (reason === undefined || d.reason === reason));

describe('the watchdog, against the real server timing (scaled, see the header)', () => {
  it('derives its limits from the bookmark cadence and the watch timeout, past the minute a real server leaves between bookmarks', () => {
    const limits = watchdogLimits({ timeoutSeconds: 300, bookmarkMs: MINUTE, marginMs: 30_000, scale: 1 });
    assert.deepEqual(limits, { silenceMs: 90_000, deadlineMs: 330_000, clientInactivityMs: 360_000 });
    assert.ok(limits.silenceMs > MINUTE, 'an idle watch between two bookmarks is not dead');
  });

  it('does not re-watch a healthy idle watch during 3 minutes of silence; with a 30 s silence limit the same watch is re-watched again and again', async () => {
    double = await KubeApiDouble.start({ token: 'test-token', timeScale: SCALE });
    const api = apiFor(double);
    double.create('v1', 'configmaps', configMap('a'));
    const healthy = start(api, CONFIGMAPS);
    // A silence limit of 30 s (15 s cadence + 15 s margin), as haprx had: shorter than the real cadence.
    const old = start(api, SECRETS, { bookmarkIntervalMs: 15_000, watchMarginMs: 15_000 });
    await until('both watching', () => double!.openWatches('configmaps') === 1 && double!.openWatches('secrets') === 1);
    await sleep(s(3 * MINUTE));
    const watches = double.requestsFor('configmaps', { method: 'GET', watch: true });
    assert.equal(watches.length, 1, `re-watches: ${ended(healthy.diagnostics).map((d) => d.message).join('; ')}`);
    assert.deepEqual(ended(healthy.diagnostics), []);
    assert.equal(watches[0]!.query.allowWatchBookmarks, 'true');
    const timeout = Number(watches[0]!.query.timeoutSeconds);
    assert.ok(timeout >= 300 && timeout <= 600, `timeoutSeconds ${timeout}`);
    // The healthy watch at 1 and 2 minutes (3 is the edge of the window); the other at least once before it was cut.
    assert.ok(double.bookmarksSent >= 3, `the server bookmarked the idle watches (${double.bookmarksSent} bookmarks)`);
    // From the first bookmark (at 1 min) on, every 30 s: 3 or 4 times in the remaining 2 minutes.
    assert.ok(ended(old.diagnostics, 'silent').length >= 3, `the 30 s watchdog fired ${ended(old.diagnostics, 'silent').length} times`);
    assert.equal(healthy.changes.filter((c) => c.type === 'replace').length, 1, 'listed once');
  });

  it('finds a dead watch within the bookmark cadence plus the margin, and resumes from its resourceVersion without a relist', async () => {
    double = await KubeApiDouble.start({ token: 'test-token', timeScale: SCALE });
    const api = apiFor(double);
    const { changes, diagnostics } = start(api, CONFIGMAPS);
    await until('a bookmark', () => double!.bookmarksSent >= 1, s(2 * MINUTE));
    await sleep(20);
    const stalledAt = Date.now();
    double.stallWatches();
    double.create('v1', 'configmaps', configMap('while-dead'));
    await until('the change, through a new watch', () => changes.some((c) => c.type === 'upsert' && c.object.metadata.name === 'while-dead'), s(3 * MINUTE));
    const waited = Date.now() - stalledAt;
    const [silent] = ended(diagnostics, 'silent');
    assert.ok(silent, 'the watchdog fired');
    assert.match(silent.message ?? '', /no event or bookmark/);
    assert.ok(waited >= s(90_000) - s(MINUTE) - 50, `not before the cadence and margin since the last bookmark (${waited} ms)`);
    assert.ok(waited <= s(90_000) + 1_000, `within the cadence and margin (${waited} ms, limit ${s(90_000)} ms)`);
    assert.equal(double.requestsFor('configmaps', { method: 'GET', watch: false }).length, 1, 'no relist');
  });

  it('without bookmarks from the server, ends a dead watch at its timeout plus the margin, and leaves a healthy one to the server', async () => {
    double = await KubeApiDouble.start({ token: 'test-token', timeScale: SCALE, bookmarkIntervalMs: 0 });
    const api = apiFor(double);
    const healthy = start(api, CONFIGMAPS, { watchTimeoutSeconds: [20, 20] });
    const dead = start(api, SECRETS, { watchTimeoutSeconds: [20, 20] });
    await until('both watching', () => double!.openWatches('configmaps') === 1 && double!.openWatches('secrets') === 1);
    double.stallWatches('secrets');
    const stalledAt = Date.now();
    await until('the dead watch abandoned', () => ended(dead.diagnostics, 'silent').length === 1, s(2 * MINUTE));
    const waited = Date.now() - stalledAt;
    assert.ok(waited >= s(20_000 + 30_000) - 100, `not before the timeout and the margin (${waited} ms)`);
    assert.match(ended(dead.diagnostics, 'silent')[0]!.message ?? '', /did not end the watch at its timeout/);
    await until('the healthy watch ended by the server', () => ended(healthy.diagnostics).length >= 1, s(MINUTE));
    assert.ok(ended(healthy.diagnostics).every((d) => d.reason === 'closed'), ended(healthy.diagnostics).map((d) => d.reason).join(', '));
  });

  it('pushes the client library’s own inactivity timeout (30 s by default) to where it is told', async () => {
    double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
    const api = apiFor(double);
    const done: unknown[] = [];
    const began = Date.now();
    const controller = await api.watch('/api/v1/configmaps', { resourceVersion: '1' }, () => undefined, (err) => done.push(err), 300);
    stops.push(() => controller.abort());
    await until('the client gave up', () => done.length === 1, 5_000);
    assert.equal((done[0] as { name?: string }).name, 'TimeoutError');
    assert.ok(Date.now() - began < 5_000);
  });
});
