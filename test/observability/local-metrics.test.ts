/**
 * Metrics, health and /debug/vars of `haprx local` across a scripted scenario with
 * the test's own templates, a real haproxy and echo backends; then Debian's prometheus
 * scrapes it and a haprx metric is read back through Prometheus's HTTP API.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { type LocalHaprx, fetchText, startLocal, until } from './local-haprx.ts';
import { parseExposition } from './support.ts';
import { writeTemplates } from './templates.ts';

const service = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\nspec:\n  ports: [{name: http, port: 80}]\n`;
const slice = (name: string, svc: string, port: number, addresses: string[]) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}, namespace: shop, labels: {kubernetes.io/service-name: ${svc}}}
addressType: IPv4
ports: [{name: http, port: ${port}}]
endpoints:
${addresses.map((a) => `  - {addresses: [${a}], conditions: {ready: true}}`).join('\n')}
`;

describe('haprx local: metrics, health and debug state across a scenario', () => {
  let dir: string;
  let manifests: string;
  let haprx: LocalHaprx;
  let httpPort: number;
  const echo: Record<string, Awaited<ReturnType<typeof startEcho>>> = {};

  const scrape = async () => {
    const { status, body } = await fetchText(haprx.metricsPort, '/metrics');
    assert.equal(status, 200);
    return parseExposition(body);
  };
  const metric = async (series: string) => (await scrape()).get(series);
  const logs = () => haprx.output.slice(-40).join('\n');
  const debugVars = async (field: string) => JSON.parse((await fetchText(haprx.debugPort, `/debug/vars?field=${encodeURIComponent(field)}`)).body) as unknown[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-metrics-'));
    manifests = join(dir, 'manifests');
    await mkdir(manifests);
    for (const name of ['web1', 'web2', 'api1']) echo[name] = await startEcho(name);
    httpPort = await freePort();
    await writeFile(join(manifests, 'services.yaml'), [service('web'), service('api')].join('---\n'));
    await writeFile(join(manifests, 'slices.yaml'), [slice('web-a', 'web', echo.web1!.port, ['127.0.0.1']), slice('api-a', 'api', echo.api1!.port, ['127.0.0.1'])].join('---\n'));
    await writeTemplates(join(dir, 'templates'));
    haprx = await startLocal([manifests, '--templates', join(dir, 'templates'), '--state-dir', join(dir, 'state'), '--set', `httpPort=${httpPort}`, '--set', 'bindAddress=127.0.0.1']);
    await until('/readyz to answer 200', async () => ((await fetchText(haprx.healthPort, '/readyz')).status === 200 ? true : undefined), 20_000, logs);
  });

  after(async () => {
    await haprx?.stop();
    await Promise.all(Object.values(echo).map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  it('counts the first reconciliation: one deployment that started haproxy (a reload), the resources, the events', async () => {
    const m = await until('the first deployment in the metrics', async () => ((await metric('haprx_deployments_total{reason="change"}')) === 1 ? scrape() : undefined), 10_000, logs);
    assert.equal(m.get('haprx_reconciliations_total{reason="config"}'), 1);
    assert.equal(m.get('haprx_reconciliations_total{reason="resources"}'), 0);
    assert.equal(m.get('haprx_validations_total'), 1);
    assert.equal(m.get('haprx_validation_errors_total'), 0);
    assert.equal(m.get('haprx_instance_deploys_total{endpoint="local",result="ok"}'), 1);
    assert.equal(m.get('haprx_instance_updates_total{endpoint="local",mode="reload"}'), 1);
    assert.equal(m.get('haprx_reconciliation_duration_seconds_count{outcome="deployed"}'), 1);
    assert.equal(m.get('haprx_resources{resource="services"}'), 2);
    assert.equal(m.get('haprx_resources{resource="endpointslices"}'), 2);
    assert.equal(m.get('haprx_events_total{type="ConfigAccepted"}'), 1);
    assert.equal(m.get('haprx_events_total{type="DeploymentCompleted"}'), 1);
    assert.equal(m.get('haprx_ready'), 1);
    assert.equal(m.get('haprx_leader'), 1);
    assert.equal(m.get('haprx_config_generation'), 1);
    assert.ok(m.get('process_cpu_user_seconds_total')! > 0, 'default process metrics are there');
    // The render thread's heap, which the process's heap figures leave out.
    const heap = (figure: string) => m.get(`haprx_render_thread_heap_bytes{figure="${figure}"}`)!;
    assert.ok(heap('used') > 1024 * 1024 && heap('used') <= heap('total') && heap('total') <= heap('limit'), `render thread heap: ${heap('used')} used of ${heap('total')}, limit ${heap('limit')}`);
    assert.ok(m.get('haprx_last_successful_deployment_timestamp_seconds')! > Date.now() / 1000 - 60);
    assert.equal((await get(httpPort, '/', 'web.test')).body.trim(), 'web1');
  });

  it('counts an endpoint added at runtime: a runtime-only update, no reload', async () => {
    await writeFile(join(manifests, 'slices.yaml'), [slice('web-a', 'web', echo.web1!.port, ['127.0.0.1', '127.0.0.2']), slice('api-a', 'api', echo.api1!.port, ['127.0.0.1'])].join('---\n'));
    const m = await until('the second deployment', async () => ((await metric('haprx_deployments_total{reason="change"}')) === 2 ? scrape() : undefined), 10_000, logs);
    assert.equal(m.get('haprx_reconciliations_total{reason="resources"}'), 1);
    assert.equal(m.get('haprx_instance_updates_total{endpoint="local",mode="runtime"}'), 1);
    assert.equal(m.get('haprx_instance_updates_total{endpoint="local",mode="reload"}'), 1, 'still the one reload from the start');
    assert.ok(m.get('haprx_runtime_operations_total{endpoint="local"}')! >= 1);
    assert.equal(m.get('haprx_resources{resource="endpointslices"}'), 2, 'the same two slices');
    assert.equal(m.get('haprx_reconciliation_duration_seconds_count{outcome="deployed"}'), 2);
    // What it changed: the server line, in /debug/vars and in the debug log.
    const [diffs] = (await debugVars('$.scheduling.diffs')) as { deployment: number; files: unknown[]; text: string }[][];
    const last = diffs!.at(-1)!;
    assert.deepEqual(last.files, [{ path: 'haproxy.cfg', change: 'modified', added: 1, removed: 0 }]);
    assert.match(last.text, new RegExp(`^\\+  server \\S+ 127\\.0\\.0\\.2:${echo.web1!.port}$`, 'm'));
    const logged = await until('the diff in the log', () => haprx.records().find((r) => r.event === 'DeploymentDiff' && r.deployment === last.deployment), 5_000, logs);
    assert.equal(logged.level, 20);
    assert.equal(logged.msg, `deployment #${last.deployment} changed: haproxy.cfg +1 -0`);
    assert.equal(logged.diff, last.text);
  });

  it('counts a configuration haproxy refuses as a validation error, stays ready, and shows the problem in /debug/vars', async () => {
    await writeFile(join(manifests, 'bad.yaml'), slice('web-bad', 'web', echo.web2!.port, ['300.1.1.1']));
    const m = await until('the refusal', async () => ((await metric('haprx_validation_errors_total')) === 1 ? scrape() : undefined), 10_000, logs);
    assert.equal(m.get('haprx_reconciliation_errors_total{stage="validate"}'), 1);
    assert.equal(m.get('haprx_reconciliation_duration_seconds_count{outcome="invalid"}'), 1);
    assert.equal(m.get('haprx_deployments_total{reason="change"}'), 2, 'nothing deployed');
    assert.equal(m.get('haprx_resources{resource="endpointslices"}'), 3);
    assert.equal((await fetchText(haprx.healthPort, '/readyz')).status, 200, 'the last good configuration is live');
    const [rendered] = (await debugVars('$.rendered')) as { status: string; problems: { file: string; message: string }[]; files: Record<string, string> }[];
    assert.equal(rendered!.status, 'invalid');
    assert.match(rendered!.problems[0]!.message, /300\.1\.1\.1/);
    assert.match(rendered!.files['haproxy.cfg']!, /300\.1\.1\.1/);
    assert.equal(rendered!.files['maps/hosts.map'], 'api.test be_shop_api\nweb.test be_shop_web\n', 'the maps are shown too');

    await writeFile(join(manifests, 'bad.yaml'), slice('web-bad', 'web', echo.web2!.port, ['127.0.0.1']));
    const fixed = await until('the fix deployed', async () => ((await metric('haprx_deployments_total{reason="change"}')) === 3 ? scrape() : undefined), 10_000, logs);
    assert.equal(fixed.get('haprx_validations_total'), 4);
    assert.equal(fixed.get('haprx_deployment_errors_total{reason="change"}'), 0);
  });

  it('answers /healthz, and /debug/vars with resource counts, scheduling state, recent events and the controller config', async () => {
    assert.deepEqual(JSON.parse((await fetchText(haprx.healthPort, '/healthz')).body), { status: 'ok', stalled: [] });
    assert.deepEqual(await debugVars('$.resources'), [{ endpointslices: 3, services: 2 }]);
    const [scheduling] = (await debugVars('$.scheduling')) as { settings: { minDeployIntervalMs: number }; lastDeployment: { id: number; results: { endpoint: string; ok: boolean }[] } }[];
    assert.equal(scheduling!.settings.minDeployIntervalMs, 500);
    assert.equal(scheduling!.lastDeployment.id, 3);
    assert.deepEqual(scheduling!.lastDeployment.results.map((r) => [r.endpoint, r.ok]), [['local', true]]);
    const types = (await debugVars('$.events[*].type')) as string[];
    assert.ok(types.includes('ValidationFailed') && types.at(-1) === 'DeploymentCompleted', types.join(', '));
    assert.deepEqual(await debugVars('$.controller.config.watch[*].name'), ['services', 'endpointslices']);
    const bad = await fetchText(haprx.debugPort, '/debug/vars?field=' + encodeURIComponent('$..[?(@.x'));
    assert.equal(bad.status, 400);
    assert.equal((await fetchText(haprx.healthPort, '/debug/vars')).status, 404, 'the rendered configuration is not served beside the probes');
    assert.equal((await fetchText(haprx.healthPort, '/nothing')).status, 404);
  });

  it("is scraped by Debian's prometheus, which serves a haprx metric back through its HTTP API", async (t) => {
    const work = join(dir, 'prometheus');
    await mkdir(work);
    const port = await freePort();
    await writeFile(
      join(work, 'prometheus.yml'),
      `global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n  - job_name: haprx\n    static_configs: [{targets: ['127.0.0.1:${haprx.metricsPort}']}]\n`,
    );
    const prometheus: ChildProcess = spawn(
      'prometheus',
      [`--config.file=${join(work, 'prometheus.yml')}`, `--storage.tsdb.path=${join(work, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    prometheus.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    t.after(async () => {
      if (prometheus.exitCode === null && prometheus.signalCode === null) {
        prometheus.kill('SIGTERM');
        await new Promise((r) => prometheus.once('exit', r));
      }
    });
    const query = async (promql: string) => {
      const { status, body } = await fetchText(port, `/api/v1/query?query=${encodeURIComponent(promql)}`);
      if (status !== 200) return undefined;
      const reply = JSON.parse(body) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      return reply.data.result;
    };
    const expected = await metric('haprx_deployments_total{reason="change"}');
    const result = await until('prometheus to have scraped haprx', async () => {
      const r = await query('haprx_deployments_total{job="haprx",reason="change"}');
      return r && r.length > 0 ? r : undefined;
    }, 30_000, () => stderr);
    assert.equal(result.length, 1);
    assert.equal(result[0]!.metric.instance, `127.0.0.1:${haprx.metricsPort}`);
    assert.equal(Number(result[0]!.value[1]), expected);
    const up = await query('up{job="haprx"}');
    assert.equal(up?.[0]?.value[1], '1');
  });
});
