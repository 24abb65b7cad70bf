import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer as createTcpServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DataplaneTarget } from '../../src/dataplane/target.ts';
import { planDeployment } from '../../src/haproxy/plan.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { parseServersState } from '../support/haproxy-runtime.ts';
import { freePort } from '../support/ports.ts';
import { makeSiteCertificate, makeTestPki } from '../support/dataplane-double/certs.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { eventually, routingConfig } from './helpers.ts';

const AUTH = { username: 'admin', password: 'adminpwd' };

function httpsBody(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/', rejectUnauthorized: false, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('DataplaneTarget against the Data Plane API double (real haproxy)', () => {
  let double: DataplaneDouble;
  let target: DataplaneTarget;
  let port: number;
  const echo: Record<string, Awaited<ReturnType<typeof startEcho>>> = {};
  const steps: string[] = [];
  const reloads = async () => {
    await double.reloadsSettled();
    return (await double.reloadCounts()).reloads;
  };
  const bodies = async (host: string, n = 6) => {
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) seen.add((await get(port, '/', host)).body);
    return [...seen].sort();
  };
  const raw = () => readFile(double.configFile, 'utf8');
  const a = (...names: string[]) => names.map((n) => ({ name: n, port: echo[n]!.port }));

  before(async () => {
    port = await freePort();
    for (const name of ['a1', 'a2', 'a3', 'b1']) echo[name] = await startEcho(name);
    double = await startDataplaneDouble({ reloadDelayMs: 50 });
    target = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 25, onStep: (s) => steps.push(`${s.kind}: ${s.detail}`) });
  });

  after(async () => {
    await target.close();
    await double.stop();
    await Promise.all(Object.values(echo).map((e) => e.close()));
  });

  it('first deployment: the map through storage, references rewritten to the storage path, one reload', async () => {
    const outcome = await target.deploy(routingConfig(port, { be_a: a('a1') }, { 'a.test': 'be_a' }));
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.reloaded, true);
    assert.equal(outcome.detail?.mode, 'reload');
    assert.deepEqual(outcome.detail?.reasons, ['nothing is deployed yet']);
    assert.equal(outcome.detail?.ops.uploaded, 1);
    assert.equal(await reloads(), 1);
    assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'a1\n' });
    assert.deepEqual(await readdir(double.storageDirs.maps), ['haprx-hosts.map']);
    const text = await raw();
    assert.match(text, /^# _version=2\n/);
    assert.ok(text.includes(`map(${double.storageDirs.maps}/haprx-hosts.map,be_none)`), text);
    assert.match(text, /# haprx-config sha256=[0-9a-f]{64} version=2\n$/);
    assert.equal(outcome.detail?.version, 2);
  });

  it('adds an endpoint at runtime: traffic reaches it, haproxy does not reload, the stored configuration follows', async () => {
    const before = await reloads();
    const outcome = await target.deploy(routingConfig(port, { be_a: a('a1', 'a2') }, { 'a.test': 'be_a' }));
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, runtimeOps: outcome.runtimeOps, mode: outcome.detail?.mode }, { ok: true, reloaded: false, runtimeOps: 1, mode: 'runtime' });
    assert.deepEqual(await bodies('a.test'), ['a1\n', 'a2\n']);
    assert.equal(await reloads(), before);
    const text = await raw();
    assert.match(text, /^# _version=3\n/);
    assert.match(text, new RegExp(`server a2 127\\.0\\.0\\.1:${echo.a2!.port}\\n`));
  });

  it('churns endpoints (remove, add, re-address, weight) with zero reloads, and traffic follows each step', async () => {
    const before = await reloads();
    let outcome = await target.deploy(routingConfig(port, { be_a: a('a2') }, { 'a.test': 'be_a' }));
    assert.equal(outcome.runtimeOps, 1);
    assert.deepEqual(await bodies('a.test'), ['a2\n']);

    outcome = await target.deploy(routingConfig(port, { be_a: [...a('a2'), { name: 'moving', port: echo.a1!.port }] }, { 'a.test': 'be_a' }));
    assert.equal(outcome.reloaded, false);
    assert.deepEqual(await bodies('a.test'), ['a1\n', 'a2\n']);

    // The same server name on another port: an address change, not a new server.
    outcome = await target.deploy(routingConfig(port, { be_a: [...a('a2'), { name: 'moving', port: echo.a3!.port }] }, { 'a.test': 'be_a' }));
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, runtimeOps: outcome.runtimeOps }, { ok: true, reloaded: false, runtimeOps: 1 });
    assert.deepEqual(await bodies('a.test'), ['a2\n', 'a3\n']);

    outcome = await target.deploy(routingConfig(port, { be_a: [{ ...a('a2')[0]!, extra: 'weight 0' }, { name: 'moving', port: echo.a3!.port }] }, { 'a.test': 'be_a' }));
    assert.equal(outcome.reloaded, false);
    assert.deepEqual(await bodies('a.test'), ['a3\n'], 'weight 0 takes a2 out of rotation');

    outcome = await target.deploy(routingConfig(port, { be_a: [...a('a2'), { name: 'moving', port: echo.a3!.port }] }, { 'a.test': 'be_a' }));
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(await reloads(), before, 'no reload through the whole churn');
    assert.equal(outcome.detail?.ops.servers, 1);
  });

  it('routes a new host through the map at runtime; the stored map file follows', async () => {
    const before = await reloads();
    const next = routingConfig(port, { be_a: [...a('a2'), { name: 'moving', port: echo.a3!.port }] }, { 'a.test': 'be_a', 'alias.test': 'be_a' });
    const outcome = await target.deploy(next);
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, maps: outcome.detail?.ops.maps }, { ok: true, reloaded: false, maps: 1 });
    assert.equal((await get(port, '/', 'alias.test')).status, 200);
    assert.equal(await reloads(), before);
    assert.equal(await readFile(join(double.storageDirs.maps, 'haprx-hosts.map'), 'utf8'), next.maps['hosts.map']);
  });

  it('takes a configuration that differs from the running one only in its map order as running, and stores it', async () => {
    const before = await reloads();
    // What a full render does after the fast path appended an entry its template sorts elsewhere.
    const reordered = routingConfig(port, { be_a: [...a('a2'), { name: 'moving', port: echo.a3!.port }] }, { 'alias.test': 'be_a', 'a.test': 'be_a' });
    assert.notEqual(reordered.hash, target.running!.hash);
    const outcome = await target.deploy(reordered);
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, runtimeOps: outcome.runtimeOps }, { ok: true, reloaded: false, runtimeOps: 0 });
    assert.equal(target.running, reordered, 'the next fast path plans from it, so it must be what the target counts as running');
    assert.equal(await readFile(join(double.storageDirs.maps, 'haprx-hosts.map'), 'utf8'), reordered.maps['hosts.map']);
    assert.match(await raw(), new RegExp(reordered.hash), 'the stored configuration names it');
    assert.equal(await reloads(), before);
  });

  it('reloads exactly once for a new backend, and traffic reaches it', async () => {
    const before = await reloads();
    const outcome = await target.deploy(
      routingConfig(port, { be_a: [...a('a2'), { name: 'moving', port: echo.a3!.port }], be_b: a('b1') }, { 'a.test': 'be_a', 'alias.test': 'be_a', 'b.test': 'be_b' }),
    );
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.reloaded, true);
    assert.match(outcome.detail?.reasons?.join('\n') ?? '', /backend be_b is new/);
    assert.equal(await reloads(), before + 1);
    assert.deepEqual(await get(port, '/', 'b.test'), { status: 200, body: 'b1\n' });
    assert.deepEqual(await get(port, '/', 'a.test').then((r) => r.status), 200);
  });

  it('uploads general files and certificates, and removes the stored files nothing references any more', async () => {
    const hosts = { 'a.test': 'be_a', 'b.test': 'be_b' };
    const backends = { be_a: a('a2'), be_b: a('b1') };
    const tlsPort = await freePort();
    const site = await makeSiteCertificate('site.example');
    const clientsCa = (await makeTestPki()).ca;
    const withFiles = routingConfig(port, backends, hosts, {
      extra: [
        'backend be_err',
        '  errorfile 503 general/503.http',
        '  acl blocked src -f maps/blocked.lst',
        '  http-request deny if blocked',
        'frontend fe_tls',
        `  bind 127.0.0.1:${tlsPort} ssl crt ssl/site.example.pem ca-file ssl/clients-ca.pem verify optional`,
        '  default_backend be_b',
      ].join('\n'),
      files: { '503.http': 'HTTP/1.0 503 Service Unavailable\r\n\r\nbusy\n' },
      maps: { 'blocked.lst': '10.255.0.1\n' },
      certs: { 'site.example.pem': site, 'clients-ca.pem': clientsCa },
    });
    let outcome = await target.deploy(withFiles);
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.detail?.ops.uploaded, 5, 'the four new files and the changed hosts map');
    assert.deepEqual((await readdir(double.storageDirs.maps)).sort(), ['haprx-blocked_lst.map', 'haprx-hosts.map']);
    // ssl_certificates storage refuses a file without a key: the CA goes to general storage.
    assert.deepEqual((await readdir(double.storageDirs.general)).sort(), ['haprx-503.http', 'haprx-clients-ca.pem']);
    assert.deepEqual(await readdir(double.storageDirs.ssl), ['haprx-site_example.pem']);
    const text = await raw();
    assert.ok(text.includes(`errorfile 503 ${double.storageDirs.general}/haprx-503.http`));
    assert.ok(text.includes(`-f ${double.storageDirs.maps}/haprx-blocked_lst.map`));
    assert.ok(text.includes(`crt ${double.storageDirs.ssl}/haprx-site_example.pem ca-file ${double.storageDirs.general}/haprx-clients-ca.pem`));
    assert.equal(await httpsBody(tlsPort), 'b1\n', 'haproxy serves TLS with the stored certificate');

    outcome = await target.deploy(routingConfig(port, backends, hosts));
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.reloaded, true);
    assert.equal(outcome.detail?.ops.deleted, 4);
    assert.deepEqual(await readdir(double.storageDirs.maps), ['haprx-hosts.map']);
    assert.deepEqual(await readdir(double.storageDirs.general), []);
    assert.deepEqual(await readdir(double.storageDirs.ssl), []);
  });

  it('leaves files it did not store alone', async () => {
    const hosts = { 'a.test': 'be_a', 'b.test': 'be_b' };
    const form = new FormData();
    form.append('file_upload', new Blob(['x y\n']), 'someone-else.map');
    await target.client.request('POST', '/services/haproxy/storage/maps', { body: form });
    const outcome = await target.deploy(routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, hosts, { extra: 'backend be_more\n  server m1 127.0.0.1:1' }));
    assert.equal(outcome.ok, true, outcome.error);
    assert.deepEqual((await readdir(double.storageDirs.maps)).sort(), ['haprx-hosts.map', 'someone-else.map']);
  });

  it('does nothing for the configuration already running', async () => {
    const current = routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_more\n  server m1 127.0.0.1:1' });
    const before = await reloads();
    const calls = double.requests.length;
    const outcome = await target.deploy(current);
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, runtimeOps: outcome.runtimeOps, mode: outcome.detail?.mode }, { ok: true, reloaded: false, runtimeOps: 0, mode: 'none' });
    assert.equal(await reloads(), before);
    assert.deepEqual(
      double.requests.slice(calls).map((r) => `${r.method} ${r.path}`),
      ['GET /v3/services/haproxy/configuration/version'],
      'one version check, nothing else',
    );
  });

  it('a new target (a restarted or newly elected controller) adopts the configuration it finds untouched: no reload', async () => {
    const current = routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_more\n  server m1 127.0.0.1:1' });
    const fresh = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 25 });
    try {
      const before = await reloads();
      const same = await fresh.deploy(current);
      assert.deepEqual({ ok: same.ok, mode: same.detail?.mode }, { ok: true, mode: 'none' });
      const churn = await fresh.deploy(routingConfig(port, { be_a: a('a2', 'a3'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_more\n  server m1 127.0.0.1:1' }));
      assert.deepEqual({ ok: churn.ok, mode: churn.detail?.mode }, { ok: true, mode: 'runtime' });
      assert.equal(await reloads(), before);
      // Back to what the first target knows: the other one (a replica that led meanwhile) left
      // its marker at the current version, so this is no drift; it runs another render, so it reloads.
      const back = await target.deploy(current);
      assert.equal(back.ok, true, back.error);
      assert.equal(back.detail?.drift, undefined);
      assert.equal(back.detail?.mode, 'reload');
      assert.equal(await reloads(), before + 1);
      // And when the other replica had deployed the very render wanted, nothing reloads either.
      const moved = routingConfig(port, { be_a: a('a3'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_more\n  server m1 127.0.0.1:1' });
      assert.equal((await fresh.deploy(moved)).ok, true);
      const reloadsBefore = await reloads();
      const adopted = await target.deploy(moved);
      assert.deepEqual({ ok: adopted.ok, mode: adopted.detail?.mode, drift: adopted.detail?.drift }, { ok: true, mode: 'none', drift: undefined });
      assert.equal(await reloads(), reloadsBefore);
      assert.equal((await target.deploy(current)).detail?.mode, 'runtime', 'and it deploys on from the adopted state');
      // A target that knows nothing finds haprx's marker at another version: drift too.
      await double.foreignChange('# a comment from another client', false);
      const third = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 25 });
      const overwritten = await third.deploy(current);
      await third.close();
      assert.equal(overwritten.ok, true, overwritten.error);
      assert.equal(overwritten.detail?.mode, 'reload');
      assert.match(overwritten.detail?.drift ?? '', /posted as version \d+ is at version \d+: someone else changed the instance/);
    } finally {
      await fresh.close();
    }
  });

  it('overwrites a change someone else made and reports it as drift', async () => {
    const current = routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_more\n  server m1 127.0.0.1:1' });
    await double.foreignChange('backend be_foreign\n  server f1 127.0.0.1:1');
    assert.match(await raw(), /backend be_foreign/);
    const before = await reloads();
    const outcome = await target.deploy(current);
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.reloaded, true);
    assert.match(outcome.detail?.drift ?? '', /someone else changed the instance/);
    assert.equal(outcome.drift, outcome.detail?.drift, 'the outcome carries the drift to the event stream');
    assert.doesNotMatch(await raw(), /be_foreign/);
    assert.equal(await reloads(), before + 1);
    // The next deployment sees no drift.
    const again = await target.deploy(current);
    assert.equal(again.detail?.drift, undefined);
    assert.equal(again.detail?.mode, 'none');
  });

  it('a 409 race on a runtime change: refetches the version, overwrites with a full deployment, reports drift', async () => {
    double.faults.conflict(1);
    const outcome = await target.deploy(routingConfig(port, { be_a: a('a2', 'a1'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_more\n  server m1 127.0.0.1:1' }));
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.reloaded, true);
    assert.equal(outcome.detail?.conflicts, 1);
    assert.match(outcome.detail?.drift ?? '', /someone else changed the configuration during the deployment/);
    assert.doesNotMatch(await raw(), /another client/);
    assert.deepEqual(await bodies('a.test'), ['a1\n', 'a2\n']);
  });

  it('a 409 race on a structural change retries with the new version', async () => {
    double.faults.conflict(2);
    const before = await reloads();
    const outcome = await target.deploy(routingConfig(port, { be_a: a('a2', 'a1'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }));
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.detail?.conflicts, 2);
    assert.equal(await reloads(), before + 1);
  });

  it('gives up after a bounded number of 409 conflicts, with a clear error', async () => {
    double.faults.conflict(10);
    const outcome = await target.deploy(routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: 'backend be_x\n  server x 127.0.0.1:1' }));
    await double.faults.clear();
    assert.equal(outcome.ok, false);
    assert.match(outcome.error ?? '', /version kept changing: 4 attempts met a 409 conflict/);
    assert.equal(outcome.detail?.conflicts, 4);
  });

  it('reports a failed reload with haproxy\'s words, keeps serving, and takes the restored configuration back', async () => {
    const good = routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' });
    assert.equal((await target.deploy(good)).ok, true);
    // haproxy -c accepts a bind to a port another process holds; the reload then fails.
    const busyPort = await freePort();
    const busy = createTcpServer();
    await new Promise<void>((r) => busy.listen(busyPort, '127.0.0.1', r));
    try {
      const counts = await double.reloadCounts();
      const outcome = await target.deploy(routingConfig(port, { be_a: a('a2'), be_b: a('b1') }, { 'a.test': 'be_a', 'b.test': 'be_b' }, { extra: `frontend fe_busy\n  bind 127.0.0.1:${busyPort}\n  default_backend be_a` }));
      assert.equal(outcome.ok, false);
      assert.equal(outcome.reloaded, false);
      assert.match(outcome.error ?? '', /reload \d{4}-\d{2}-\d{2}-\d+ failed: .*cannot bind socket/);
      await double.reloadsSettled();
      assert.equal((await double.reloadCounts()).failed, counts.failed + 1);
      assert.equal((await get(port, '/', 'b.test')).body, 'b1\n', 'the running configuration still serves');
      assert.doesNotMatch(await raw(), /fe_busy/, 'the API put the last good configuration back');
    } finally {
      busy.close();
    }
    // The API put back the file of the last successful reload, which is `good` with haprx's marker: adopted, nothing to do.
    const before = await reloads();
    const outcome = await target.deploy(good);
    assert.deepEqual({ ok: outcome.ok, mode: outcome.detail?.mode }, { ok: true, mode: 'none' });
    assert.equal(await reloads(), before);
    assert.ok(steps.some((s) => /^contact: adopted the running configuration/.test(s)));
  });
});

describe('DataplaneTarget deleting a busy server (double, real haproxy)', () => {
  it('does not reload: the server leaves rotation at once and is deleted when its request ends', async () => {
    const port = await freePort();
    const slow = createHttpServer((_req, res) => setTimeout(() => res.end('slow\n'), 1_500));
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const slowPort = (slow.address() as { port: number }).port;
    const double = await startDataplaneDouble({ reloadDelayMs: 20 });
    const target = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 20, deleteRetryMs: 200 });
    after(async () => {
      await target.close();
      await double.stop();
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    });
    assert.equal((await target.deploy(routingConfig(port, { be_s: [{ name: 'slow', port: slowPort }] }, { 's.test': 'be_s' }))).ok, true);
    await double.reloadsSettled();
    const before = (await double.reloadCounts()).reloads;

    const inFlight = get(port, '/', 's.test');
    await new Promise((r) => setTimeout(r, 300));
    const outcome = await target.deploy(routingConfig(port, { be_s: [] }, { 's.test': 'be_s' }));
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, runtimeOps: outcome.runtimeOps }, { ok: true, reloaded: false, runtimeOps: 1 });
    assert.deepEqual(target.deletionsPending, ['be_s/slow'], 'haproxy refused the delete while the request runs');
    assert.equal((await get(port, '/', 's.test')).status, 503, 'no new traffic reaches it');
    assert.deepEqual(await inFlight, { status: 200, body: 'slow\n' }, 'the request in flight completes');
    await eventually(() => target.deletionsPending.length === 0, 20_000, 'the deletion');
    assert.doesNotMatch(await double.haproxy.runtime('show servers state be_s'), / slow /);
    assert.equal((await double.reloadCounts()).reloads, before);
  });

  it('takes back a server whose deletion still waits when it is wanted again, at its new address, without a reload', async () => {
    const port = await freePort();
    const slow = createHttpServer((_req, res) => setTimeout(() => res.end('slow\n'), 1_500));
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const slowPort = (slow.address() as { port: number }).port;
    const moved = await startEcho('moved');
    const double = await startDataplaneDouble({ reloadDelayMs: 20 });
    const target = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 20, deleteRetryMs: 200 });
    after(async () => {
      await target.close();
      await double.stop();
      await moved.close();
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    });
    const hosts = { 's.test': 'be_s' };
    assert.equal((await target.deploy(routingConfig(port, { be_s: [{ name: 'ep', port: slowPort }] }, hosts))).ok, true);
    await double.reloadsSettled();
    const before = (await double.reloadCounts()).reloads;

    const inFlight = get(port, '/', 's.test');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await target.deploy(routingConfig(port, { be_s: [] }, hosts))).ok, true);
    assert.deepEqual(target.deletionsPending, ['be_s/ep'], 'the deletion waits for the request');

    const outcome = await target.deploy(routingConfig(port, { be_s: [{ name: 'ep', port: moved.port }] }, hosts));
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, mode: outcome.detail?.mode }, { ok: true, reloaded: false, mode: 'runtime' });
    assert.deepEqual(target.deletionsPending, [], 'the deletion is called off');
    assert.deepEqual(await get(port, '/', 's.test'), { status: 200, body: 'moved\n' }, 'traffic reaches it at its new address');
    assert.deepEqual(await inFlight, { status: 200, body: 'slow\n' }, 'the request in flight completes');

    // Several retry intervals after its connections closed: a retry left over would have deleted it.
    await new Promise((r) => setTimeout(r, 1_000));
    assert.deepEqual(await get(port, '/', 's.test'), { status: 200, body: 'moved\n' });
    assert.match(await double.haproxy.runtime('show servers state be_s'), / ep /);
    await double.reloadsSettled();
    assert.equal((await double.reloadCounts()).reloads, before, 'no reload');
  });
});

describe('DataplaneTarget against an API before 3.3.1 (double)', () => {
  it('changes addresses and weights through X-Runtime-Actions, since the runtime server PUT ignores them there', async () => {
    const port = await freePort();
    const e1 = await startEcho('e1');
    const e2 = await startEcho('e2');
    const double = await startDataplaneDouble({ apiVersion: 'v3.2.4 legacy', reloadDelayMs: 20 });
    const target = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 20 });
    try {
      const hosts = { 'e.test': 'be_e' };
      assert.equal((await target.deploy(routingConfig(port, { be_e: [{ name: 'one', port: e1.port }, { name: 'two', port: e2.port }] }, hosts))).ok, true);
      await double.reloadsSettled();
      const before = (await double.reloadCounts()).reloads;
      // `one` moves to e2's port; `two` gets weight 0.
      const outcome = await target.deploy(routingConfig(port, { be_e: [{ name: 'one', port: e2.port }, { name: 'two', port: e2.port, extra: 'weight 0' }] }, hosts));
      assert.deepEqual({ ok: outcome.ok, mode: outcome.detail?.mode, runtimeOps: outcome.runtimeOps }, { ok: true, mode: 'runtime', runtimeOps: 2 });
      const rows = parseServersState(await double.haproxy.runtime('show servers state be_e'));
      assert.deepEqual(rows.map((r) => [r.name, r.port, r.weight]), [['one', String(e2.port), '1'], ['two', String(e2.port), '0']]);
      for (let i = 0; i < 4; i++) assert.equal((await get(port, '/', 'e.test')).body, 'e2\n');
      assert.equal((await double.reloadCounts()).reloads, before);
    } finally {
      await target.close();
      await double.stop();
      await e1.close();
      await e2.close();
    }
  });
});

describe('DataplaneTarget: a fast change', () => {
  let double: DataplaneDouble;
  let target: DataplaneTarget;
  let port: number;
  const echo: Record<string, Awaited<ReturnType<typeof startEcho>>> = {};
  const config = (name: string) => routingConfig(port, { be_a: [{ name, port: echo[name]!.port }] }, { 'a.test': 'be_a' });
  const served = async () => (await get(port, '/', 'a.test').catch(() => ({ body: '' }))).body;
  const VERSION = '/v3/services/haproxy/configuration/version';

  before(async () => {
    port = await freePort();
    for (const name of ['f1', 'f2', 'f3']) echo[name] = await startEcho(name);
    double = await startDataplaneDouble({ reloadDelayMs: 50 });
    target = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 25 });
    const first = await target.deploy(config('f1'));
    assert.equal(first.ok, true, first.error);
    await eventually(async () => (await served()) === 'f1\n', 10_000, 'the first configuration served');
  });

  after(async () => {
    await target.close();
    await double.stop();
    await Promise.all(Object.values(echo).map((e) => e.close()));
  });

  it('goes out while the version is read: a slow read holds its traffic back no longer', async () => {
    const from = target.running!;
    const next = config('f2');
    const plan = planDeployment(from, next);
    assert.equal(plan.kind, 'runtime');
    double.faults.slow(2_000, { method: 'GET', path: VERSION }, 1);
    const deploying = target.deploy(next, undefined, { from: from.hash, ops: plan.kind === 'runtime' ? plan.ops : [] });
    await eventually(async () => (await served()) === 'f2\n', 10_000, 'the fast change served');
    const read = double.requests.filter((r) => r.path === VERSION).at(-1);
    assert.equal(read?.status, 0, 'the traffic moved while the version read was still unanswered');
    const outcome = await deploying;
    assert.deepEqual({ ok: outcome.ok, reloaded: outcome.reloaded, mode: outcome.detail?.mode }, { ok: true, reloaded: false, mode: 'runtime' });
    assert.equal(target.running, next);
    await double.faults.clear();
  });

  it('leaves the change to the full deployment when someone else changed the instance meanwhile, which reports the drift', async () => {
    const from = target.running!;
    await double.foreignChange('backend be_foreign\n  server x 127.0.0.1:1', false);
    const next = config('f3');
    const plan = planDeployment(from, next);
    const outcome = await target.deploy(next, undefined, { from: from.hash, ops: plan.kind === 'runtime' ? plan.ops : [] });
    assert.equal(outcome.ok, false);
    assert.match(outcome.error ?? '', /fast path: the configuration is at version \d+, not \d+ as haprx left it: someone else changed the instance; left to the full deployment/);
    assert.match(await readFile(double.configFile, 'utf8'), /be_foreign/, 'nothing stored over the foreign change');
    const full = await target.deploy(next);
    assert.equal(full.ok, true, full.error);
    assert.match(full.detail?.drift ?? '', /someone else changed the instance/);
    assert.doesNotMatch(await readFile(double.configFile, 'utf8'), /be_foreign/);
    await eventually(async () => (await served()) === 'f3\n', 10_000, 'the change served after the full deployment');
  });
});
