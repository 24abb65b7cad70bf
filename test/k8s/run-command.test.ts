/**
 * `haprx run` as a process: client configuration from a kubeconfig file, names from
 * flags and environment variables, and a clean stop on SIGTERM that releases the
 * lease. The API server is the double; there are no HAProxy pods, so nothing deploys.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { firstDifference, loadRecording, recordedTimeline, replayRecording } from '../../src/cli/replay-command.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { fetchText } from '../support/fetch-text.ts';
import { freePort } from '../support/ports.ts';
import { until as waitFor } from '../support/until.ts';
import { CONFIGMAP, NS, clusterEvents, controllerConfig, credentialsSecret } from './cluster-fixture.ts';
import { until } from './helpers.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

let double: KubeApiDouble;
let dir: string;
let kubeconfig: string;
let child: ChildProcess | undefined;
let output = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'haprx-run-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'cli-token', bookmarkIntervalMs: 0 });
  double.create('v1', 'configmaps', { metadata: { name: 'edge-config', namespace: 'edge' }, data: controllerConfig() });
  double.create('v1', 'secrets', { ...credentialsSecret('pw'), metadata: { name: 'edge-dp', namespace: 'edge' } });
  kubeconfig = join(dir, 'kubeconfig.yaml');
  await writeFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{name: double, cluster: {server: "${double.url}", insecure-skip-tls-verify: true}}]
users: [{name: tester, user: {token: cli-token}}]
contexts: [{name: double, context: {cluster: double, user: tester, namespace: edge}}]
current-context: double
`,
  );
  output = '';
});
afterEach(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
  await double.stop();
});

function run(args: string[], env: Record<string, string> = {}): ChildProcess {
  const { KUBERNETES_SERVICE_HOST: _host, ...inherited } = process.env;
  child = spawn(process.execPath, [MAIN, 'run', '--health-port', '0', '--metrics-port', '0', '--debug-port', '0', '--lease-duration', '1s', '--renew-deadline', '600ms', '--retry-period', '100ms', ...args], {
    env: { ...inherited, HAPRX_LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  return child;
}

const exited = (c: ChildProcess) => new Promise<number | null>((resolve) => (c.exitCode !== null ? resolve(c.exitCode) : c.once('exit', (code) => resolve(code))));
const holder = (namespace: string, name: string) => (double.get('coordination.k8s.io/v1', 'leases', namespace, name)?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;

describe('haprx run', () => {
  it('runs from a kubeconfig with names from flags, leads, reports in Events, and on SIGTERM releases the lease and exits 0', async () => {
    const metricsPort = await freePort();
    const c = run(['--kubeconfig', kubeconfig, '--configmap', 'edge-config', '--credentials-secret', 'edge-dp', '--lease', 'edge-leader', '--identity', 'cli-1', '--metrics-port', String(metricsPort)]);
    await until('the lease held', () => holder('edge', 'edge-leader') === 'cli-1', 15_000);
    await until('a ConfigLoaded Event', () => double.list('events.k8s.io/v1', 'events', 'edge').some((e) => (e as { reason?: string }).reason === 'ConfigLoaded'), 10_000);
    assert.equal(double.requests.find((r) => r.path.includes('/configmaps'))!.path, '/api/v1/namespaces/edge/configmaps', 'the namespace of the kubeconfig context');
    // Every watch the server ends is resumed, and counted by resource set and reason.
    assert.ok(double.endWatches() > 0);
    const counted = /haprx_watches_ended_total\{resource="[^"]+",reason="closed"\} [1-9]/;
    await waitFor('the ended watches counted', async () => (counted.test(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()) ? true : undefined), 10_000, () => output);
    const t0 = Date.now();
    c.kill('SIGTERM');
    assert.equal(await exited(c), 0, output);
    assert.ok(Date.now() - t0 < 5_000);
    assert.equal(holder('edge', 'edge-leader'), '', 'released');
    assert.match(output, /SIGTERM: stopping/);
    assert.ok(!output.includes('"pw"') && !/password[^:]*:\s*"?pw/.test(output), 'the password is never logged');
  });

  it('takes the namespace and names from environment variables', async () => {
    double.create('v1', 'configmaps', { metadata: { name: CONFIGMAP, namespace: NS }, data: controllerConfig({ settings: { debounce: 'soon' } }) });
    const c = run(['--kubeconfig', kubeconfig], { HAPRX_NAMESPACE: NS, HAPRX_CONFIGMAP: CONFIGMAP, HAPRX_LEASE: 'from-env', HAPRX_IDENTITY: 'env-1' });
    await until('the lease held', () => holder(NS, 'from-env') === 'env-1', 15_000);
    // That ConfigMap is invalid: a Warning Event, and the process keeps running.
    await until('the rejection Event', () => clusterEvents(double).some((e) => e.reason === 'ConfigRejected'), 10_000);
    assert.equal(c.exitCode, null);
    c.kill('SIGTERM');
    assert.equal(await exited(c), 0, output);
  });

  it('exits within its bounds on SIGTERM when the API server has stopped answering', async () => {
    const c = run(['--kubeconfig', kubeconfig, '--configmap', 'edge-config', '--credentials-secret', 'edge-dp', '--lease', 'edge-leader', '--identity', 'cli-2', '--drain-timeout', '1s']);
    await until('the lease held', () => holder('edge', 'edge-leader') === 'cli-2', 15_000);
    double.hang();
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    c.kill('SIGTERM');
    assert.equal(await exited(c), 0, output);
    const took = Date.now() - t0;
    assert.ok(took < 6_000, `exited ${took} ms after SIGTERM`);
  });

  it('serves probes on every interface and /debug/vars on loopback only, by default', async () => {
    const [health, debug] = [await freePort(), await freePort()];
    const c = run(['--kubeconfig', kubeconfig, '--configmap', 'edge-config', '--credentials-secret', 'edge-dp', '--identity', 'cli-3', '--health-port', String(health), '--debug-port', String(debug)]);
    await waitFor('/healthz answering', async () => ((await fetchText(health, '/healthz')).status === 200 ? true : undefined), 15_000, () => output);
    // 127.0.0.2 is another address of this host: the probes' listener (0.0.0.0) answers there, the debug listener does not.
    assert.equal((await fetchText(health, '/healthz', '127.0.0.2')).status, 200);
    await assert.rejects(fetchText(debug, '/debug/vars', '127.0.0.2'), /ECONNREFUSED/);
    assert.equal((await fetchText(health, '/debug/vars')).status, 404);
    const vars = await fetchText(debug, '/debug/vars?field=controller.generation');
    assert.equal(vars.status, 200, vars.body);
    c.kill('SIGTERM');
    assert.equal(await exited(c), 0, output);
  });

  it('records the graph with --record, stops the recording on SIGUSR2, and the file replays to the run', async () => {
    const file = join(dir, 'run.jsonl');
    const c = run(['--kubeconfig', kubeconfig, '--configmap', 'edge-config', '--credentials-secret', 'edge-dp', '--identity', 'cli-4', '--record', file]);
    await until('the recording started', () => output.includes(`recording the graph's inputs to ${file}`), 15_000);
    await until('a render', () => /"event":"Rendered"|rendered/i.test(output), 15_000);
    c.kill('SIGUSR2');
    await until('the recording stopped', () => output.includes(`recording to ${file} stopped: stopped at runtime`), 10_000);
    c.kill('SIGTERM');
    assert.equal(await exited(c), 0, output);
    const loaded = await loadRecording(file);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
    const replayed = replayRecording(loaded.recording);
    assert.deepEqual(replayed.divergences, []);
    assert.equal(firstDifference(recordedTimeline(loaded.recording), replayed.timeline), undefined);
    assert.ok(replayed.timeline.some((e) => e.event.type === 'Rendered'), JSON.stringify(replayed.timeline));
    assert.ok(!(await readFile(file, 'utf8')).includes('"pw"'));
  });

  it('refuses a recording cap below 4096 bytes, and a cap without a file', async () => {
    assert.equal(await exited(run(['--kubeconfig', kubeconfig, '--record', join(dir, 'x.jsonl'), '--record-max-bytes', '100'])), 2);
    assert.match(output, /--record-max-bytes 100: expected a number of bytes, at least 4096/);
    assert.equal(await exited(run(['--kubeconfig', kubeconfig, '--record-max-bytes', '100000'])), 2);
    assert.match(output, /--record-max-bytes needs --record FILE/);
  });

  it('refuses bad flags with exit status 2', async () => {
    const c = run(['--kubeconfig', kubeconfig, '--renew-deadline', '2s', '--lease-duration', '1s']);
    assert.equal(await exited(c), 2);
    assert.match(output, /--retry-period < --renew-deadline < --lease-duration/);
  });
});
