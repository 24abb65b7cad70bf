/** Unit tests of the observability pieces: redaction, tracing setup, logger, log lines, lifecycle, servers. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import type { ControllerEvent, Deployment, Reconcile } from '../../src/events.ts';
import { logLine } from '../../src/observability/event-log.ts';
import { createObserver, startObservability } from '../../src/observability/index.ts';
import { ReconcileLifecycle } from '../../src/observability/lifecycle.ts';
import { ControllerMetrics } from '../../src/observability/metrics.ts';
import { from, lastValueFrom, toArray } from 'rxjs';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { SecretScrubber, redactFields, redactHaproxyConfig, redactPem, safeAddress } from '../../src/observability/redact.ts';
import { ResourceCounter } from '../../src/observability/resources.ts';
import { resourceAttributes, tracingFromEnv } from '../../src/observability/tracing.ts';
import { printable } from '../../src/printable.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import { freePort } from '../support/ports.ts';
import { fetchText } from './local-haprx.ts';
import { capturedLogger, value } from './support.ts';

const KEY = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBVvZxX0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaoAoGCCqGSM49\nAwEHoUQDQgAEbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n-----END EC PRIVATE KEY-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nMIIBcertcertcertcertcertcertcertcertcert\n-----END CERTIFICATE-----\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('redaction', () => {
  it('replaces private key blocks and keeps certificates', () => {
    assert.equal(redactPem(CERT + KEY), `${CERT}-----BEGIN EC PRIVATE KEY-----\n[redacted]\n-----END EC PRIVATE KEY-----\n`);
    assert.equal(redactPem('-----BEGIN PRIVATE KEY-----\nabc'), '-----BEGIN PRIVATE KEY-----\n[redacted]\n-----END PRIVATE KEY-----', 'a truncated key too');
  });

  it('replaces credentials in haproxy.cfg directives and nothing else', () => {
    const cfg = ['userlist u', '  user admin password $6$salt$hash', '  user bob insecure-password hunter22', '  stats auth admin:topsecret', '  http-request set-header Authorization "Basic abc"', '  server s1 10.0.0.1:80'].join('\n');
    assert.equal(
      redactHaproxyConfig(cfg),
      ['userlist u', '  user admin password [redacted]', '  user bob insecure-password [redacted]', '  stats auth admin:[redacted]', '  http-request set-header Authorization [redacted]', '  server s1 10.0.0.1:80'].join('\n'),
    );
  });

  it('replaces values whose names look like credentials', () => {
    assert.deepEqual(redactFields({ httpPort: 80, adminPassword: 'x', nested: { apiKey: 'y', token: 'z', list: [{ secret: 's', name: 'n' }] }, key: 'k' }), {
      httpPort: 80,
      adminPassword: '[redacted]',
      nested: { apiKey: '[redacted]', token: '[redacted]', list: [{ secret: '[redacted]', name: 'n' }] },
      key: '[redacted]',
    });
  });

  it('drops user information and queries from addresses', () => {
    assert.equal(safeAddress('https://admin:pw@10.0.0.7:5555/v3?token=x'), 'https://10.0.0.7:5555/v3');
    assert.equal(safeAddress('/var/run/haprx/state'), '/var/run/haprx/state');
  });

  it('learns the values of Secrets, not of other kinds, and scrubs them; certificates stay', () => {
    const scrubber = new SecretScrubber();
    scrubber.learn({ kind: 'ConfigMap', metadata: { name: 'c' }, data: { value: 'not-a-secret-value' } });
    scrubber.learn({ kind: 'Secret', metadata: { name: 's' }, data: { password: b64('hunter2-hunter2'), short: b64('abc'), 'tls.crt': b64(CERT), 'tls.key': b64(KEY) }, stringData: { token: 'plain-token-value' } });
    assert.equal(scrubber.scrub('pw=hunter2-hunter2 and plain-token-value, abc, not-a-secret-value'), 'pw=[redacted] and [redacted], abc, not-a-secret-value');
    assert.equal(scrubber.scrub(`raw ${b64('hunter2-hunter2')}`), 'raw [redacted]');
    assert.equal(scrubber.scrub(CERT), CERT);
    assert.equal(scrubber.scrub('line: AwEHoUQDQgAEbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'), 'line: [redacted]', 'one line of a key on its own');
    assert.deepEqual(scrubber.scrubDeep({ a: ['x hunter2-hunter2'] }), { a: ['x [redacted]'] });
  });

  it('finds a value wherever it stands, among many held values that begin alike, and blanks a key out whole before its lines', () => {
    const scrubber = new SecretScrubber();
    const secret = (name: string, password: string) => ({ kind: 'Secret', metadata: { name, namespace: 'apps' }, stringData: { password } });
    // Ten values with the same first eight characters, and many others.
    for (let i = 0; i < 10; i++) scrubber.learn(secret(`alike-${i}`, `same-start-${i}-tail`));
    for (let i = 0; i < 2_000; i++) scrubber.learn(secret(`other-${i}`, `other-value-${i}`));
    assert.equal(scrubber.scrub('same-start-7-tail'), '[redacted]', 'the whole text');
    assert.equal(scrubber.scrub('same-start-3-tail at the start'), '[redacted] at the start');
    assert.equal(scrubber.scrub('at the end same-start-9-tail'), 'at the end [redacted]');
    assert.equal(scrubber.scrub('x same-start-0-tail y same-start-0-tail z other-value-1999.'), 'x [redacted] y [redacted] z [redacted].');
    assert.equal(scrubber.scrub('same-start-10-tail same-start- same-star'), 'same-start-10-tail same-start- same-star', 'near misses stay');
    assert.equal(scrubber.scrub('other-value-12345'), '[redacted]5', 'the longest value that starts there, other-value-1234');
    // The key, and each line of its body, are values: the key goes as one.
    scrubber.learn({ kind: 'Secret', metadata: { name: 'tls' }, data: { 'tls.key': b64(KEY) } });
    assert.equal(scrubber.scrub(`key: ${KEY.trim()}.`), 'key: [redacted].');
  });

  it('holds what the watched Secrets hold now: a changed or deleted Secret takes its old values along, a shared value stays', () => {
    const scrubber = new SecretScrubber();
    const secret = (name: string, password: string) => ({ kind: 'Secret', metadata: { name, namespace: 'apps' }, stringData: { password } });
    scrubber.learn(secret('a', 'first-password'));
    scrubber.learn(secret('b', 'shared-password'));
    scrubber.learn(secret('c', 'shared-password'));
    assert.equal(scrubber.size, 2);
    scrubber.learn(secret('a', 'second-password'));
    assert.equal(scrubber.scrub('first-password second-password'), 'first-password [redacted]', 'a rotated value is no longer held');
    scrubber.forget('apps/b');
    assert.equal(scrubber.scrub('shared-password'), '[redacted]', 'still held by c');
    scrubber.forget('apps/c');
    assert.equal(scrubber.size, 1);
    for (let i = 0; i < 5_000; i++) {
      scrubber.learn(secret(`churn-${i}`, `churning-password-${i}`));
      scrubber.forget(`apps/churn-${i}`);
    }
    assert.equal(scrubber.size, 1, 'churn leaves nothing behind');
  });

  it('holds every value of 10k TLS Secrets: the last one learned is blanked out, key and lines; certificates, base64 too, stay', () => {
    const scrubber = new SecretScrubber({ onLimit: (m) => assert.fail(m) });
    const pem = (kind: string, seed: number, lines: number) => `-----BEGIN ${kind}-----\n${Array.from({ length: lines }, (_, i) => b64(`${kind}-${seed}-${i}-`.padEnd(48, 'x'))).join('\n')}\n-----END ${kind}-----\n`;
    for (let i = 0; i < 10_000; i++) {
      scrubber.learn({ kind: 'Secret', metadata: { name: `tls-${i}`, namespace: `ns-${i % 50}` }, data: { 'tls.crt': b64(pem('CERTIFICATE', i, 18)), 'tls.key': b64(pem('PRIVATE KEY', i, 26)) } });
    }
    // Per Secret: the key in base64 and decoded, and the 26 lines of its body.
    assert.equal(scrubber.size, 10_000 * 28);
    const key = pem('PRIVATE KEY', 9_999, 26);
    assert.equal(scrubber.scrub(`said: ${key.trim()}`), 'said: [redacted]');
    assert.equal(scrubber.scrub(`raw ${b64(key)} end`), 'raw [redacted] end');
    assert.equal(scrubber.scrub(`line ${key.split('\n')[7]} end`), 'line [redacted] end');
    const cert = pem('CERTIFICATE', 9_999, 18);
    assert.equal(scrubber.scrub(cert), cert);
    assert.equal(scrubber.scrub(b64(cert)), b64(cert));
  });

  it('holds at most maxPerSecret values of one Secret, whole values first, and names a Secret past it once: a huge one leaves room for the others', () => {
    const notices: string[] = [];
    const scrubber = new SecretScrubber({ maxValues: 3_000, onLimit: (m) => notices.push(m) });
    const lines = Array.from({ length: 5_000 }, (_, i) => `line-of-a-huge-secret-${i}`).join('\n');
    const huge = { kind: 'Secret', metadata: { name: 'huge', namespace: 'apps' }, stringData: { a: lines, token: 'token-of-the-huge-one' } };
    scrubber.learn(huge);
    assert.equal(scrubber.size, 1_024);
    assert.deepEqual(notices, ['Secret apps/huge has 5002 values to blank out of logs and traces, more than the 1024 one Secret may have held: the first 1024 are, whole values before the lines of multi-line ones']);
    assert.equal(scrubber.scrub('token-of-the-huge-one'), '[redacted]', 'a whole value goes before any line');
    assert.equal(scrubber.scrub(`x ${lines} y`), 'x [redacted] y');
    scrubber.learn(huge);
    assert.equal(notices.length, 1, 'told once while it stays that large');
    for (let i = 0; i < 100; i++) scrubber.learn({ kind: 'Secret', metadata: { name: `s${i}`, namespace: 'apps' }, stringData: { password: `password-number-${i}` } });
    assert.equal(scrubber.scrub('password-number-99'), '[redacted]', 'the others are held');
    assert.equal(notices.length, 1, 'and the scrubber is not at its limit');
    // Told again once it has been small, or gone, in between.
    scrubber.learn({ ...huge, stringData: { token: 'token-of-the-huge-one' } });
    scrubber.learn(huge);
    assert.equal(notices.length, 2);
    scrubber.forget('apps/huge');
    scrubber.learn(huge);
    assert.equal(notices.length, 3);
  });

  it('says so when it reaches its limit, instead of silently learning nothing more, and learns again once there is room', () => {
    const notices: string[] = [];
    const scrubber = new SecretScrubber({ maxValues: 3, onLimit: (m) => notices.push(m) });
    const secret = (name: string, password: string) => ({ kind: 'Secret', metadata: { name, namespace: 'apps' }, stringData: { password } });
    for (let i = 0; i < 5; i++) scrubber.learn(secret(`s${i}`, `password-number-${i}`));
    assert.equal(scrubber.size, 3);
    assert.equal(notices.length, 1);
    assert.match(notices[0]!, /limit of 3 values/);
    scrubber.forget('apps/s0');
    scrubber.learn(secret('s4', 'password-number-4'));
    assert.equal(scrubber.scrub('password-number-4'), '[redacted]');
  });

  it('forgets, through the resource counter, Secrets deleted or dropped by a relist, and those of a set a new graph no longer watches', async () => {
    const scrubber = new SecretScrubber();
    const counter = new ResourceCounter(scrubber);
    const secret = (name: string, password: string) => ({ kind: 'Secret', metadata: { name, namespace: 'apps' }, stringData: { password } });
    const run = (changes: ResourceChange[]) => lastValueFrom(from(changes).pipe(counter.track(), toArray()));
    await run([
      { type: 'replace', resource: 'secrets', objects: [secret('a', 'password-a-value'), secret('b', 'password-b-value')] },
      { type: 'replace', resource: 'old', objects: [secret('x', 'password-x-value')] },
      { type: 'delete', resource: 'secrets', object: secret('a', '') },
      { type: 'replace', resource: 'secrets', objects: [secret('c', 'password-c-value')] },
    ]);
    assert.equal(scrubber.scrub('password-a-value password-b-value password-c-value password-x-value'), 'password-a-value password-b-value [redacted] [redacted]');
    await run([{ type: 'replace', resource: 'secrets', objects: [secret('c', 'password-c-value')] }]);
    await run([]);
    assert.equal(scrubber.scrub('password-c-value password-x-value'), '[redacted] password-x-value', 'the set the later graphs do not watch is forgotten');
  });
});

describe('tracing from OTEL_* variables', () => {
  it('is off without an endpoint, or when disabled', () => {
    assert.deepEqual(tracingFromEnv({}), { enabled: false, why: 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' });
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_SDK_DISABLED: 'true' }).enabled, false);
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled, false);
  });

  it('sends to <endpoint>/v1/traces, or to the traces endpoint as given', async () => {
    const general = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318/' });
    const specific = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    assert.ok(general.enabled && specific.enabled);
    assert.equal(general.tracing.url, 'http://jaeger:4318/v1/traces');
    assert.deepEqual(general.notes, []);
    assert.equal(specific.tracing.url, 'http://collector:4318/custom');
    assert.deepEqual(specific.notes, ['OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported; spans go out as http/json']);
    await Promise.all([general.tracing.shutdown(), specific.tracing.shutdown()]);
  });

  it('reads OTEL_RESOURCE_ATTRIBUTES', () => {
    assert.deepEqual(resourceAttributes('deployment.environment=prod, k8s.cluster.name=a%20b,broken'), { 'deployment.environment': 'prod', 'k8s.cluster.name': 'a b' });
  });
});

describe('logs', () => {
  it('redacts credential fields at any of the first levels', () => {
    const { log, lines } = capturedLogger('info');
    log.info({ password: 'p1', user: { token: 't1', name: 'n' }, a: { b: { secret: 's1' } }, data: { x: 'y' } }, 'hello');
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual([record.password, record.user, record.a, record.data], ['[redacted]', { token: '[redacted]', name: 'n' }, { b: { secret: '[redacted]' } }, '[redacted]']);
  });

  it('writes one short line per event, keeping only the first line of a message', () => {
    const reconcile: Reconcile = {
      seq: 4,
      at: 0,
      cause: {
        reason: 'resources',
        changes: ['a', 'b', 'c', 'd', 'e'].map((name) => ({ resource: 'services', type: 'upsert' as const, kind: 'Service', namespace: 'shop', name })),
      },
    };
    const rendered = { type: 'Rendered' as const, reconcile, config: sealRendered({ main: '', maps: {}, files: {}, certs: {} }), durationMs: 12 };
    assert.deepEqual([logLine(rendered).level, logLine(rendered).msg], ['debug', 'rendered in 12 ms']);
    const warned = logLine({ ...rendered, warnings: [{ object: 'Ingress shop/bad', message: 'bad host' }, { message: 'port 0 ignored' }] });
    assert.deepEqual([warned.level, warned.msg], ['warn', 'rendered in 12 ms, skipping what is invalid: Ingress shop/bad: bad host; port 0 ignored']);
    const unchanged = { type: 'RenderUnchanged' as const, reconcile, hash: 'h', durationMs: 3 };
    assert.deepEqual([logLine(unchanged).level, logLine(unchanged).msg], ['debug', 'rendered, nothing changed']);
    const newlyWarned = logLine({ ...unchanged, warnings: [{ object: 'Ingress shop/bad', message: 'skipped: spec.rules must be a list' }] });
    assert.deepEqual([newlyWarned.level, newlyWarned.msg], ['warn', 'rendered, nothing changed, skipping what is invalid: Ingress shop/bad: skipped: spec.rules must be a list']);
    assert.deepEqual([logLine({ ...unchanged, warnings: [] }).level, logLine({ ...unchanged, warnings: [] }).msg], ['info', 'rendered, nothing changed; no warnings any more']);
    assert.equal(logLine({ type: 'ReconcileTriggered', reconcile }).msg, 'reconcile #4 (resources: upsert Service shop/a, upsert Service shop/b, upsert Service shop/c and 2 more)');
    const problem = logLine({ type: 'SourceProblem', source: 'bad.yaml', line: 3, message: 'Nested mappings are not allowed at line 3:\n\n  password: a: b\n' });
    assert.equal(problem.msg, 'bad.yaml:3: Nested mappings are not allowed at line 3:');
    assert.equal(problem.level, 'warn');
  });

  it('escapes control characters in messages, so a cluster value cannot print a line of its own', () => {
    const { log, lines } = capturedLogger('info');
    const warned = logLine({
      type: 'Rendered',
      reconcile: { seq: 1, at: 0, cause: { reason: 'resources', changes: [] } },
      config: sealRendered({ main: '', maps: {}, files: {}, certs: {} }),
      durationMs: 1,
      warnings: [{ object: 'Ingress evil\n{"level":30,"msg":"forged"}/x', message: 'bad\r\u001b[1A\u2028host' }],
    });
    log[warned.level](warned.fields, warned.msg);
    log.info('plain %s', 'and\nformatted');
    assert.equal(lines.length, 2);
    const [first, second] = lines.map((l) => JSON.parse(l) as { msg: string });
    assert.equal(first!.msg, 'rendered in 1 ms, skipping what is invalid: Ingress evil\\n{"level":30,"msg":"forged"}/x: bad\\r\\x1b[1A\\u2028host');
    assert.equal(second!.msg, 'plain and\\nformatted');
  });
});

describe('printable', () => {
  it('escapes C0 and C1 controls, DEL, line separators and bidi controls, and keeps the rest', () => {
    assert.equal(printable('a\tb\nc\rd\u0000e\u007f\u0085\u2029\u202e\u2066'), 'a\\tb\\nc\\rd\\x00e\\x7f\\x85\\u2029\\u202e\\u2066');
    assert.equal(printable('shop.example/ü ✓ \\d'), 'shop.example/ü ✓ \\d');
  });
});

describe('a target that haprx runs itself', () => {
  it('fails /healthz and /readyz with the cause while it is down, logs both ends, and counts the restart', async () => {
    const { log, lines } = capturedLogger();
    const obs = createObserver({ log, defaultMetrics: false });
    const endpoint = { id: 'local', address: '/state' };
    const reconcile: Reconcile = { seq: 1, at: 0, cause: { reason: 'config', changes: [] } };
    const config = sealRendered({ main: 'global\n', maps: {}, files: {}, certs: {} });
    obs.record({ type: 'ReconcileTriggered', reconcile });
    obs.record({ type: 'Rendered', reconcile, config, durationMs: 1 });
    obs.record({ type: 'Validated', reconcile, config, durationMs: 1 });
    const healthz = async () => (await obs.healthRoutes['/healthz']!(new URL('http://x/healthz'), {} as never)) as { status: number; body: string };
    const readyz = async () => (await obs.healthRoutes['/readyz']!(new URL('http://x/readyz'), {} as never)) as { status: number; body: string };
    assert.equal((await healthz()).status, 200);
    assert.equal((await readyz()).status, 200);

    obs.record({ type: 'TargetDown', endpoint, cause: 'haproxy master (pid 7) was killed by SIGKILL' });
    const down = await healthz();
    assert.equal(down.status, 503);
    assert.deepEqual((JSON.parse(down.body) as { status: string; down: { endpoint: string; cause: string }[] }).down.map((d) => [d.endpoint, d.cause]), [['local', 'haproxy master (pid 7) was killed by SIGKILL']]);
    assert.match((JSON.parse(down.body) as { status: string }).status, /^target down$/);
    const notReady = await readyz();
    assert.equal(notReady.status, 503);
    assert.deepEqual((JSON.parse(notReady.body) as { waitingFor: string[] }).waitingFor, ['haproxy to run again']);
    assert.equal(await value(obs.metrics.registry, 'haprx_ready'), 0);

    obs.record({ type: 'TargetRestarted', endpoint, cause: 'haproxy master (pid 7) was killed by SIGKILL', downMs: 80 });
    assert.equal((await healthz()).status, 200);
    assert.equal((await readyz()).status, 200);
    assert.equal(await value(obs.metrics.registry, 'haprx_target_restarts_total', { endpoint: 'local' }), 1);
    const logged = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => /haproxy local/.test(l.msg));
    assert.deepEqual(
      logged.map((l) => [l.level, l.msg]),
      [
        [50, 'haproxy local is down: haproxy master (pid 7) was killed by SIGKILL'],
        [40, 'haproxy local restarted with the last configuration it had taken, 80 ms after: haproxy master (pid 7) was killed by SIGKILL'],
      ],
    );
  });
});

describe('lifecycle', () => {
  const reconcile = (seq: number): Reconcile => ({ seq, at: seq * 10, cause: { reason: 'resources', changes: [] } });
  const config = sealRendered({ main: 'x', maps: {}, files: {}, certs: {} });
  const deployment = (seq: number, id: number): Deployment => ({
    reconcile: reconcile(seq),
    config,
    endpoints: [{ id: 'e1', address: 'a' }],
    reason: 'change',
    queuedAt: 0,
    startedAt: 1,
    id,
  });

  it('cancels what is in flight when a new controller configuration rebuilds the graph, and keys by generation', () => {
    const life = new ReconcileLifecycle();
    const apply = (e: ControllerEvent) => life.apply(e, 100);
    apply({ type: 'ConfigAccepted', generation: 1 });
    apply({ type: 'ReconcileTriggered', reconcile: reconcile(1) });
    apply({ type: 'Rendered', reconcile: reconcile(1), config, durationMs: 1 });
    apply({ type: 'Validated', reconcile: reconcile(1), config, durationMs: 1 });
    apply({ type: 'DeploymentStarted', deployment: deployment(1, 1) });
    apply({ type: 'ReconcileTriggered', reconcile: reconcile(2) });
    assert.deepEqual(life.reconciles.map((r) => [r.key, r.stage]), [['1/1', 'deploying'], ['1/2', 'rendering']]);
    const step = apply({ type: 'ConfigAccepted', generation: 2 });
    assert.deepEqual(step.ended.map((e) => [e.entry.key, e.outcome]), [['1/1', 'cancelled'], ['1/2', 'cancelled']]);
    assert.deepEqual(step.deploymentsEnded.map((d) => d.key), ['1/1']);
    const next = apply({ type: 'ReconcileTriggered', reconcile: reconcile(1) });
    assert.equal(next.entry?.key, '2/1');
    // A completion of the old graph's deployment no longer belongs to anything.
    assert.deepEqual(apply({ type: 'DeploymentCompleted', deployment: deployment(1, 1), results: [], durationMs: 1 }).ended, []);
    assert.deepEqual(life.reconciles.map((r) => r.key), ['2/1']);
  });
});

describe('metrics of HAProxy instances that left', () => {
  it('removes the per-endpoint series of endpoints no longer discovered, and keeps the others', async () => {
    const metrics = new ControllerMetrics({ lifecycle: new ReconcileLifecycle(), resourceCounts: () => new Map(), now: () => 0 }, { defaultMetrics: false });
    const config = sealRendered({ main: 'x', maps: {}, files: {}, certs: {} });
    const deployment = { reconcile: { seq: 1, at: 0, cause: { reason: 'resources', changes: [] } }, config, endpoints: [], reason: 'change', queuedAt: 0, startedAt: 0, id: 1 } as Deployment;
    const deployed = (id: string, ok: boolean): ControllerEvent =>
      ok
        ? { type: 'InstanceDeployed', deployment, result: { endpoint: { id, address: 'x' }, ok, reloaded: false, runtimeOps: 2, durationMs: 1 } }
        : { type: 'InstanceDeployFailed', deployment, result: { endpoint: { id, address: 'x' }, ok, reloaded: false, runtimeOps: 0, durationMs: 1, error: 'e' } };
    const life = new ReconcileLifecycle();
    for (let i = 0; i < 200; i++) for (const ok of [true, false]) metrics.record(deployed(`haproxy-${i}`, ok), life.apply(deployed(`haproxy-${i}`, ok), 0));
    const series = async () => (await metrics.registry.metrics()).split('\n').filter((l) => /^haprx_(instance_deploys|instance_updates|runtime_operations)_total\{/.test(l));
    assert.equal((await series()).length, 200 * 4);
    metrics.retainEndpoints(['haproxy-7', 'haproxy-new']);
    assert.deepEqual((await series()).map((l) => /endpoint="([^"]+)"/.exec(l)![1]), ['haproxy-7', 'haproxy-7', 'haproxy-7', 'haproxy-7']);
    assert.equal(metrics.endpointCount, 1);
  });
});

describe('startObservability', () => {
  it('serves /healthz and /readyz on one port, /metrics on another, /debug/vars on a third, and says why it is not ready yet', async () => {
    const { log } = capturedLogger();
    const obs = await startObservability({ log, env: {}, health: { port: 0, host: '127.0.0.1' }, metrics: { port: 0, host: '127.0.0.1' }, debug: { port: 0 }, defaultMetrics: false });
    try {
      assert.equal(obs.tracing, undefined);
      const ready = await fetchText(obs.healthPort!, '/readyz');
      assert.equal(ready.status, 503);
      assert.deepEqual(JSON.parse(ready.body), { status: 'not ready', waitingFor: ['the initial sync of every watched set', 'a configuration that haproxy accepted'] });
      assert.equal((await fetchText(obs.healthPort!, '/healthz')).status, 200);
      assert.equal((await fetchText(obs.healthPort!, '/metrics')).status, 404, 'metrics are on their own port');
      assert.equal((await fetchText(obs.healthPort!, '/debug/vars')).status, 404, 'the debug state is not beside the probes');
      const metrics = await fetchText(obs.metricsPort!, '/metrics');
      assert.match(metrics.body, /^haprx_ready 0$/m);
      obs.record({ type: 'ConfigAccepted', generation: 3 });
      assert.match((await fetchText(obs.metricsPort!, '/metrics')).body, /^haprx_config_generation 3$/m);
      assert.deepEqual(JSON.parse((await fetchText(obs.debugPort!, '/debug/vars?field=$.controller.generation')).body), [3]);
      assert.equal((await fetchText(obs.debugPort!, '/healthz')).status, 404);
    } finally {
      await obs.close();
    }
  });

  it('binds /debug/vars to 127.0.0.1 unless told otherwise, so another address of the host does not reach it', async () => {
    const { log } = capturedLogger();
    const obs = await startObservability({ log, env: {}, health: { port: 0 }, metrics: false, debug: { port: 0 }, defaultMetrics: false });
    try {
      // The health listener takes every interface (0.0.0.0), so 127.0.0.2 reaches it; the debug listener does not.
      assert.equal((await fetchText(obs.healthPort!, '/healthz', '127.0.0.2')).status, 200);
      await assert.rejects(fetchText(obs.debugPort!, '/debug/vars', '127.0.0.2'), /ECONNREFUSED/);
      assert.equal((await fetchText(obs.debugPort!, '/debug/vars')).status, 200);
    } finally {
      await obs.close();
    }
  });

  it('shares one server between listeners given the same host and port, and serves nothing it was told to turn off', async () => {
    const port = await freePort();
    const { log } = capturedLogger();
    const obs = await startObservability({ log, env: {}, health: { port, host: '127.0.0.1' }, debug: { port, host: '127.0.0.1' }, metrics: false, defaultMetrics: false });
    try {
      assert.equal(obs.debugPort, port);
      assert.equal(obs.metricsPort, undefined);
      assert.equal((await fetchText(port, '/debug/vars?field=resources')).status, 200);
      assert.equal((await fetchText(port, '/readyz')).status, 503);
    } finally {
      await obs.close();
    }
    const off = await startObservability({ log, env: {}, health: false, metrics: false, debug: false, defaultMetrics: false });
    assert.deepEqual([off.healthPort, off.metricsPort, off.debugPort], [undefined, undefined, undefined]);
    await off.close();
  });

  it('fails on a port in use, or warns and goes on when asked to', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      const { log, lines } = capturedLogger();
      await assert.rejects(startObservability({ log, env: {}, health: { port, host: '127.0.0.1' }, metrics: false, debug: false, defaultMetrics: false }), /cannot serve health on 127\.0\.0\.1:\d+: .*EADDRINUSE/);
      const obs = await startObservability({ log, env: {}, health: { port, host: '127.0.0.1' }, metrics: false, debug: false, onListenError: 'warn', defaultMetrics: false });
      assert.equal(obs.healthPort, undefined);
      assert.ok(lines.some((l) => l.includes('EADDRINUSE')));
      await obs.close();
    } finally {
      busy.close();
    }
  });
});

describe('objects the render skips', () => {
  it('logs each one on a line of its own when it first becomes skipped, also when the output did not change, and shows statuses in /debug/vars', () => {
    const { log, lines } = capturedLogger();
    const obs = createObserver({ log, defaultMetrics: false });
    const reconcile: Reconcile = { seq: 1, at: 0, cause: { reason: 'resources', changes: [] } };
    const config = sealRendered({ main: 'global\n', maps: {}, files: {}, certs: {} });
    const evil = { object: 'Ingress shop/evil', ref: { kind: 'Ingress', namespace: 'shop', name: 'evil' }, message: 'skipped: spec.rules[0].host "evil\nbind :9999" is not a DNS name', field: 'spec.rules[0].host', template: 'snippets/ingress-model', line: 171, skipped: true };
    const other = { ...evil, object: 'Ingress shop/other', ref: { ...evil.ref, name: 'other' } };
    const statuses = [{ ref: { kind: 'Ingress', namespace: 'shop', name: 'web' }, served: true, conditions: [], fields: {}, entries: [] }];
    obs.record({ type: 'Rendered', reconcile, config, durationMs: 1, warnings: [evil], statuses });
    obs.record({ type: 'RenderUnchanged', reconcile, hash: config.hash, durationMs: 1 });
    obs.record({ type: 'RenderUnchanged', reconcile, hash: config.hash, durationMs: 1, warnings: [evil, other] });
    const skipped = lines.map((l) => JSON.parse(l) as { event: string; msg: string; field?: string; template?: string }).filter((l) => l.event === 'RenderWarning');
    assert.deepEqual(
      skipped.map((l) => [l.msg, l.field, l.template]),
      [
        ['Ingress shop/evil: skipped: spec.rules[0].host "evil\\nbind :9999" is not a DNS name', 'spec.rules[0].host', 'snippets/ingress-model:171'],
        ['Ingress shop/other: skipped: spec.rules[0].host "evil\\nbind :9999" is not a DNS name', 'spec.rules[0].host', 'snippets/ingress-model:171'],
      ],
    );
    const objects = obs.debug.snapshot().objects as { status: { object: string; served?: boolean }[]; warnings: { object: string }[] };
    assert.deepEqual(objects.status.map((s) => [s.object, s.served]), [['Ingress shop/web', undefined]], 'served is not said until a deployment since the start');
    assert.deepEqual(objects.warnings.map((w) => w.object), ['Ingress shop/evil', 'Ingress shop/other']);
  });
});
