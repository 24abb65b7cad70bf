import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeOp, ServerAddOp } from '../../src/haproxy/plan-types.ts';
import { type TranslateContext, timeMs, translateOps } from '../../src/dataplane/runtime-ops.ts';
import { placeFiles, sanitizeFileName, storageFor, storedName } from '../../src/dataplane/storage.ts';

const ctx = (serverPutFields = true): TranslateContext => ({
  serverPutFields,
  mapName: (name) => (name === 'hosts.map' ? 'haprx-hosts.map' : undefined),
  resolvePath: (ref) => (ref.kind === 'certs' ? `/etc/haproxy/general/haprx-${ref.name}` : undefined),
});

const add = (extra: Partial<ServerAddOp> = {}): ServerAddOp => ({
  kind: 'server-add',
  backend: 'be',
  server: 's1',
  address: '10.0.0.1:8080',
  args: [],
  state: 'ready',
  health: false,
  agent: false,
  ...extra,
});

function calls(ops: RuntimeOp[], c = ctx()) {
  const t = translateOps(ops, c);
  assert.ok(t.ok, t.ok ? '' : t.reasons.join('; '));
  return t;
}

function reasons(ops: RuntimeOp[], c = ctx()): string[] {
  const t = translateOps(ops, c);
  assert.ok(!t.ok, 'expected the API not to carry it');
  return t.reasons;
}

describe('translateOps: servers', () => {
  test('an added server becomes a RuntimeAddServer body, settings as fields', () => {
    const t = calls([add({ args: ['maxconn', '100', 'inter', '2s', 'backup', 'ca-file', 'ssl/ca.pem', 'ssl', 'verify', 'required', 'weight', '7'] })]);
    assert.deepEqual(t.calls.map((c) => ('body' in c ? c.body : undefined)), [
      { name: 's1', address: '10.0.0.1', port: 8080, maxconn: 100, inter: 2000, backup: 'enabled', ssl_cafile: '/etc/haproxy/general/haprx-ca.pem', ssl: 'enabled', verify: 'required', weight: 7 },
    ]);
    assert.equal(t.calls[0]!.kind === 'server-add' && t.calls[0]!.state, 'ready');
  });

  test('IPv6 literals lose their brackets; a later no-backup undoes backup', () => {
    const t = calls([add({ address: '[2001:db8::1]:443', args: ['backup', 'no-backup'] })]);
    assert.deepEqual(t.calls[0]!.kind === 'server-add' && t.calls[0]!.body, { name: 's1', address: '2001:db8::1', port: 443 });
  });

  test('what the API cannot carry is named: checks, agents, unknown settings, unknown files', () => {
    assert.deepEqual(reasons([add({ args: ['check'], health: true })]), ['server be/s1 has "check": the Data Plane API cannot enable health checks on a server it adds']);
    assert.match(reasons([add({ args: ['agent-check', 'agent-port', '9'], agent: true })])[0]!, /cannot enable the agent/);
    assert.deepEqual(reasons([add({ args: ['tfo'] })]), ['server be/s1: setting "tfo" has no field in the Data Plane API\'s runtime add server']);
    assert.match(reasons([add({ args: ['crt', 'maps/x.pem'] })])[0]!, /names no file stored on the instance/);
    assert.match(reasons([add({ args: ['inter', '1500us'] })])[0]!, /not a time in whole milliseconds/);
    assert.match(reasons([{ kind: 'server-del', backend: 'be', server: 's1', agent: true }])[0]!, /agent/);
  });

  test('address and weight: runtime PUT from API 3.3.1, X-Runtime-Actions before', () => {
    const ops: RuntimeOp[] = [
      { kind: 'server-addr', backend: 'be', server: 's1', host: '10.0.0.2', port: 81 },
      { kind: 'server-weight', backend: 'be', server: 's1', weight: 5 },
      { kind: 'server-state', backend: 'be', server: 's1', state: 'drain' },
    ];
    const modern = calls(ops);
    assert.deepEqual(modern.calls.map((c) => ('body' in c ? c.body : undefined)), [{ address: '10.0.0.2', port: 81 }, { weight: 5 }, { admin_state: 'drain' }]);
    assert.deepEqual(modern.actions, []);
    const legacy = calls(ops, ctx(false));
    assert.deepEqual(legacy.actions, ['SetServerAddr be s1 10.0.0.2 81', 'SetServerWeight be s1 5']);
    assert.deepEqual(legacy.calls.map((c) => c.kind), ['server-put']);
  });
});

describe('translateOps: maps', () => {
  test('entry operations on the stored map name, one per key even when the config spells the map twice', () => {
    const t = calls([
      { kind: 'map-add', map: 'hosts.map', ref: 'maps/hosts.map', key: 'a.test', value: 'be_a' },
      { kind: 'map-add', map: 'hosts.map', ref: './maps/hosts.map', key: 'a.test', value: 'be_a' },
      { kind: 'map-set', map: 'hosts.map', ref: 'maps/hosts.map', key: 'b.test/x', value: 'be_b' },
      { kind: 'map-del', map: 'hosts.map', ref: 'maps/hosts.map', key: 'c.test' },
    ]);
    assert.deepEqual(
      t.calls.map((c) => `${c.kind} ${'map' in c ? c.map : ''} ${'key' in c ? c.key : ''}`),
      ['map-add haprx-hosts.map a.test', 'map-set haprx-hosts.map b.test/x', 'map-del haprx-hosts.map c.test'],
    );
  });

  test('keys and values the API would mangle, maps outside storage, and whole replacements reload', () => {
    assert.match(reasons([{ kind: 'map-add', map: 'hosts.map', ref: 'maps/hosts.map', key: 'a b', value: 'x' }])[0]!, /key "a b" cannot go through/);
    assert.match(reasons([{ kind: 'map-set', map: 'hosts.map', ref: 'maps/hosts.map', key: 'a', value: 'x;y' }])[0]!, /value of "a"/);
    assert.match(reasons([{ kind: 'map-del', map: 'other.map', ref: 'maps/other.map', key: 'a' }])[0]!, /not in maps storage/);
    assert.match(reasons([{ kind: 'map-replace', map: 'hosts.map', ref: 'maps/hosts.map', entries: [] }])[0]!, /replaced in one step/);
    // The storage upload of the reload path is what replaces a certificate on a Data Plane API instance.
    assert.deepEqual(reasons([{ kind: 'cert-set', cert: 'site.pem', ref: 'ssl/site.pem', content: 'x' }]), ["certificate site.pem is replaced through the Data Plane API's storage, with the configuration"]);
    assert.deepEqual(
      reasons([
        { kind: 'cert-new', cert: 'b.pem', ref: 'ssl/b.pem', content: 'x' },
        { kind: 'crt-list-add', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'b.pem', entry: 'ssl/b.pem b.example' },
        { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'c.pem', certRef: 'ssl/c.pem' },
        { kind: 'cert-del', cert: 'c.pem', ref: 'ssl/c.pem' },
      ]),
      [
        "certificate b.pem is uploaded to the Data Plane API's storage, with the configuration",
        "crt-list https.crtlist is replaced through the Data Plane API's storage, with the configuration",
        "crt-list https.crtlist is replaced through the Data Plane API's storage, with the configuration",
        "certificate c.pem is removed from the Data Plane API's storage, with the configuration",
      ],
    );
  });
});

describe('storage names and places', () => {
  test('sanitises like the API: letters, digits, _ and - in the name and the extension', () => {
    assert.equal(sanitizeFileName('hosts.map'), 'hosts.map');
    assert.equal(sanitizeFileName('example.com.pem'), 'example_com.pem');
    assert.equal(sanitizeFileName('a b+c'), 'a_b_c');
    assert.equal(sanitizeFileName('.hidden'), '_hidden');
    assert.equal(storedName('maps', 'routes', 'haprx-'), 'haprx-routes.map');
    assert.equal(storedName('maps', 'hosts.map', 'haprx-'), 'haprx-hosts.map');
    assert.equal(storedName('general', 'blocked.lst', 'haprx-'), 'haprx-blocked.lst');
  });

  test('certificates with a key go to ssl storage, the others to general storage', () => {
    assert.equal(storageFor('certs', '-----BEGIN CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n'), 'ssl_certificates');
    assert.equal(storageFor('certs', '-----BEGIN CERTIFICATE-----\n'), 'general');
    assert.equal(storageFor('files', '-----BEGIN PRIVATE KEY-----'), 'general');
  });

  test('refuses two files that would share a stored name', () => {
    const result = placeFiles({ main: '', maps: {}, files: { 'a.b.txt': 'x', 'a_b.txt': 'y' }, certs: {} }, 'haprx-');
    assert.ok('error' in result);
    assert.match(result.error, /files\/a\.b\.txt and files\/a_b\.txt would both be stored as haprx-a_b\.txt in general storage/);
  });

  test('haproxy times in milliseconds', () => {
    assert.equal(timeMs('250'), 250);
    assert.equal(timeMs('2s'), 2000);
    assert.equal(timeMs('1m'), 60_000);
    assert.equal(timeMs('x'), undefined);
  });
});
