/**
 * One round of canary checks, each broken on its own: the Data Plane API's health, a
 * reload that fails during the canary (not one that had failed before it), and the
 * HTTP probe (wrong status, no answer in time, nothing listening, the Host it sends).
 */
import assert from 'node:assert/strict';
import { type Server, createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { CanaryProbeSettings } from '../../src/config/controller-config.ts';
import { CanaryChecker, probeUrl } from '../../src/dataplane/canary-check.ts';
import type { DataplaneClient } from '../../src/dataplane/client.ts';
import { freePort } from '../support/ports.ts';

/** A Data Plane API as the checker reads it: health and the reloads list, as given. */
function api(state: { haproxy: string; reloads: { id: string; status: string; response?: string }[]; down?: boolean }): Pick<DataplaneClient, 'request'> {
  return {
    request: async (_method, path) => {
      if (state.down) throw new Error('GET /v3/health: connect ECONNREFUSED 127.0.0.1:5555');
      const body = path === '/health' ? { haproxy: state.haproxy } : path === '/services/haproxy/reloads' ? state.reloads : undefined;
      if (body === undefined) throw new Error(`unexpected ${path}`);
      return { status: 200, text: JSON.stringify(body), headers: {} } as never;
    },
  };
}

describe('CanaryChecker', () => {
  let server: Server;
  let port: number;
  const seen: string[] = [];
  const probe = (over: Partial<CanaryProbeSettings> = {}): CanaryProbeSettings => ({ port, path: '/healthz', host: 'app.test', scheme: 'http', expectStatus: [], timeoutMs: 300, ...over });

  before(async () => {
    server = createServer((req, res) => {
      seen.push(`${req.headers.host} ${req.url}`);
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2_000).unref();
      res.statusCode = req.url === '/broken' ? 503 : 200;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('passes an instance whose haproxy is up, with no new failed reload, that answers the probe', async () => {
    const checker = new CanaryChecker(api({ haproxy: 'up', reloads: [{ id: '2026-07-01-1', status: 'failed' }] }), 'http://127.0.0.1:5555');
    assert.deepEqual(await checker.check(1000, probe()), { ok: true });
    assert.deepEqual(await checker.check(1000, probe({ expectStatus: [200, 204] })), { ok: true });
    assert.deepEqual(seen.slice(-1), ['app.test /healthz']);
    assert.equal(probeUrl('https://10.0.0.7:5555', probe({ port: 8443, scheme: 'https' })).href, 'https://10.0.0.7:8443/healthz');
  });

  it('names each problem: haproxy down, a reload that failed during the canary, a probe that answers wrongly', async () => {
    const state: Parameters<typeof api>[0] = { haproxy: 'up', reloads: [{ id: '2026-07-01-1', status: 'failed', response: 'old news' }] };
    const checker = new CanaryChecker(api(state), 'http://127.0.0.1:5555');
    // The first round of a canary takes the failures it finds as its baseline.
    assert.deepEqual(await checker.check(2000, probe()), { ok: true });
    state.haproxy = 'down';
    state.reloads.push({ id: '2026-07-01-2', status: 'failed', response: '[ALERT] (1) : cannot bind socket\nsecond line' }, { id: '2026-07-01-3', status: 'succeeded' });
    assert.deepEqual(await checker.check(2000, probe({ path: '/broken' })), {
      ok: false,
      problems: [
        'Data Plane health: haproxy is down',
        '1 reload(s) failed while the canary was checked, e.g. 2026-07-01-2: [ALERT] (1) : cannot bind socket',
        `probe GET http://127.0.0.1:${port}/broken (Host app.test): 503`,
      ],
    });
    // A new canary (another `since`) starts from what has failed by then.
    state.haproxy = 'up';
    assert.deepEqual(await checker.check(9000, probe()), { ok: true });
  });

  it('fails a probe that does not answer in time, or finds nothing listening, and an API that cannot be reached', async () => {
    const checker = new CanaryChecker(api({ haproxy: 'up', reloads: [] }), 'http://127.0.0.1:5555');
    const slow = await checker.check(1, probe({ path: '/slow', timeoutMs: 100 }));
    assert.deepEqual(slow, { ok: false, problems: [`probe GET http://127.0.0.1:${port}/slow (Host app.test): no answer within 100 ms`] });
    const closed = await freePort();
    const { host: _host, ...withoutHost } = probe({ port: closed });
    const nothing = await checker.check(1, withoutHost);
    assert.equal(nothing.ok, false);
    assert.match((nothing as { problems: readonly string[] }).problems[0]!, new RegExp(`^probe GET http://127\\.0\\.0\\.1:${closed}/healthz: connect ECONNREFUSED`));
    const down = await new CanaryChecker(api({ haproxy: 'up', reloads: [], down: true }), 'http://127.0.0.1:5555').check(1, undefined);
    assert.deepEqual(down, {
      ok: false,
      problems: ['Data Plane health: GET /v3/health: connect ECONNREFUSED 127.0.0.1:5555', 'reloads: GET /v3/health: connect ECONNREFUSED 127.0.0.1:5555'],
    });
  });
});
