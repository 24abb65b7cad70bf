/**
 * The deploy stage (streams/deploy.ts) fanning one deployment out to many Data
 * Plane API doubles through dataplaneDeployTo: each failing endpoint gives its
 * own clear InstanceDeployFailed, the others deploy, and ten at once take about
 * as long as one.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createTcpServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { dataplaneDeployTo } from '../../src/dataplane/deploy-to.ts';
import { DataplaneTarget, type DataplaneTargetOptions } from '../../src/dataplane/target.ts';
import type { DeployRequest, Endpoint, InstanceResult } from '../../src/events.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { deployer } from '../../streams/deploy.ts';
import { makeTestPki } from '../support/dataplane-double/certs.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { type RemoteDouble, startRemoteDouble } from '../support/dataplane-double/remote.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { routingConfig } from './helpers.ts';

const AUTH = { username: 'admin', password: 'adminpwd' };

function request(config: RenderedConfig, endpoints: Endpoint[], seq: number): DeployRequest {
  return { reconcile: { seq, cause: { reason: 'resources', changes: [] }, at: Date.now() }, config, endpoints, reason: 'change', queuedAt: Date.now() };
}

async function runDeployment(targets: Map<string, DataplaneTarget>, config: RenderedConfig, endpoints: Endpoint[], timeoutMs: number, seq = 1, maxParallel = 0) {
  const deploy = deployer({ deployTo: dataplaneDeployTo((e) => targets.get(e.id)) }, { maxParallel, timeoutMs });
  const events = await lastValueFrom(deploy(request(config, endpoints, seq)).pipe(toArray()));
  const done = events.find((e) => e.type === 'DeploymentCompleted');
  assert.ok(done && done.type === 'DeploymentCompleted');
  const byId = new Map<string, { type: string; result: InstanceResult }>();
  for (const e of events) if (e.type === 'InstanceDeployed' || e.type === 'InstanceDeployFailed') byId.set(e.result.endpoint.id, { type: e.type, result: e.result });
  return { byId, durationMs: done.durationMs };
}

describe('deploy stage → Data Plane API doubles: failures stay with their endpoint', () => {
  const doubles: DataplaneDouble[] = [];
  const targets = new Map<string, DataplaneTarget>();
  const endpoints: Endpoint[] = [];
  let port: number;
  let busy: Server;
  let busyPort: number;
  let wrapperDir: string;
  const echo: Awaited<ReturnType<typeof startEcho>>[] = [];

  const add = (id: string, address: string, options: Partial<DataplaneTargetOptions> = {}) => {
    targets.set(id, new DataplaneTarget({ baseUrl: address, ...AUTH, reloadPollMs: 25, retryDelayMs: 20, ...options }));
    endpoints.push({ id, address });
  };
  const config = (servers: number) =>
    routingConfig(port, { be_a: echo.slice(0, servers).map((e, i) => ({ name: `a${i}`, port: e.port })) }, { 'a.test': 'be_a' }, {
      // Only the haproxy started with HAPRX_TEST_BUSY set binds the busy port, and only a reload finds out.
      extra: `.if defined(HAPRX_TEST_BUSY)\nfrontend fe_busy\n  bind 127.0.0.1:${busyPort}\n  default_backend be_a\n.endif`,
    });

  before(async () => {
    port = await freePort();
    busyPort = await freePort();
    busy = createTcpServer();
    await new Promise<void>((r) => busy.listen(busyPort, '127.0.0.1', r));
    for (let i = 0; i < 2; i++) echo.push(await startEcho(`a${i}`));
    wrapperDir = await mkdtemp(join(tmpdir(), 'haprx-wrapper-'));
    const wrapper = join(wrapperDir, 'haproxy-busy');
    await writeFile(wrapper, '#!/bin/sh\nexport HAPRX_TEST_BUSY=1\nexec haproxy "$@"\n');
    await chmod(wrapper, 0o755);
    const pki = await makeTestPki();

    const start = async (options: Parameters<typeof startDataplaneDouble>[0] = {}) => {
      const d = await startDataplaneDouble({ reloadDelayMs: 50, ...options });
      doubles.push(d);
      return d;
    };
    add('ok-1', (await start()).url);
    add('ok-2', (await start()).url);
    add('wrong-credentials', (await start()).url, { password: 'wrong-password' });
    add('invalid-client-certificate', (await start({ tls: { ...pki.server, ca: pki.ca } })).url, { ca: pki.ca, ...pki.rogueClient });
    add('down', `http://127.0.0.1:${await freePort()}`);
    const slow = await start();
    slow.faults.slow(8_000);
    add('slow', slow.url);
    const racing = await start();
    racing.faults.conflict(1_000);
    add('race-409', racing.url);
    add('failed-reload', (await start({ haproxyBin: wrapper })).url);
  });

  after(async () => {
    await Promise.all([...targets.values()].map((t) => t.close()));
    await Promise.all(doubles.map((d) => d.stop()));
    await Promise.all(echo.map((e) => e.close()));
    busy.close();
    await rm(wrapperDir, { recursive: true, force: true });
  });

  it('each broken endpoint fails with its own reason; the healthy ones deploy and serve', async () => {
    const { byId } = await runDeployment(targets, config(1), endpoints, 4_000);
    const summary = Object.fromEntries([...byId].map(([id, r]) => [id, r.type]));
    assert.deepEqual(summary, {
      'ok-1': 'InstanceDeployed',
      'ok-2': 'InstanceDeployed',
      'wrong-credentials': 'InstanceDeployFailed',
      'invalid-client-certificate': 'InstanceDeployFailed',
      down: 'InstanceDeployFailed',
      slow: 'InstanceDeployFailed',
      'race-409': 'InstanceDeployFailed',
      'failed-reload': 'InstanceDeployFailed',
    });
    const error = (id: string) => byId.get(id)!.result.error ?? '';
    assert.match(error('wrong-credentials'), /^GET \/v3\/info: 401 Unauthorized: unauthorized \(check the Data Plane API username and password\)$/);
    assert.match(error('invalid-client-certificate'), /TLS with https:\/\/127\.0\.0\.1:\d+ failed: .*did not accept the client certificate/);
    assert.match(error('down'), /^GET \/v3\/info: http:\/\/127\.0\.0\.1:\d+ refused the connection \(ECONNREFUSED\)$/);
    assert.equal(error('slow'), 'no answer within 4000 ms');
    assert.match(error('race-409'), /^the configuration version kept changing: 4 attempts met a 409 conflict$/);
    assert.match(error('failed-reload'), /^reload \d{4}-\d{2}-\d{2}-\d+ failed: .*cannot bind socket.*127\.0\.0\.1:\d+/s);
    for (const [, r] of byId) assert.ok(!JSON.stringify(r.result).includes(AUTH.password) && !JSON.stringify(r.result).includes('wrong-password'));

    for (const id of ['ok-1', 'ok-2']) assert.deepEqual({ ok: byId.get(id)!.result.ok, reloaded: byId.get(id)!.result.reloaded }, { ok: true, reloaded: true });
    for (const d of doubles.slice(0, 2)) {
      await d.reloadsSettled();
      assert.deepEqual(await d.reloadCounts(), { reloads: 1, failed: 0 });
    }
    assert.deepEqual(await get(port, '/', 'a.test'), { status: 200, body: 'a0\n' });
    const failedDouble = doubles.at(-1)!;
    await failedDouble.reloadsSettled();
    assert.deepEqual(await failedDouble.reloadCounts(), { reloads: 1, failed: 1 }, 'the refused reload is counted by show proc');
  });

  it('the next deployment, an endpoint change, is runtime-only on the healthy ones', async () => {
    const { byId } = await runDeployment(targets, config(2), endpoints, 4_000, 2);
    for (const id of ['ok-1', 'ok-2']) {
      const r = byId.get(id)!;
      assert.equal(r.type, 'InstanceDeployed');
      assert.deepEqual({ reloaded: r.result.reloaded, runtimeOps: r.result.runtimeOps }, { reloaded: false, runtimeOps: 1 });
    }
    for (const d of doubles.slice(0, 2)) assert.deepEqual(await d.reloadCounts(), { reloads: 1, failed: 0 }, 'still one reload');
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) seen.add((await get(port, '/', 'a.test')).body);
    assert.deepEqual([...seen].sort(), ['a0\n', 'a1\n']);
  });
});

describe('deploy stage → Data Plane API doubles: ten at once take about as long as one', () => {
  // Each double in its own process, as instances run on their own machines, with the API's default reload delay (5 s).
  const doubles: RemoteDouble[] = [];
  const targets = new Map<string, DataplaneTarget>();
  const endpoints: Endpoint[] = [];
  const spans = new Map<string, { start: number; end: number }>();
  let port: number;
  const backends = (n: number, servers = 1) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`be_${i}`, Array.from({ length: i === 0 ? servers : 1 }, (_, j) => ({ name: `s${j + 1}`, port: 10_000 + i + j }))]));
  const hosts = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`h${i}.test`, `be_${i}`]));

  /** A target that notes when each deployment to it starts and ends. */
  class TimedTarget extends DataplaneTarget {
    readonly id: string;
    constructor(id: string, options: DataplaneTargetOptions) {
      super(options);
      this.id = id;
    }
    override deploy(config: RenderedConfig, signal?: AbortSignal) {
      const span = { start: Date.now(), end: 0 };
      spans.set(this.id, span);
      return super.deploy(config, signal).finally(() => (span.end = Date.now()));
    }
  }
  const overlapped = () => {
    const all = [...spans.values()];
    return Math.max(...all.map((s) => s.start)) < Math.min(...all.map((s) => s.end));
  };

  before(async () => {
    port = await freePort();
    const started = await Promise.all(Array.from({ length: 10 }, () => startRemoteDouble({ reloadDelayMs: 5_000 })));
    doubles.push(...started);
    started.forEach((d, i) => {
      targets.set(`d${i}`, new TimedTarget(`d${i}`, { baseUrl: d.url, ...AUTH, reloadPollMs: 50 }));
      endpoints.push({ id: `d${i}`, address: d.url });
    });
    const warm = await runDeployment(targets, routingConfig(port, backends(20), hosts(20)), endpoints, 30_000);
    assert.ok([...warm.byId.values()].every((r) => r.result.ok));
  });

  after(async () => {
    await Promise.all([...targets.values()].map((t) => t.close()));
    await Promise.all(doubles.map((d) => d.stop()));
  });

  it('a structural change: 10 endpoints at once within 1.5 times the time of one, one reload each', async () => {
    const one = await runDeployment(targets, routingConfig(port, backends(21), hosts(21)), endpoints.slice(0, 1), 30_000);
    spans.clear();
    const ten = await runDeployment(targets, routingConfig(port, backends(22), hosts(22)), endpoints, 30_000);
    assert.ok(overlapped(), 'every deployment started before the first one ended');
    for (const run of [one, ten]) assert.ok([...run.byId.values()].every((r) => r.result.ok && r.result.reloaded));
    const figures = `structural: 1 endpoint ${one.durationMs} ms, 10 at once ${ten.durationMs} ms`;
    process.stdout.write(`# ${figures}\n`);
    assert.ok(ten.durationMs <= 1.5 * one.durationMs, figures);
    for (const d of doubles) assert.deepEqual(await d.reloadCounts(), { reloads: d === doubles[0] ? 3 : 2, failed: 0 }, 'one reload per structural deployment');
  });

  it('a runtime change: 10 endpoints at once, no reloads', async () => {
    const before = await Promise.all(doubles.map((d) => d.reloadCounts()));
    const one = await runDeployment(targets, routingConfig(port, backends(22, 2), hosts(22)), endpoints.slice(0, 1), 30_000);
    spans.clear();
    const ten = await runDeployment(targets, routingConfig(port, backends(22, 3), hosts(22)), endpoints, 30_000);
    assert.ok(overlapped(), 'every deployment started before the first one ended');
    assert.ok(one.byId.get('d0')!.result.ok);
    assert.ok([...ten.byId.values()].every((r) => r.result.ok && !r.result.reloaded && r.result.runtimeOps >= 1));
    // Each instance validates the posted configuration with haproxy -c; here ten of them share the test machine's CPUs.
    process.stdout.write(`# runtime: 1 endpoint ${one.durationMs} ms, 10 at once ${ten.durationMs} ms\n`);
    assert.deepEqual(await Promise.all(doubles.map((d) => d.reloadCounts())), before, 'no reloads');
  });
});
