/**
 * `haprx local` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver inside the
 * test: the span tree of one reconciliation as exported over OTLP/HTTP. The same run
 * renders a userlist password and a TLS key from Secrets, and a Secret value that
 * haproxy quotes in its refusal; none of them may appear in the logs, the exported
 * spans, /debug/vars or /metrics.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { type LocalHaprx, fetchText, startLocal, until } from './local-haprx.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.ts';
import { writeTemplates } from './templates.ts';

const PASSWORD = 'Pa55w0rd-S3cret-Value';
const HIDDEN_HOST = 'Sup3rS3cretHostValue';
const b64 = (text: string) => Buffer.from(text).toString('base64');

const service = `apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop, resourceVersion: "7"}\nspec:\n  ports: [{name: http, port: 80}]\n`;
const slice = (port: number, addresses: string[], resourceVersion: string) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-a, namespace: shop, resourceVersion: "${resourceVersion}", labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: ${port}}]
endpoints:
${addresses.map((a) => `  - {addresses: [${a}], conditions: {ready: true}}`).join('\n')}
`;
const adminSecret = (extra: Record<string, string> = {}, resourceVersion = '1') => `apiVersion: v1
kind: Secret
metadata: {name: admin, namespace: shop, resourceVersion: "${resourceVersion}"}
data:
  password: ${b64(PASSWORD)}
${Object.entries(extra)
  .map(([k, v]) => `  ${k}: ${b64(v)}`)
  .join('\n')}
`;
const tlsSecret = (cert: string, key: string) => `apiVersion: v1
kind: Secret
metadata: {name: site-tls, namespace: shop, resourceVersion: "1"}
type: kubernetes.io/tls
data:
  tls.crt: ${b64(cert)}
  tls.key: ${b64(key)}
`;

describe('haprx local: traces over OTLP/HTTP, and no secret in any output', () => {
  let dir: string;
  let manifests: string;
  let haprx: LocalHaprx;
  let receiver: OtlpReceiver;
  let key: string;
  let echo: Awaited<ReturnType<typeof startEcho>>;
  const logs = () => haprx.output.slice(-30).join('\n');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-traces-'));
    manifests = join(dir, 'manifests');
    await mkdir(manifests);
    // A throw-away key, made fresh so that none is ever committed.
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=shop.test',
    ]);
    key = await readFile(join(dir, 'key.pem'), 'utf8');
    echo = await startEcho('web1');
    receiver = await startOtlpReceiver();
    await writeTemplates(join(dir, 'templates'), { secrets: true });
    await writeFile(join(manifests, 'web.yaml'), service);
    await writeFile(join(manifests, 'slice.yaml'), slice(echo.port, ['127.0.0.1'], '41'));
    await writeFile(join(manifests, 'secrets.yaml'), [adminSecret(), tlsSecret(await readFile(join(dir, 'cert.pem'), 'utf8'), key)].join('---\n'));
    haprx = await startLocal(
      [manifests, '--templates', join(dir, 'templates'), '--state-dir', join(dir, 'state'), '--set', `httpPort=${await freePort()}`, '--set', `httpsPort=${await freePort()}`],
      { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: 'haprx-under-test' },
    );
    await until('the first deployment', () => haprx.records().find((r) => r.event === 'InstanceDeployed'), 20_000, logs);
  });

  after(async () => {
    await haprx?.stop();
    await receiver?.close();
    await echo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('exports the span tree of one reconciliation: render, validate, the scheduler wait and deploy, one child per endpoint', async () => {
    await writeFile(join(manifests, 'slice.yaml'), slice(echo.port, ['127.0.0.1', '127.0.0.2'], '42'));
    const root = await until(
      'the reconcile span of the slice change',
      () => receiver.spans.find((s) => s.name === 'reconcile' && s.attributes['haprx.reconcile.reason'] === 'resources'),
      15_000,
      logs,
    );
    // Children end before their root, so they were exported with it or before.
    const trace = receiver.spans.filter((s) => s.traceId === root.traceId);
    const children = (parent: ReceivedSpan) => trace.filter((s) => s.parentSpanId === parent.spanId).sort((a, b) => a.start - b.start || a.name.localeCompare(b.name));
    assert.equal(root.parentSpanId, undefined);
    assert.equal(root.resource['service.name'], 'haprx-under-test');
    // The order in time is checked below; a wait of 0 ms starts with the deploy. These
    // templates declare no server lines: the fast path is not taken.
    assert.deepEqual(children(root).map((s) => s.name).sort(), ['deploy', 'fast_path', 'propagation', 'render', 'schedule.wait', 'validate']);
    assert.equal(children(root).find((s) => s.name === 'fast_path')!.attributes['haprx.fast_path.taken'], false);
    assert.equal(children(root).find((s) => s.name === 'propagation')!.attributes['haprx.propagation.path'], 'runtime');
    const deploy = children(root).find((s) => s.name === 'deploy')!;
    const instances = children(deploy);
    assert.deepEqual(instances.map((s) => [s.name, s.attributes['haprx.endpoint.id'], s.attributes['haprx.instance.reloaded']]), [['deploy.instance', 'local', false]]);
    assert.ok((instances[0]!.attributes['haprx.instance.runtime_ops'] as number) >= 1);
    assert.equal(trace.length, 8, trace.map((s) => s.name).join(', '));
    // Times nest: each child inside its parent, the stages in order.
    for (const span of trace.filter((s) => s !== root)) {
      const parent = trace.find((p) => p.spanId === span.parentSpanId)!;
      assert.ok(span.start >= parent.start && span.end <= parent.end && span.start <= span.end, `${span.name} inside ${parent.name}`);
    }
    const at = (name: string) => children(root).find((s) => s.name === name)!;
    assert.ok(at('render').end <= at('validate').start + 1 && at('validate').end <= at('schedule.wait').start + 1 && at('schedule.wait').end <= at('deploy').start);
    // The triggering change.
    assert.deepEqual(
      ['kind', 'namespace', 'name', 'resource_version', 'type'].map((f) => root.attributes[`haprx.changes.${f}`]),
      [['EndpointSlice'], ['shop'], ['web-a'], ['42'], ['upsert']],
    );
    assert.equal(root.attributes['haprx.reconcile.outcome'], 'deployed');
    assert.deepEqual(receiver.rejected, []);
    // The log lines of that reconciliation carry its trace id.
    const seq = root.attributes['haprx.reconcile.seq'];
    const lines = haprx.records().filter((r) => r.reconcile === seq && r.event !== undefined);
    assert.ok(lines.length >= 3 && lines.every((r) => r.trace_id === root.traceId), JSON.stringify(lines));
  });

  it('never shows a password, a private key or a Secret value that haproxy quotes, in logs, traces, /debug/vars or /metrics', async () => {
    // haproxy refuses this one, quoting the address (the Secret's value) in its message.
    await writeFile(join(manifests, 'secrets.yaml'), [adminSecret({ upstream: HIDDEN_HOST }, '2'), tlsSecret(await readFile(join(dir, 'cert.pem'), 'utf8'), key)].join('---\n'));
    const refused = await until('the refusal', () => haprx.records().find((r) => r.event === 'ValidationFailed'), 15_000, logs);
    assert.match(refused.msg, /could not resolve address '\[redacted\]'/, 'the message is kept, the value is not');
    await until('the refused reconcile span', () => receiver.spans.find((s) => s.attributes['haprx.reconcile.outcome'] === 'invalid'), 10_000, logs);

    const vars = await fetchText(haprx.debugPort, '/debug/vars');
    const metrics = await fetchText(haprx.metricsPort, '/metrics');
    const [cfg] = JSON.parse((await fetchText(haprx.debugPort, `/debug/vars?field=${encodeURIComponent("$.rendered.files['haproxy.cfg']")}`)).body) as string[];
    const [pem] = JSON.parse((await fetchText(haprx.debugPort, `/debug/vars?field=${encodeURIComponent("$.rendered.files['ssl/site.pem']")}`)).body) as string[];
    // What is shown instead: the directive with its value redacted, the certificate without its key.
    assert.match(cfg!, /user admin insecure-password \[redacted\]/);
    assert.match(cfg!, /server up \[redacted\]:80/);
    assert.match(pem!, /-----BEGIN CERTIFICATE-----/);
    assert.match(pem!, /-----BEGIN PRIVATE KEY-----\n\[redacted\]\n-----END PRIVATE KEY-----/);

    const outputs: Record<string, string> = {
      logs: haprx.output.join('\n'),
      traces: receiver.bodies.join('\n'),
      'debug/vars': vars.body,
      metrics: metrics.body,
    };
    const keyLines = key.split('\n').filter((l) => l.length >= 16 && !l.startsWith('-----'));
    assert.ok(keyLines.length >= 2);
    const secrets = [PASSWORD, HIDDEN_HOST, b64(PASSWORD), b64(HIDDEN_HOST), b64(key), ...keyLines];
    for (const [where, text] of Object.entries(outputs)) {
      assert.ok(text.length > 1_000, `${where} has content`);
      for (const secret of secrets) assert.ok(!text.includes(secret), `${where} shows a secret value: ${secret.slice(0, 6)}…`);
    }
    assert.ok(outputs.logs!.includes('"event":"ValidationFailed"') && outputs['debug/vars']!.includes('ValidationFailed'));
  });
});
