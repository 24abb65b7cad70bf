/**
 * The plan against the real haproxy: a process started on the old
 * configuration and given the runtime commands of the plan must end up like a
 * process started fresh on the new one (servers state and map contents), and
 * the facts the plan relies on must hold for this haproxy build.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { RUNTIME_SERVER_KEYWORDS, SERVER_KEYWORDS, planDeployment } from '../../src/haproxy/plan.ts';
import type { RuntimeOp } from '../../src/haproxy/plan.ts';
import { parsePreparedVersion, prepareMapCommand, replySucceeded, runtimeCommands } from '../../src/haproxy/runtime-commands.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { get } from '../support/echo-backend.ts';
import { freePort, parseMapDump, parseMapList, parseServersState, startHaproxy } from '../support/haproxy-runtime.ts';
import type { RunningHaproxy } from '../support/haproxy-runtime.ts';

// A throwaway CA (EC P-256, valid until 2126): its certificate, a CRL it signed, and key + certificate for `crt`.
const CA_PEM = `-----BEGIN CERTIFICATE-----
MIIBhzCCAS2gAwIBAgIUD6Ipy+soi1XJYgu1nzIWEuAMMrUwCgYIKoZIzj0EAwIw
GDEWMBQGA1UEAwwNaGFwcngtdGVzdC1jYTAgFw0yNjExMjIwNjU4MjJaGA8yMTI2
MTAyOTA2NTgyMlowGDEWMBQGA1UEAwwNaGFwcngtdGVzdC1jYTBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABPuYIYGLNfuRS3jeBLDuXaE/BCiN71OIjK1MbD7WBGE4
C4RsXDkprqhJYAJQk4lTKeZo9S3L2LauVvliGzM6rKCjUzBRMB0GA1UdDgQWBBTJ
Or7fd+h/X0JEzsuYiYEsfHWvszAfBgNVHSMEGDAWgBTJOr7fd+h/X0JEzsuYiYEs
fHWvszAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCondbR4lTa
kch0uyrFtcEHYLNB8Fv4BkEKpFaZBPirgAIgHkS17Ymgql1w55q2EhVk7Da0e33n
HlJGm9K5Qbpmcdo=
-----END CERTIFICATE-----
`;
const CRL_PEM = `-----BEGIN X509 CRL-----
MIGwMFkCAQEwCgYIKoZIzj0EAwIwGDEWMBQGA1UEAwwNaGFwcngtdGVzdC1jYRcN
MjYxMTIyMDY1ODIyWhgPMjEyNjEwMjkwNjU4MjJaoA4wDDAKBgNVHRQEAwIBATAK
BggqhkjOPQQDAgNHADBEAiAkJbTzm8ncGJExta47rKUQLBZIXB3H8y8BqaXXxpn9
6gIgWHAa8xcFdkoIe05DagrsEXaCUzVmftJJOTqqZvRwut4=
-----END X509 CRL-----
`;
const KEY_PEM = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgnaa8HPdSaz8sOxyp
ZEjcsnEYJusVkuwFX9TyvjAUHnKhRANCAAT7mCGBizX7kUt43gSw7l2hPwQoje9T
iIytTGw+1gRhOAuEbFw5Ka6oSWACUJOJUynmaPUty9i2rlb5YhszOqyg
-----END PRIVATE KEY-----
`;
const CERTS = { 'ca.pem': CA_PEM, 'crl.pem': CRL_PEM, 'client.pem': KEY_PEM + CA_PEM };

/** An HTTP backend on a loopback address; `hold` keeps /slow requests open until released. */
async function backend(host: string, name: string) {
  let release: () => void = () => {};
  let entered: () => void = () => {};
  const held = { released: Promise.resolve(), entered: Promise.resolve() };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/slow') {
      entered();
      void held.released.then(() => res.end(`${name} slow\n`));
    } else {
      res.end(`${name}\n`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('no address');
  return {
    port: address.port,
    hold() {
      held.released = new Promise<void>((r) => (release = r));
      held.entered = new Promise<void>((r) => (entered = r));
    },
    release: () => release(),
    entered: () => held.entered,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function config(port: number, body: string, maps: Record<string, string> = {}, certs: Record<string, string> = {}): RenderedConfig {
  const main = [
    'global',
    '    maxconn 2000',
    'defaults',
    '    mode http',
    '    timeout connect 1s',
    '    timeout client 5s',
    '    timeout server 5s',
    'frontend fe',
    `    bind 127.0.0.1:${port}`,
    body,
    '',
  ].join('\n');
  return sealRendered({ main, maps, files: {}, certs });
}

async function start(t: TestContext, files: RenderedConfig): Promise<RunningHaproxy> {
  const haproxy = await startHaproxy(files);
  t.after(() => haproxy.stop());
  return haproxy;
}

/** Sends the commands of each op, asserting haproxy's answers. */
async function apply(haproxy: RunningHaproxy, ops: RuntimeOp[]): Promise<void> {
  for (const op of ops) {
    let mapVersion: number | undefined;
    if (op.kind === 'map-replace') {
      const reply = await haproxy.command(prepareMapCommand(op));
      mapVersion = parsePreparedVersion(reply);
      assert.notEqual(mapVersion, undefined, `prepare map answered: ${reply}`);
    }
    for (const command of runtimeCommands(op, mapVersion === undefined ? {} : { mapVersion })) {
      const reply = await haproxy.command(command);
      assert.ok(replySucceeded(command, reply), `"${command}" answered: ${reply}`);
    }
  }
}

/** `unordered`: maps whose lookups are tree-indexed, whose entries are compared whatever their order. */
async function snapshot(haproxy: RunningHaproxy, unordered: ReadonlySet<string> = new Set()) {
  // A fresh start pauses the checks of a server in maintenance (0x08); one added in maintenance runs them.
  const servers = parseServersState(await haproxy.command('show servers state')).map((s) =>
    s.maint ? { ...s, checkState: String(Number(s.checkState) & ~0x08) } : s,
  );
  const maps: Record<string, { key: string; value: string }[]> = {};
  for (const ref of parseMapList(await haproxy.command('show map'))) {
    const entries = parseMapDump(await haproxy.command(`show map ${ref}`));
    maps[ref] = unordered.has(ref) ? entries.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0)) : entries;
  }
  return { servers, maps };
}

/** Health checks settle over a few intervals; wait for both processes to agree, then compare. */
async function assertSameState(a: RunningHaproxy, b: RunningHaproxy, unordered: ReadonlySet<string> = new Set()) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const [x, y] = await Promise.all([snapshot(a, unordered), snapshot(b, unordered)]);
    if (isDeepStrictEqual(x, y) || Date.now() > deadline) {
      assert.deepEqual(x, y);
      return x;
    }
    await sleep(100);
  }
}

/**
 * Old process + runtime plan must equal a fresh process on the new files,
 * given what a fresh deployment applies after starting (drains).
 */
async function assertRuntimeEquivalent(t: TestContext, previous: RenderedConfig, next: RenderedConfig, settleMs = 0, unordered: ReadonlySet<string> = new Set()) {
  const plan = planDeployment(previous, next);
  assert.equal(plan.kind, 'runtime', JSON.stringify(plan));
  if (plan.kind !== 'runtime') return undefined;
  const running = await start(t, previous);
  const fresh = await start(t, next);
  const firstDeploy = planDeployment(undefined, next);
  assert.equal(firstDeploy.kind, 'reload');
  if (firstDeploy.kind === 'reload') await apply(fresh, firstDeploy.after);
  assert.notDeepEqual(await snapshot(running), await snapshot(fresh), 'the pair must differ before the plan is applied');
  await apply(running, plan.ops);
  // Let health checks run a few rounds, so that both sides are compared after their results.
  await sleep(settleMs);
  return { plan, state: await assertSameState(running, fresh, unordered), running, fresh };
}

const live: Awaited<ReturnType<typeof backend>>[] = [];
let app!: Awaited<ReturnType<typeof backend>>;
let other!: Awaited<ReturnType<typeof backend>>;
let app6!: Awaited<ReturnType<typeof backend>>;
let dead = 0;

before(async () => {
  app = await backend('127.0.0.1', 'app');
  other = await backend('127.0.0.1', 'other');
  app6 = await backend('::1', 'app6');
  live.push(app, other, app6);
  dead = await freePort();
});
after(async () => {
  await Promise.all(live.map((b) => b.close()));
});

describe('runtime plan on a real haproxy equals a fresh start', () => {
  it('servers: add, delete, re-address, weight, maintenance, drain, with checks and merged default-server', async (t) => {
    const port = await freePort();
    const head = [
      'backend be_app',
      '    balance roundrobin',
      '    default-server check inter 100ms fall 1 rise 1 weight 2',
    ];
    const previous = config(port, [
      '    default_backend be_app',
      ...head,
      `    server s1 127.0.0.1:${app.port}`,
      `    server s2 127.0.0.1:${app.port} weight 5`,
      `    server s3 127.0.0.1:${app.port} disabled`,
      `    server s4 127.0.0.1:${app.port} # haprx:drain`,
      `    server gone 127.0.0.1:${app.port} agent-check agent-port ${dead} agent-inter 100ms`,
    ].join('\n'));
    const next = config(port, [
      '    default_backend be_app',
      ...head,
      `    server s1 127.0.0.1:${other.port}`,
      `    server s2 127.0.0.1:${app.port} weight 9`,
      `    server s3 127.0.0.1:${app.port}`,
      `    server s4 127.0.0.1:${app.port}`,
      `    server s5 127.0.0.1:${app.port} disabled`,
      `    server s6 127.0.0.1:${app.port} # haprx:drain`,
      `    server s7 127.0.0.1:${dead} no-check maxconn 20`,
      `    server s8 [::1]:${app6.port} weight 0`,
      `    server s9 127.0.0.1:${dead}`,
      `    server s10 127.0.0.1:${app.port} agent-check agent-addr 127.0.0.2 agent-port ${dead} agent-inter 100ms`,
    ].join('\n'));
    const result = await assertRuntimeEquivalent(t, previous, next, 600);
    assert.ok(result);
    const byName = Object.fromEntries(result.state.servers.map((s) => [s.name, s]));
    // The comparison is only as good as the states it covers: all of these occur.
    assert.deepEqual(Object.keys(byName).sort(), ['s1', 's10', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 's9']);
    assert.deepEqual([byName['s10']!.agentAddr, byName['s10']!.agentPort], ['127.0.0.2', String(dead)]);
    assert.notEqual(byName['s10']!.agentState, '0');
    assert.equal(byName['s1']!.port, String(other.port));
    assert.equal(byName['s2']!.weight, '9');
    assert.equal(byName['s5']!.maint, true);
    assert.equal(byName['s6']!.drain, true);
    assert.equal(byName['s7']!.checkState, '0');
    assert.notEqual(byName['s9']!.checkState, '0');
    assert.equal(byName['s8']!.addr, '::1');
    assert.equal(byName['s9']!.opState, '0', 'a checked server on a closed port goes down');
    assert.equal(byName['s3']!.opState, '2');
  });

  it('maps: entry add/set/del with escaping, replacement for reorders, duplicates and #-keys, the spelling haproxy uses', async (t) => {
    const port = await freePort();
    const body = [
      '    http-request set-var(txn.p) path,map_beg(./maps/paths.map,none)',
      '    http-request set-var(txn.r) path,map_reg(maps/regex.map,none)',
      '    http-request set-var(txn.d) path,map(maps/dup.map,none)',
      '    use_backend %[req.hdr(host),lower,map(maps/hosts.map,be_a)]',
      'backend be_a',
      `    server s1 127.0.0.1:${app.port}`,
    ].join('\n');
    const previous = config(port, body, {
      'hosts.map': '# hosts\na.example be_a\nb.example be_b\nc.example be_c\n',
      'paths.map': '/api be_api\n/ be_root\n',
      'regex.map': '^/a\\.b$ one\n  #x two\n',
      'dup.map': 'k 1\nk 2\n',
    });
    const next = config(port, body, {
      'hosts.map': '# hosts\na.example be x  with spaces\nc.example be_c\nd.example semi;colon\\back\\\\slash\ne.example tab\tsep\n',
      'paths.map': '/api/v2 be_v2\n/api be_api\n/ be_root\n',
      'regex.map': '^/a\\.b$ uno\n  #x dos\n',
      'dup.map': 'k 1\nk 3\n',
    });
    const result = await assertRuntimeEquivalent(t, previous, next, 0, new Set(['./maps/paths.map']));
    assert.ok(result);
    // Lookups agree, the longest prefix first, though the entries sit in another order.
    for (const path of ['/api/v2/x', '/api/x', '/x']) {
      const lookup = (h: RunningHaproxy) => h.command(`get map ./maps/paths.map ${path}`).then((r) => /value="([^"]*)"/.exec(r)?.[1]);
      assert.equal(await lookup(result.running), await lookup(result.fresh), path);
    }
    assert.equal(await result.running.command('get map ./maps/paths.map /api/v2/x').then((r) => /value="([^"]*)"/.exec(r)?.[1]), 'be_v2');
    const kinds = Object.fromEntries(['hosts.map', 'paths.map', 'regex.map', 'dup.map'].map((m) => [m, result.plan.ops.filter((op) => 'map' in op && op.map === m).map((op) => op.kind)]));
    assert.deepEqual(kinds, {
      'hosts.map': ['map-del', 'map-set', 'map-add', 'map-add'],
      // map_beg finds the longest prefix wherever it sits: the new, longer prefix is added last.
      'paths.map': ['map-add'],
      'regex.map': ['map-replace'],
      'dup.map': ['map-replace'],
    });
    assert.deepEqual(Object.keys(result.state.maps).sort(), ['./maps/paths.map', 'maps/dup.map', 'maps/hosts.map', 'maps/regex.map']);
    assert.deepEqual(result.state.maps['maps/hosts.map'], [
      { key: 'a.example', value: 'be x  with spaces' },
      { key: 'c.example', value: 'be_c' },
      { key: 'd.example', value: 'semi;colon\\back\\\\slash' },
      { key: 'e.example', value: 'tab\tsep' },
    ]);
  });

  it('consistent hashing, first with ids, leastconn, and defaults inherited with from', async (t) => {
    const port = await freePort();
    const named = [
      'defaults d1',
      '    mode http',
      '    timeout connect 1s',
      '    timeout client 5s',
      '    timeout server 5s',
      '    default-server init-addr last,libc,none maxconn 30',
    ].join('\n');
    const body = (servers: { hash: string[]; first: string[]; ll: string[]; d: string[] }) => [
      '    default_backend be_hash',
      'backend be_hash',
      '    balance uri',
      '    hash-type consistent',
      ...servers.hash.map((s) => `    ${s}`),
      'backend be_first',
      '    balance first',
      ...servers.first.map((s) => `    ${s}`),
      'backend be_ll',
      '    balance leastconn',
      ...servers.ll.map((s) => `    ${s}`),
      named,
      'backend be_d from d1',
      ...servers.d.map((s) => `    ${s}`),
    ].join('\n');
    const a = `127.0.0.1:${app.port}`;
    const previous = config(port, body({
      hash: [`server h1 ${a}`, `server h2 ${a}`],
      first: [`server f1 ${a} id 1`, `server f2 ${a} id 2`, `server f3 ${a} id 3`],
      ll: [],
      d: [`server d1 ${a}`],
    }));
    const next = config(port, body({
      hash: [`server h2 ${a}`, `server h3 ${a} weight 3`],
      first: [`server f1 ${a} id 1`, `server f4 ${a} id 2`, `server f3 ${a} id 3`],
      ll: [`server l1 ${a}`, `server l2 ${a}`],
      d: [`server d1 ${a}`, `server d2 ${a}`],
    }));
    const result = await assertRuntimeEquivalent(t, previous, next);
    assert.ok(result);
    const d2 = result.plan.ops.find((op) => op.kind === 'server-add' && op.server === 'd2');
    assert.deepEqual(d2 && 'args' in d2 && d2.args, ['maxconn', '30']);
    // `first` picks by id: the runtime server must sit where a fresh start puts it.
    const ids = (await result.running.command('show servers state be_first')).split('\n').filter((l) => / be_first /.test(l)).map((l) => l.split(' ').slice(2, 4).join(' '));
    assert.deepEqual(ids.sort(), ['1 f1', '2 f4', '3 f3']);
  });

  it('TLS settings whose files the running configuration loads', async (t) => {
    const port = await freePort();
    const tls = 'ssl verify required ca-file ssl/ca.pem crl-file ssl/crl.pem crt ssl/client.pem';
    const previous = config(port, ['    default_backend be_tls', 'backend be_tls', `    server t1 127.0.0.1:${app.port} ${tls}`].join('\n'), {}, CERTS);
    const next = config(port, ['    default_backend be_tls', 'backend be_tls', `    server t1 127.0.0.1:${app.port} ${tls}`, `    server t2 127.0.0.1:${other.port} ${tls}`].join('\n'), {}, CERTS);
    const result = await assertRuntimeEquivalent(t, previous, next);
    assert.ok(result);
    assert.equal(result.state.servers.find((s) => s.name === 't2')?.useSsl, '1');
  });
});

describe('traffic through servers added at runtime', () => {
  it('routes a request to a server and a map entry added at runtime, and back to 503 once removed', async (t) => {
    const port = await freePort();
    const body = (servers: string) => [
      '    use_backend %[req.hdr(host),lower,map(maps/hosts.map,be_none)]',
      'backend be_none',
      'backend be_app',
      '    balance roundrobin',
      servers,
    ].join('\n');
    const empty = config(port, body(''), { 'hosts.map': 'other.example be_none\n' });
    const withApp = config(port, body(`    server a1 127.0.0.1:${app.port}`), { 'hosts.map': 'other.example be_none\napp.example be_app\n' });
    const haproxy = await start(t, empty);
    assert.equal((await get(port, '/', 'app.example')).status, 503);

    const plan = planDeployment(empty, withApp);
    assert.equal(plan.kind, 'runtime');
    if (plan.kind !== 'runtime') return;
    assert.deepEqual(plan.ops.map((op) => op.kind), ['server-add', 'map-add']);
    await apply(haproxy, plan.ops);
    assert.deepEqual(await get(port, '/', 'app.example'), { status: 200, body: 'app\n' });

    const back = planDeployment(withApp, empty);
    assert.equal(back.kind, 'runtime');
    if (back.kind !== 'runtime') return;
    await apply(haproxy, back.ops);
    assert.equal((await get(port, '/', 'app.example')).status, 503);
  });

  it('takes a backend from 0 to 200 servers and back at runtime', async (t) => {
    const port = await freePort();
    const body = (count: number) => [
      '    default_backend be_many',
      'backend be_many',
      '    balance leastconn',
      '    default-server maxconn 100',
      ...Array.from({ length: count }, (_, i) => `    server ep${String(i).padStart(3, '0')} 127.0.0.1:${i % 2 === 0 ? app.port : other.port} weight ${1 + (i % 5)}`),
    ].join('\n');
    const none = config(port, body(0));
    const many = config(port, body(200));
    const result = await assertRuntimeEquivalent(t, none, many);
    assert.ok(result);
    assert.equal(result.plan.ops.length, 200);
    assert.equal(result.state.servers.length, 200);
    assert.ok(result.state.servers.every((s) => !s.maint && !s.drain && s.opState === '2'));

    const answers = await Promise.all(Array.from({ length: 20 }, () => get(port)));
    assert.ok(answers.every((a) => a.status === 200), JSON.stringify(answers));
    assert.deepEqual(new Set(answers.map((a) => a.body)), new Set(['app\n', 'other\n']));

    const back = planDeployment(many, none);
    assert.equal(back.kind, 'runtime');
    if (back.kind !== 'runtime') return;
    await apply(result.running, back.ops);
    assert.equal(parseServersState(await result.running.command('show servers state be_many')).length, 0);
  });

  it('refuses to delete a server while a request is in flight, then deletes it', async (t) => {
    const port = await freePort();
    const slow = await backend('127.0.0.1', 'slow');
    t.after(() => slow.close());
    // Once the request ends its connection idles in the server's pool, which also blocks deletion until purged.
    const body = (servers: string) => ['    default_backend be_s', 'backend be_s', '    default-server pool-purge-delay 300ms', servers].join('\n');
    const previous = config(port, body(`    server s1 127.0.0.1:${slow.port}`));
    const next = config(port, body(''));
    const haproxy = await start(t, previous);
    slow.hold();
    const pending = get(port, '/slow');
    await slow.entered();

    const plan = planDeployment(previous, next);
    assert.equal(plan.kind, 'runtime');
    if (plan.kind !== 'runtime') return;
    const [maint, del] = runtimeCommands(plan.ops[0]!);
    assert.ok(replySucceeded(maint!, await haproxy.command(maint!)));
    const refused = await haproxy.command(del!);
    assert.equal(replySucceeded(del!, refused), false);
    assert.match(refused, /Server still has connections attached to it, cannot remove it/);

    slow.release();
    assert.deepEqual(await pending, { status: 200, body: 'slow slow\n' });
    let reply = '';
    for (let i = 0; i < 50 && !replySucceeded(del!, reply); i++) {
      reply = await haproxy.command(del!);
      if (!replySucceeded(del!, reply)) await sleep(100);
    }
    assert.equal(reply.trim(), 'Server deleted.');
  });
});

describe('haproxy 2.6 facts the plan relies on', () => {
  /** Arguments that make each runtime setting valid on its own (files come from CERTS). */
  const samples: Record<string, string> = {
    addr: 'addr 127.0.0.2', 'agent-addr': 'agent-addr 127.0.0.1', 'agent-check': 'agent-check agent-port 1',
    'agent-inter': 'agent-inter 1s', 'agent-port': 'agent-port 1', 'agent-send': 'agent-send hi', 'allow-0rtt': 'allow-0rtt',
    alpn: 'alpn h2', backup: 'backup', 'ca-file': 'ssl verify required ca-file ssl/ca.pem', check: 'check',
    'check-alpn': 'check-alpn h2', 'check-proto': 'check-proto h2', 'check-send-proxy': 'check-send-proxy',
    'check-sni': 'check-sni a.example', 'check-ssl': 'check-ssl verify none', 'check-via-socks4': 'check-via-socks4',
    ciphers: 'ciphers ECDHE-RSA-AES128-GCM-SHA256', ciphersuites: 'ciphersuites TLS_AES_128_GCM_SHA256',
    'crl-file': 'ssl verify required ca-file ssl/ca.pem crl-file ssl/crl.pem', crt: 'ssl verify none crt ssl/client.pem',
    downinter: 'downinter 1s', 'error-limit': 'error-limit 5', fall: 'fall 2', fastinter: 'fastinter 1s',
    'force-sslv3': 'force-sslv3', 'force-tlsv10': 'force-tlsv10', 'force-tlsv11': 'force-tlsv11', 'force-tlsv12': 'force-tlsv12',
    'force-tlsv13': 'force-tlsv13', id: 'id 900', inter: 'inter 1s', maxconn: 'maxconn 5', maxqueue: 'maxqueue 5',
    minconn: 'minconn 1', 'no-backup': 'no-backup', 'no-send-proxy': 'no-send-proxy', 'no-send-proxy-v2': 'no-send-proxy-v2',
    'no-ssl-reuse': 'no-ssl-reuse', 'no-sslv3': 'no-sslv3', 'no-tfo': 'no-tfo', 'no-tls-tickets': 'no-tls-tickets',
    'no-tlsv10': 'no-tlsv10', 'no-tlsv11': 'no-tlsv11', 'no-tlsv12': 'no-tlsv12', 'no-tlsv13': 'no-tlsv13', npn: 'npn http/1.1',
    observe: 'observe layer7', 'on-error': 'on-error fastinter', 'on-marked-down': 'on-marked-down shutdown-sessions',
    'on-marked-up': 'on-marked-up shutdown-backup-sessions', 'pool-low-conn': 'pool-low-conn 2', 'pool-max-conn': 'pool-max-conn 4',
    'pool-purge-delay': 'pool-purge-delay 1s', port: 'port 9', proto: 'proto h2', 'proxy-v2-options': 'proxy-v2-options ssl',
    rise: 'rise 2', 'send-proxy': 'send-proxy', 'send-proxy-v2': 'send-proxy-v2', 'send-proxy-v2-ssl': 'send-proxy-v2-ssl',
    'send-proxy-v2-ssl-cn': 'send-proxy-v2-ssl-cn', slowstart: 'slowstart 1s', sni: 'sni str(a.example)', source: 'source 127.0.0.1',
    ssl: 'ssl verify none', 'ssl-max-ver': 'ssl-max-ver TLSv1.3', 'ssl-min-ver': 'ssl-min-ver TLSv1.2', tfo: 'tfo',
    'tls-tickets': 'tls-tickets', verify: 'verify none', verifyhost: 'verifyhost a.example', weight: 'weight 3', ws: 'ws h1',
  };

  async function withPreloadedFiles(t: TestContext) {
    const port = await freePort();
    const body = ['    default_backend be', 'backend be', '    server pre 127.0.0.1:1 ssl verify required ca-file ssl/ca.pem crl-file ssl/crl.pem crt ssl/client.pem'].join('\n');
    return start(t, config(port, body, {}, CERTS));
  }

  it('add server accepts every setting the plan passes on', async (t) => {
    assert.deepEqual(Object.keys(samples).sort(), [...RUNTIME_SERVER_KEYWORDS].sort());
    const haproxy = await withPreloadedFiles(t);
    for (const [keyword, words] of Object.entries(samples)) {
      const reply = await haproxy.command(`add server be/k-${keyword} 127.0.0.1:2 ${words}`);
      assert.equal(reply.trim(), 'New server registered.', `${keyword}: ${reply}`);
    }
  });

  it('add server refuses every other setting the plan knows, so the plan reloads for them', async (t) => {
    const haproxy = await withPreloadedFiles(t);
    const values: Record<string, string> = {
      cookie: 'c', 'init-addr': 'none', 'log-proto': 'octet-count', 'max-reuse': '1', namespace: 'n', redir: 'http://x',
      'resolve-net': '10.0.0.0/8', 'resolve-opts': 'allow-dup-ip', 'resolve-prefer': 'ipv4', resolvers: 'dns',
      socks4: '127.0.0.1:1080', 'tcp-ut': '1s',
    };
    // track is accepted by haproxy; the plan leaves it out on purpose (see RUNTIME_SERVER_KEYWORDS).
    const refused = SERVER_KEYWORDS.filter((k) => !RUNTIME_SERVER_KEYWORDS.has(k) && k !== 'track' && k !== 'disabled' && k !== 'enabled');
    assert.ok(refused.length >= 20);
    for (const keyword of refused) {
      const reply = await haproxy.command(`add server be/r-${keyword} 127.0.0.1:2 ${keyword} ${values[keyword] ?? ''}`.trim());
      assert.match(reply, /is not accepted for dynamic server|unknown keyword/, `${keyword}: ${reply}`);
    }
  });

  it('add server creates servers in maintenance, unless told "enabled", which the plan never passes', async (t) => {
    const haproxy = await withPreloadedFiles(t);
    for (const [name, words] of [['x', 'disabled'], ['y', 'enabled'], ['z', '']]) {
      assert.equal((await haproxy.command(`add server be/${name} 127.0.0.1:2 ${words}`.trim())).trim(), 'New server registered.');
    }
    const rows = parseServersState(await haproxy.command('show servers state be')).filter((r) => r.name !== 'pre');
    assert.deepEqual(rows.map((r) => [r.name, r.maint]), [['x', true], ['y', false], ['z', true]]);
  });

  it('a server added in maintenance with checks enabled runs them, where a fresh start pauses them', async (t) => {
    const haproxy = await withPreloadedFiles(t);
    const fresh = await start(t, config(await freePort(), ['    default_backend be', 'backend be', '    server m 127.0.0.1:2 check disabled'].join('\n')));
    await apply(haproxy, [{ kind: 'server-add', backend: 'be', server: 'm', address: '127.0.0.1:2', args: ['check'], state: 'maint', health: true, agent: false }]);
    const row = async (h: RunningHaproxy) => parseServersState(await h.command('show servers state be')).find((r) => r.name === 'm');
    assert.deepEqual([(await row(haproxy))?.checkState, (await row(fresh))?.checkState], ['6', '14']);
  });

  it('the CLI reads at most 64 words of a line and drops the rest silently', async (t) => {
    const haproxy = await withPreloadedFiles(t);
    const filler = (pairs: number) => 'weight 3 '.repeat(pairs);
    // "add server be/w64 addr", 29 pairs and "weight 9" make 64 words; with "maxconn 5" too, "weight 9" is words 65 and 66.
    assert.equal((await haproxy.command(`add server be/w64 127.0.0.1:2 ${filler(29)}weight 9`)).trim(), 'New server registered.');
    assert.equal((await haproxy.command(`add server be/w66 127.0.0.1:2 ${filler(29)}maxconn 5 weight 9`)).trim(), 'New server registered.');
    const weights = Object.fromEntries(parseServersState(await haproxy.command('show servers state be')).map((r) => [r.name, r.weight]));
    assert.equal(weights['w64'], '9');
    assert.equal(weights['w66'], '3');
  });

  it('which balance algorithms take dynamic servers: the plan agrees with haproxy', async (t) => {
    const algorithms = [
      'roundrobin', 'leastconn', 'first', 'random', 'random(2)', 'static-rr', 'source', 'uri', 'url_param id', 'hdr(host)',
      'rdp-cookie', 'hash req.hdr(host)',
    ];
    const variants = algorithms.flatMap((a) => [a, `${a}\n    hash-type consistent`]);
    const port = await freePort();
    const backends = (extra: boolean) => variants.map((v, i) => [
      `backend b${i}`,
      `    balance ${v}`,
      `    server s1 127.0.0.1:${app.port} id 1`,
      ...(extra ? [`    server s2 127.0.0.1:${app.port} id 2`] : []),
    ].join('\n'));
    const previous = config(port, ['    default_backend b0', ...backends(false)].join('\n'));
    const haproxy = await start(t, previous);
    for (let i = 0; i < variants.length; i++) {
      const next = config(port, ['    default_backend b0', ...backends(false).map((b, j) => (j === i ? backends(true)[i]! : b))].join('\n'));
      const plan = planDeployment(previous, next);
      const reply = await haproxy.command(`add server b${i}/s2 127.0.0.1:${app.port} id 2`);
      const accepted = reply.trim() === 'New server registered.';
      assert.equal(plan.kind === 'runtime', accepted, `${variants[i]}: plan ${JSON.stringify(plan)}, haproxy: ${reply}`);
      if (!accepted) assert.match(reply, /Backend must use a dynamic load balancing to support dynamic servers/);
    }
  });

  it('names a map after the path as the configuration spells it', async (t) => {
    const port = await freePort();
    const body = [
      '    http-request set-var(txn.a) req.hdr(host),map(maps/m.map)',
      '    http-request set-var(txn.b) req.hdr(host),map(./maps/m.map)',
      '    default_backend be',
      'backend be',
    ].join('\n');
    const haproxy = await start(t, config(port, body, { 'm.map': 'k v\n' }));
    assert.deepEqual(parseMapList(await haproxy.command('show map')), ['./maps/m.map', 'maps/m.map']);
    assert.match(await haproxy.command(`show map ${haproxy.dir}/maps/m.map`), /Unknown map identifier/);
  });
});
