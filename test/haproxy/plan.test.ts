import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configOf, planDeployment, planEdits } from '../../src/haproxy/plan.ts';
import type { Plan, RuntimeOp } from '../../src/haproxy/plan.ts';
import { sealEdited, sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';

interface Parts {
  global?: string;
  defaults?: string;
  backend?: string;
  servers?: string;
  extra?: string;
  maps?: Record<string, string>;
  files?: Record<string, string>;
  certs?: Record<string, string>;
}

function rendered(p: Parts = {}): RenderedConfig {
  const main = [
    'global',
    `    ${p.global ?? 'maxconn 1000'}`,
    'defaults',
    '    mode http',
    '    timeout connect 1s',
    '    timeout client 5s',
    '    timeout server 5s',
    ...(p.defaults === undefined ? [] : [`    ${p.defaults}`]),
    'frontend fe',
    '    bind 127.0.0.1:8080',
    '    use_backend %[req.hdr(host),lower,map(maps/hosts.map,be_web)]',
    'backend be_web',
    `    ${p.backend ?? 'balance roundrobin'}`,
    ...(p.servers ?? '    server s1 10.0.0.1:80\n    server s2 10.0.0.2:80').split('\n'),
    ...(p.extra === undefined ? [] : p.extra.split('\n')),
    '',
  ].join('\n');
  return sealRendered({
    main,
    maps: p.maps ?? { 'hosts.map': 'a.example be_web\nb.example be_web\n' },
    files: p.files ?? {},
    certs: p.certs ?? {},
  });
}

function runtimeOps(plan: Plan): RuntimeOp[] {
  assert.equal(plan.kind, 'runtime', `expected a runtime plan, got ${JSON.stringify(plan)}`);
  return plan.kind === 'runtime' ? plan.ops : [];
}

function reloadReasons(plan: Plan): string[] {
  assert.equal(plan.kind, 'reload', `expected a reload, got ${JSON.stringify(plan)}`);
  return plan.kind === 'reload' ? plan.reasons : [];
}

const s = (...lines: string[]) => lines.map((l) => `    ${l}`).join('\n');

describe('planDeployment: nothing to do', () => {
  it('identical configurations need nothing', () => {
    assert.deepEqual(planDeployment(rendered(), rendered()), { kind: 'none' });
  });

  it('comments and spacing alone need nothing', () => {
    const next = rendered({ servers: s('server s1   10.0.0.1:80   # first', 'server s2 10.0.0.2:80'), maps: { 'hosts.map': '# routes\na.example    be_web\n\nb.example be_web   \n' } });
    assert.deepEqual(planDeployment(rendered(), next), { kind: 'none' });
  });

  it('a map haproxy does not load needs nothing', () => {
    const prev = rendered({ maps: { 'hosts.map': 'a.example be_web\n', 'spare.map': 'x 1\n' } });
    const next = rendered({ maps: { 'hosts.map': 'a.example be_web\n', 'spare.map': 'x 2\n' } });
    assert.deepEqual(planDeployment(prev, next), { kind: 'none' });
  });
});

describe('planDeployment: servers at runtime', () => {
  it('adds a server, enabled after creation', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80', 'server s3 10.0.0.3:8080 weight 20 maxconn 50') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), next)), [
      { kind: 'server-add', backend: 'be_web', server: 's3', address: '10.0.0.3:8080', args: ['maxconn', '50', 'weight', '20'], state: 'ready', health: false, agent: false },
    ]);
  });

  it('removes a server', () => {
    const next = rendered({ servers: s('server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), next)), [{ kind: 'server-del', backend: 'be_web', server: 's1', agent: false, settings: [] }]);
  });

  it('re-addresses a server (address and port)', () => {
    const next = rendered({ servers: s('server s1 10.0.0.9:8080', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), next)), [{ kind: 'server-addr', backend: 'be_web', server: 's1', host: '10.0.0.9', port: 8080 }]);
  });

  it('re-addresses an IPv6 server', () => {
    const prev = rendered({ servers: s('server s1 [2001:db8::1]:80') });
    const next = rendered({ servers: s('server s1 [2001:db8::2]:81') });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)), [{ kind: 'server-addr', backend: 'be_web', server: 's1', host: '2001:db8::2', port: 81 }]);
  });

  it('changes a weight, including the implicit weight 1', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80 weight 7') });
    const next = rendered({ servers: s('server s1 10.0.0.1:80 weight 5', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)), [
      { kind: 'server-weight', backend: 'be_web', server: 's1', weight: 5 },
      { kind: 'server-weight', backend: 'be_web', server: 's2', weight: 1 },
    ]);
  });

  it('weight 0 is a weight, not a drain', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80 weight 0', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), next)), [{ kind: 'server-weight', backend: 'be_web', server: 's1', weight: 0 }]);
  });

  it('maps disabled to maintenance and back to ready', () => {
    const disabled = rendered({ servers: s('server s1 10.0.0.1:80 disabled', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), disabled)), [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'maint' }]);
    assert.deepEqual(runtimeOps(planDeployment(disabled, rendered())), [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'ready' }]);
  });

  it('drains a server marked with the haprx:drain comment, and undrains it', () => {
    const drained = rendered({ servers: s('server s1 10.0.0.1:80 # haprx:drain', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), drained)), [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'drain' }]);
    assert.deepEqual(runtimeOps(planDeployment(drained, rendered())), [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'ready' }]);
  });

  it('a disabled server stays in maintenance even when marked for draining', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80 disabled # haprx:drain', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(rendered(), next)), [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'maint' }]);
  });

  it('adds a server in its configured state', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80', 'server s3 10.0.0.3:80 disabled', 'server s4 10.0.0.4:80 # haprx:drain') });
    const ops = runtimeOps(planDeployment(rendered(), next));
    assert.deepEqual(
      ops.map((op) => (op.kind === 'server-add' ? [op.server, op.state] : op.kind)),
      [['s3', 'maint'], ['s4', 'drain']],
    );
  });

  it('leaves traffic before re-pointing, and re-points before letting traffic in', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80 disabled') });
    const next = rendered({ servers: s('server s1 10.0.0.9:80 disabled', 'server s2 10.0.0.8:80') });
    assert.deepEqual(
      runtimeOps(planDeployment(prev, next)).map((op) => `${op.kind} ${'server' in op ? op.server : ''}`),
      ['server-state s1', 'server-addr s1', 'server-addr s2', 'server-state s2'],
    );
  });

  it('orders ops: adds, changes, map entries, deletes; each sorted by backend and server', () => {
    const extra = ['backend be_api', '    server a1 10.1.0.1:80', '    server a2 10.1.0.2:80'].join('\n');
    const prev = rendered({ servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80', 'server s9 10.0.0.9:80'), extra });
    const nextExtra = ['backend be_api', '    server a2 10.1.0.2:80 weight 3', '    server a0 10.1.0.10:80'].join('\n');
    const next = rendered({
      servers: s('server s3 10.0.0.3:80', 'server s2 10.0.0.2:80', 'server s1 10.0.0.1:80 weight 2', 'server s0 10.0.0.10:80'),
      extra: nextExtra,
      maps: { 'hosts.map': 'a.example be_web\nb.example be_api\n' },
    });
    const ops = runtimeOps(planDeployment(prev, next));
    assert.deepEqual(
      ops.map((op) => `${op.kind} ${'backend' in op ? `${op.backend}/${op.server}` : 'key' in op ? op.key : 'ref' in op ? op.ref : op.listRef}`),
      [
        'server-add be_api/a0',
        'server-add be_web/s0',
        'server-add be_web/s3',
        'server-weight be_api/a2',
        'server-weight be_web/s1',
        'map-set b.example',
        'server-del be_api/a1',
        'server-del be_web/s9',
      ],
    );
    assert.deepEqual(planDeployment(prev, next), planDeployment(prev, next));
  });
});

describe('planDeployment: settings of added servers', () => {
  it('merges defaults and backend default-server settings into an added server, in the order haproxy applies them', () => {
    const prev = rendered({ defaults: 'default-server inter 3s weight 4', servers: s('default-server inter 1s fall 2', 'server s1 10.0.0.1:80') });
    const next = rendered({ defaults: 'default-server inter 3s weight 4', servers: s('default-server inter 1s fall 2', 'server s1 10.0.0.1:80', 'server s2 10.0.0.2:80 check rise 1') });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)), [
      {
        kind: 'server-add',
        backend: 'be_web',
        server: 's2',
        address: '10.0.0.2:80',
        args: ['inter', '3s', 'inter', '1s', 'fall', '2', 'check', 'rise', '1', 'weight', '4'],
        state: 'ready',
        health: true,
        agent: false,
      },
    ]);
  });

  it('applies a backend default-server line only to the servers after it', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80', 'default-server maxconn 9') });
    const next = rendered({ servers: s('server s1 10.0.0.1:80', 'server s0 10.0.0.5:80', 'default-server maxconn 9', 'server s2 10.0.0.2:80') });
    const ops = runtimeOps(planDeployment(prev, next));
    assert.deepEqual(
      ops.map((op) => (op.kind === 'server-add' ? [op.server, op.args] : [])),
      [['s0', []], ['s2', ['maxconn', '9']]],
    );
  });

  it('a server moved past a default-server line changes its settings: reload', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80', 'default-server check') });
    const next = rendered({ servers: s('default-server check', 'server s1 10.0.0.1:80') });
    const reasons = reloadReasons(planDeployment(prev, next));
    assert.match(reasons.join('\n'), /server s1 changed in more than address, weight and state/);
  });

  it('resolves no-check against a default-server check, and enables health checks of added servers', () => {
    const base = s('default-server check inter 1s', 'server s1 10.0.0.1:80');
    const next = rendered({ servers: `${base}\n${s('server s2 10.0.0.2:80 no-check', 'server s3 10.0.0.3:80')}` });
    const ops = runtimeOps(planDeployment(rendered({ servers: base }), next));
    assert.deepEqual(
      ops.map((op) => (op.kind === 'server-add' ? [op.server, op.args, op.health] : [])),
      [['s2', ['inter', '1s'], false], ['s3', ['check', 'inter', '1s'], true]],
    );
  });

  it('drops name-resolution settings for IP literals', () => {
    const prev = rendered({ defaults: 'default-server init-addr last,libc,none', servers: s('server s1 10.0.0.1:80') });
    const next = rendered({ defaults: 'default-server init-addr last,libc,none', servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80 resolvers dns resolve-prefer ipv4') });
    assert.deepEqual(
      runtimeOps(planDeployment(prev, next)).map((op) => (op.kind === 'server-add' ? op.args : [])),
      [[]],
    );
  });

  it('enables the agent of an added server and stops it before deleting one', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80 agent-check agent-port 9999') });
    const next = rendered({ servers: s('server s2 10.0.0.2:80 agent-check agent-port 9999') });
    assert.deepEqual(
      runtimeOps(planDeployment(prev, next)).map((op) => ('agent' in op ? [op.kind, op.agent] : [])),
      [['server-add', true], ['server-del', true]],
    );
  });

  const refusedAdds: [string, string, RegExp][] = [
    ['a setting add server refuses', 'server s3 10.0.0.3:80 cookie c3', /server s3 cannot be added at runtime: it uses "cookie", which "add server" does not accept/],
    ['a name instead of an IP literal', 'server s3 app.example:80', /server s3 cannot be added at runtime: its address "app.example:80" is not an IP literal/],
    ['track', 'server s3 10.0.0.3:80 track s1', /it uses "track"/],
    ['an unknown setting', 'server s3 10.0.0.3:80 frobnicate', /unknown setting "frobnicate"/],
    ['a setting lacking its value', 'server s3 10.0.0.3:80 maxconn', /"maxconn" lacks its value/],
    ['a ca-file the running process has not loaded', 'server s3 10.0.0.3:80 ssl ca-file ssl/ca.pem', /its ca-file "ssl\/ca.pem" is not loaded by the running configuration/],
    ['an invalid weight', 'server s3 10.0.0.3:80 weight 300', /its weight "300" is not a number from 0 to 256/],
    ['more words than the CLI reads', `server s3 10.0.0.3:80 ${'inter 1s '.repeat(31)}`, /would exceed the CLI's 64 words/],
  ];
  for (const [what, line, reason] of refusedAdds) {
    it(`reloads for an added server with ${what}`, () => {
      const next = rendered({ servers: `${s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80')}\n    ${line}` });
      assert.match(reloadReasons(planDeployment(rendered(), next)).join('\n'), reason);
    });
  }

  it('reloads for an added server that inherits a refused setting from default-server', () => {
    const servers = s('server s1 10.0.0.1:80', 'default-server redir http://x');
    const next = rendered({ servers: `${servers}\n${s('server s3 10.0.0.3:80')}` });
    assert.match(reloadReasons(planDeployment(rendered({ servers }), next)).join('\n'), /server s3 cannot be added at runtime: it uses "redir"/);
  });

  it('accepts a ca-file the running configuration already loads', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80 ssl ca-file ssl/ca.pem') });
    const next = rendered({ servers: s('server s1 10.0.0.1:80 ssl ca-file ssl/ca.pem', 'server s2 10.0.0.2:80 ssl ca-file ssl/ca.pem') });
    assert.equal(runtimeOps(planDeployment(prev, next))[0]?.kind, 'server-add');
  });

  it('keeps the add server line at exactly 64 words', () => {
    // add server be/s addr = 4 words, 30 pairs = 60 words.
    const line = `server s3 10.0.0.3:80 ${'inter 1s '.repeat(30)}`;
    const next = rendered({ servers: `${s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80')}\n    ${line}` });
    assert.equal(runtimeOps(planDeployment(rendered(), next))[0]?.kind, 'server-add');
  });
});

describe('planDeployment: backends that need a reload for server changes', () => {
  it('static-rr cannot take dynamic servers', () => {
    const prev = rendered({ backend: 'balance static-rr' });
    const next = rendered({ backend: 'balance static-rr', servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80', 'server s3 10.0.0.3:80') });
    assert.deepEqual(reloadReasons(planDeployment(prev, next)), [
      'backend be_web: uses balance static-rr, which cannot take dynamic servers (server s3 added)',
    ]);
  });

  it('static-rr inherited from the defaults section counts too', () => {
    const prev = rendered({ defaults: 'balance static-rr', backend: 'option forwardfor' });
    const next = rendered({ defaults: 'balance static-rr', backend: 'option forwardfor', servers: s('server s1 10.0.0.1:80') });
    assert.match(reloadReasons(planDeployment(prev, next)).join('\n'), /uses balance static-rr, which cannot take dynamic servers \(server s2 removed\)/);
  });

  it('static-rr weights cannot change, but addresses and states can', () => {
    const prev = rendered({ backend: 'balance static-rr' });
    assert.match(
      reloadReasons(planDeployment(prev, rendered({ backend: 'balance static-rr', servers: s('server s1 10.0.0.1:80 weight 3', 'server s2 10.0.0.2:80') }))).join('\n'),
      /uses balance static-rr, whose server weights cannot change at runtime/,
    );
    const moved = rendered({ backend: 'balance static-rr', servers: s('server s1 10.0.0.7:80 disabled', 'server s2 10.0.0.2:80') });
    assert.deepEqual(runtimeOps(planDeployment(prev, moved)).map((op) => op.kind), ['server-state', 'server-addr']);
  });

  it('hashing needs hash-type consistent', () => {
    const add = s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80', 'server s3 10.0.0.3:80');
    const mapBased = 'balance source';
    assert.match(
      reloadReasons(planDeployment(rendered({ backend: mapBased }), rendered({ backend: mapBased, servers: add }))).join('\n'),
      /uses balance source with hash-type map-based, which cannot take dynamic servers/,
    );
    const consistent = 'balance hdr(host)\n    hash-type consistent';
    assert.equal(runtimeOps(planDeployment(rendered({ backend: consistent }), rendered({ backend: consistent, servers: add })))[0]?.kind, 'server-add');
  });

  for (const algorithm of ['leastconn', 'random', 'random(2)']) {
    it(`${algorithm} takes dynamic servers`, () => {
      const next = rendered({ backend: `balance ${algorithm}`, servers: s('server s1 10.0.0.1:80') });
      assert.equal(runtimeOps(planDeployment(rendered({ backend: `balance ${algorithm}` }), next))[0]?.kind, 'server-del');
    });
  }

  it('first needs explicit ids to add or remove servers', () => {
    const prev = rendered({ backend: 'balance first', servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80') });
    const next = rendered({ backend: 'balance first', servers: s('server s2 10.0.0.2:80') });
    assert.match(reloadReasons(planDeployment(prev, next)).join('\n'), /uses balance first and not every server has an "id"/);
    const prevIds = rendered({ backend: 'balance first', servers: s('server s1 10.0.0.1:80 id 1', 'server s2 10.0.0.2:80 id 2') });
    const nextIds = rendered({ backend: 'balance first', servers: s('server s2 10.0.0.2:80 id 2', 'server s3 10.0.0.3:80 id 3') });
    assert.deepEqual(runtimeOps(planDeployment(prevIds, nextIds)).map((op) => op.kind), ['server-add', 'server-del']);
  });

  it('deletes a server before adding one that takes its id', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80 id 1', 'server s2 10.0.0.2:80 id 2', 'server s3 10.0.0.3:80 id 3') });
    const next = rendered({ servers: s('server s1 10.0.0.1:80 id 1', 'server s4 10.0.0.4:80 id 2', 'server s5 10.0.0.5:80 id 9') });
    assert.deepEqual(
      runtimeOps(planDeployment(prev, next)).map((op) => `${op.kind} ${'server' in op ? op.server : ''}`),
      ['server-del s2', 'server-add s4', 'server-add s5', 'server-del s3'],
    );
  });

  it('an explicit id on an added server needs ids on every server', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80', 'server s2 10.0.0.2:80', 'server s3 10.0.0.3:80 id 3') });
    assert.match(reloadReasons(planDeployment(rendered(), next)).join('\n'), /server s3 cannot be added at runtime: its "id 3" may be taken by an id the running process assigned/);
  });

  it('a server whose other settings changed reloads', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80 maxconn 10', 'server s2 10.0.0.2:80') });
    assert.deepEqual(reloadReasons(planDeployment(rendered(), next)), [
      'backend be_web: server s1 changed in more than address, weight and state: "server s1 10.0.0.1:80" became "server s1 10.0.0.1:80 maxconn 10"',
    ]);
  });

  it('an address change from or to a name reloads', () => {
    const next = rendered({ servers: s('server s1 app.example:80', 'server s2 10.0.0.2:80') });
    assert.match(reloadReasons(planDeployment(rendered(), next)).join('\n'), /server s1 address "10.0.0.1:80" → "app.example:80" cannot change at runtime/);
  });

  it('deleting a server another server tracks reloads', () => {
    const prev = rendered({ servers: s('server s1 10.0.0.1:80 check', 'server s2 10.0.0.2:80 track s1', 'server s3 10.0.0.3:80') });
    const next = rendered({ servers: s('server s2 10.0.0.2:80 track s1', 'server s3 10.0.0.3:80') });
    assert.match(reloadReasons(planDeployment(prev, next)).join('\n'), /server s1 cannot be deleted at runtime: another server tracks it/);
  });

  it('a server declared twice reloads', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80', 'server s1 10.0.0.2:80') });
    assert.match(reloadReasons(planDeployment(rendered(), next)).join('\n'), /server s1 is declared twice in the new configuration/);
  });

  it('a default-server change reloads, even though only servers are affected', () => {
    const prev = rendered({ servers: s('default-server inter 2s', 'server s1 10.0.0.1:80') });
    const next = rendered({ servers: s('default-server inter 3s', 'server s1 10.0.0.1:80') });
    assert.deepEqual(reloadReasons(planDeployment(prev, next)), ['backend be_web: line "default-server inter 2s" changed to "default-server inter 3s"']);
  });
});

describe('planDeployment: maps', () => {
  const map = (text: string) => ({ 'hosts.map': text });

  it('adds, changes and deletes entries in place, in file order', () => {
    const prev = rendered({ maps: map('a.example be_web\nb.example be_web\nc.example be_web\n') });
    const next = rendered({ maps: map('a.example be_api\nc.example be_web\nd.example be_web\ne.example be web\n') });
    const target = { map: 'hosts.map', ref: 'maps/hosts.map' };
    assert.deepEqual(runtimeOps(planDeployment(prev, next)), [
      { kind: 'map-del', ...target, key: 'b.example' },
      { kind: 'map-set', ...target, key: 'a.example', value: 'be_api' },
      { kind: 'map-add', ...target, key: 'd.example', value: 'be_web' },
      { kind: 'map-add', ...target, key: 'e.example', value: 'be web' },
    ]);
  });

  // haproxy indexes exact (map, map_str), prefix (map_beg) and network (map_ip) lookups in
  // a tree: the longest match wins wherever the entry sits, so an added entry may go last.
  it('adds a key inserted before existing ones of a map read only through tree-indexed lookups', () => {
    const prev = rendered({ maps: map('a.example be_web\nb.example be_web\n') });
    const next = rendered({ maps: map('a.example be_web\nnew.example be_web\nb.example be_web\n') });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)).map((op) => op.kind), ['map-add']);
  });

  it('needs nothing at runtime when such a map is only reordered', () => {
    const prev = rendered({ maps: map('a.example be_web\nb.example be_web\n') });
    const next = rendered({ maps: map('b.example be_web\na.example be_web\n') });
    assert.deepEqual(planDeployment(prev, next), { kind: 'none' });
  });

  const ordered = (content: string) =>
    rendered({ maps: { ...map('a.example be_web\n'), 'order.map': content }, extra: 'frontend fe2\n    bind 127.0.0.1:8081\n    http-request set-var(txn.r) path,map_reg(maps/order.map,none)' });

  it('replaces the whole map when entries are reordered, where lookups go in file order (map_reg)', () => {
    const ops = runtimeOps(planDeployment(ordered('^/a one\n^/b two\n'), ordered('^/b two\n^/a one\n')));
    assert.equal(ops.length, 1);
    const op = ops[0]!;
    assert.equal(op.kind, 'map-replace');
    assert.deepEqual(op.kind === 'map-replace' && op.entries.map((e) => e.key), ['^/b', '^/a']);
  });

  it('replaces the whole map when a key is inserted before existing ones, where lookups go in file order', () => {
    assert.deepEqual(runtimeOps(planDeployment(ordered('^/a one\n^/b two\n'), ordered('^/a one\n^/n new\n^/b two\n'))).map((op) => op.kind), ['map-replace']);
  });

  it('replaces the whole map when keys repeat', () => {
    const prev = rendered({ maps: map('a.example be_web\na.example be_api\n') });
    const next = rendered({ maps: map('a.example be_web\na.example be_api\nb.example be_web\n') });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)).map((op) => op.kind), ['map-replace']);
  });

  it('replaces the whole map when a key set or deleted starts with #', () => {
    const prev = rendered({ maps: map('a.example be_web\n  #x be_web\n') });
    const next = rendered({ maps: map('a.example be_web\n  #x be_api\n') });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)).map((op) => op.kind), ['map-replace']);
  });

  it('reloads when an entry to write has no value', () => {
    const prev = rendered({ maps: map('a.example be_web\n') });
    const next = rendered({ maps: map('a.example be_web\nb.example\n') });
    assert.deepEqual(reloadReasons(planDeployment(prev, next)), [
      'map hosts.map changed, but line 2 (key "b.example") has no value, which the runtime API cannot set',
    ]);
  });

  it('a new or removed map reloads', () => {
    const prev = rendered();
    const next = rendered({ maps: { 'hosts.map': 'a.example be_web\nb.example be_web\n', 'paths.map': '/ be_web\n' } });
    assert.deepEqual(reloadReasons(planDeployment(prev, next)), ['map paths.map is new']);
    assert.deepEqual(reloadReasons(planDeployment(next, prev)), ['map paths.map was removed']);
  });

  it('uses the spelling the configuration loads the map under', () => {
    const extra = 'backend be_x\n    http-request set-var(txn.p) path,map_beg(./maps/paths.map,none)';
    const prev = rendered({ extra, maps: { 'hosts.map': 'a.example be_web\nb.example be_web\n', 'paths.map': '/a x\n' } });
    const next = rendered({ extra, maps: { 'hosts.map': 'a.example be_web\nb.example be_web\n', 'paths.map': '/a x\n/b y\n' } });
    assert.deepEqual(runtimeOps(planDeployment(prev, next)), [{ kind: 'map-add', map: 'paths.map', ref: './maps/paths.map', key: '/b', value: 'y' }]);
  });

  it('reloads for a map loaded under two spellings, or used as a pattern file', () => {
    const twice = 'backend be_x\n    http-request set-var(txn.p) req.hdr(host),map(./maps/hosts.map)';
    const next = (extra: string) => rendered({ extra, maps: map('a.example be_web\n') });
    assert.match(
      reloadReasons(planDeployment(rendered({ extra: twice }), next(twice))).join('\n'),
      /map hosts.map changed, but haproxy loads it as several maps \(\.\/maps\/hosts.map, maps\/hosts.map\)/,
    );
    const acl = 'backend be_x\n    http-request deny if { req.hdr(host) -M -f maps/hosts.map }';
    assert.match(reloadReasons(planDeployment(rendered({ extra: acl }), next(acl))).join('\n'), /it is also loaded other than as a map/);
  });
});

describe('planDeployment: reloads', () => {
  it('nothing deployed yet reloads, and lists drains to apply afterwards', () => {
    const next = rendered({ servers: s('server s1 10.0.0.1:80 # haprx:drain', 'server s2 10.0.0.2:80') });
    assert.deepEqual(planDeployment(undefined, next), {
      kind: 'reload',
      reasons: ['nothing is deployed yet'],
      after: [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'drain' }],
    });
  });

  it('a reload keeps drains in after, and drops the runtime ops it makes moot', () => {
    const next = rendered({ global: 'maxconn 2000', servers: s('server s1 10.0.0.1:80 # haprx:drain', 'server s3 10.0.0.3:80') });
    const plan = planDeployment(rendered(), next);
    assert.deepEqual(plan, {
      kind: 'reload',
      reasons: ['global: line "maxconn 1000" changed to "maxconn 2000"'],
      after: [{ kind: 'server-state', backend: 'be_web', server: 's1', state: 'drain' }],
    });
  });

  it('names added and removed lines of a section', () => {
    const prev = rendered({ backend: 'balance roundrobin\n    timeout server 5s' });
    const next = rendered({ backend: 'balance roundrobin\n    option httpchk' });
    assert.deepEqual(reloadReasons(planDeployment(prev, next)), ['backend be_web: line "timeout server 5s" changed to "option httpchk"']);
    const more = rendered({ backend: 'balance roundrobin\n    timeout server 5s\n    option httpchk' });
    assert.deepEqual(reloadReasons(planDeployment(prev, more)), ['backend be_web: line "option httpchk" added']);
    assert.deepEqual(reloadReasons(planDeployment(more, prev)), ['backend be_web: line "option httpchk" removed']);
  });

  it('a new, removed or reordered section reloads', () => {
    const extra = 'backend be_new\n    server n1 10.9.0.1:80';
    assert.deepEqual(reloadReasons(planDeployment(rendered(), rendered({ extra }))), ['backend be_new is new']);
    assert.deepEqual(reloadReasons(planDeployment(rendered({ extra }), rendered())), ['backend be_new was removed']);
    const two = 'backend be_a\nbackend be_b';
    const swapped = 'backend be_b\nbackend be_a';
    assert.deepEqual(reloadReasons(planDeployment(rendered({ extra: two }), rendered({ extra: swapped }))), ['the order of sections changed']);
  });

  it('a changed section header reloads', () => {
    const prev = rendered({ extra: 'defaults d2\n    mode tcp\nbackend be_t' });
    const next = rendered({ extra: 'defaults d2\n    mode tcp\nbackend be_t from d2' });
    assert.deepEqual(reloadReasons(planDeployment(prev, next)), ['backend be_t: header "backend be_t" changed to "backend be_t from d2"']);
  });

  it('certificates and general files reload', () => {
    const prev = rendered({ certs: { 'site.pem': 'A' }, files: { '503.http': 'x' } });
    assert.deepEqual(reloadReasons(planDeployment(prev, rendered({ certs: { 'site.pem': 'B' }, files: { '503.http': 'x' } }))), ['certificate site.pem changed']);
    assert.deepEqual(reloadReasons(planDeployment(prev, rendered({ certs: { 'site.pem': 'A', 'api.pem': 'C' }, files: { '503.http': 'x' } }))), ['certificate api.pem is new']);
    assert.deepEqual(reloadReasons(planDeployment(prev, rendered({ certs: { 'site.pem': 'A' }, files: {} }))), ['file 503.http was removed']);
  });

  it('replaces a renewed certificate at runtime; a new or removed one, a crt-list, a CA file or an empty line in it reloads', () => {
    const pair = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nK${body}\n-----END PRIVATE KEY-----\n`;
    const ca = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;
    const prev = rendered({ certs: { 'site.pem': pair('A'), 'api.pem': pair('C'), 'https.crtlist': 'ssl/site.pem site.example\n', 'ca.pem': ca('X') } });
    const renewed = planDeployment(prev, rendered({ certs: { 'site.pem': pair('B'), 'api.pem': pair('D'), 'https.crtlist': 'ssl/site.pem site.example\n', 'ca.pem': ca('X') } }));
    assert.deepEqual(renewed, {
      kind: 'runtime',
      ops: [
        { kind: 'cert-set', cert: 'api.pem', ref: 'ssl/api.pem', content: pair('D').trimEnd() },
        { kind: 'cert-set', cert: 'site.pem', ref: 'ssl/site.pem', content: pair('B').trimEnd() },
      ],
    });
    const others = planDeployment(prev, rendered({ certs: { 'site.pem': `${pair('B')}\n\n# note\n`, 'new.pem': pair('N'), 'https.crtlist': 'ssl/site.pem site.example\nssl/new.pem new.example\n', 'ca.pem': ca('Y') } }));
    assert.deepEqual(reloadReasons(others), ['certificate api.pem was removed', 'certificate ca.pem changed', 'certificate https.crtlist changed', 'certificate new.pem is new', 'certificate site.pem changed']);
    // With a section that reloads, the renewal goes with the reload.
    const both = planDeployment(prev, rendered({ global: 'maxconn 2000', certs: { 'site.pem': pair('B'), 'api.pem': pair('C'), 'https.crtlist': 'ssl/site.pem site.example\n', 'ca.pem': ca('X') } }));
    assert.deepEqual(reloadReasons(both), ['global: line "maxconn 1000" changed to "maxconn 2000"']);
  });

  describe('a crt-list', () => {
    const pair = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nK${body}\n-----END PRIVATE KEY-----\n`;
    const https = 'frontend https\n    bind 127.0.0.1:8443 ssl crt-list ssl/https.crtlist';
    const withList = (lines: string[], certs: Record<string, string>, extra = https) => rendered({ extra, certs: { ...certs, 'https.crtlist': lines.map((l) => `${l}\n`).join('') } });
    const base = withList(['ssl/a.pem a.example', 'ssl/c.pem c.example www.c.example'], { 'a.pem': pair('A'), 'c.pem': pair('C') });

    it('takes a new certificate and its line at runtime; a removed one goes after everything else', () => {
      const added = planDeployment(base, withList(['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example www.c.example'], { 'a.pem': pair('A'), 'b.pem': pair('B'), 'c.pem': pair('C') }));
      assert.deepEqual(runtimeOps(added), [
        { kind: 'cert-new', cert: 'b.pem', ref: 'ssl/b.pem', content: pair('B').trimEnd() },
        { kind: 'crt-list-add', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'b.pem', entry: 'ssl/b.pem b.example' },
      ]);
      const removed = planDeployment(base, withList(['ssl/a.pem a.example'], { 'a.pem': pair('A') }));
      assert.deepEqual(runtimeOps(removed), [
        { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'c.pem', certRef: 'ssl/c.pem' },
        { kind: 'cert-del', cert: 'c.pem', ref: 'ssl/c.pem' },
      ]);
      // A certificate another line keeps loaded stays; one already loaded is not loaded again.
      const two = `${https}\nfrontend other\n    bind 127.0.0.1:9443 ssl crt-list ssl/other.crtlist`;
      const lists = (mine: string, other: string) => rendered({ extra: two, certs: { 'a.pem': pair('A'), 'c.pem': pair('C'), 'https.crtlist': mine, 'other.crtlist': other } });
      const moved = planDeployment(lists('ssl/a.pem a.example\nssl/c.pem c.example\n', 'ssl/c.pem c.example\n'), lists('ssl/a.pem a.example\n', 'ssl/c.pem c.example\nssl/a.pem other.example\n'));
      assert.deepEqual(runtimeOps(moved), [
        { kind: 'crt-list-add', list: 'other.crtlist', listRef: 'ssl/other.crtlist', cert: 'a.pem', entry: 'ssl/a.pem other.example' },
        { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'c.pem', certRef: 'ssl/c.pem' },
      ]);
      // Hosts added to or removed from a certificate's line (a shared Secret): the new line first, the old one last, by its text.
      const edited = planDeployment(base, withList(['ssl/a.pem a.example', 'ssl/c.pem c.example shop.c.example'], { 'a.pem': pair('A'), 'c.pem': pair('C') }));
      assert.deepEqual(runtimeOps(edited), [
        { kind: 'crt-list-add', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'c.pem', entry: 'ssl/c.pem c.example shop.c.example' },
        { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'c.pem', certRef: 'ssl/c.pem', entry: 'ssl/c.pem c.example www.c.example' },
      ]);
      // A renewal and a new line of another certificate go together, the renewal first.
      const both = planDeployment(base, withList(['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example www.c.example'], { 'a.pem': pair('A2'), 'b.pem': pair('B'), 'c.pem': pair('C') }));
      assert.deepEqual(runtimeOps(both).map((op) => `${op.kind} ${'cert' in op ? op.cert : ''}`), ['cert-set a.pem', 'cert-new b.pem', 'crt-list-add b.pem']);
    });

    it('reloads where haproxy would serve other certificates than a fresh start would', () => {
      // The certificates the lines name, as the template writes them.
      const next = (lines: string[], certs: Record<string, string> = {}) =>
        withList(lines, { ...Object.fromEntries(['a', 'b', 'c'].filter((n) => lines.some((l) => l.startsWith(`ssl/${n}.pem`))).map((n) => [`${n}.pem`, pair(n.toUpperCase())])), ...certs });
      const cases: [string[], string, Record<string, string>?][] = [
        // The first line's certificate is the one served without SNI, or for names no line has.
        [['ssl/b.pem b.example', 'ssl/a.pem a.example', 'ssl/c.pem c.example www.c.example'], 'crt-list https.crtlist: its first line, whose certificate is served when no name matches, changed'],
        // A certificate on two lines: haproxy deletes one of them by a line number of its own.
        [['ssl/a.pem a.example', 'ssl/c.pem c.example www.c.example', 'ssl/c.pem d.example'], 'crt-list https.crtlist: the line of ssl/c.pem changed'],
        // The first line's names are the first line.
        [['ssl/a.pem a.example www.a.example', 'ssl/c.pem c.example www.c.example'], 'crt-list https.crtlist: its first line, whose certificate is served when no name matches, changed'],
        // Names two lines ask for: which certificate a name gets would depend on the order of the lines.
        [['ssl/a.pem a.example', 'ssl/b.pem c.example', 'ssl/c.pem c.example www.c.example'], 'crt-list https.crtlist: c.example is on two lines'],
        // Without names, a line serves the names in its certificate, which the plan does not read.
        [['ssl/a.pem a.example', 'ssl/b.pem', 'ssl/c.pem c.example www.c.example'], 'crt-list https.crtlist: ssl/b.pem has no SNI filter, so it serves the names in its certificate'],
        [['ssl/a.pem a.example', 'ssl/b.pem !x.example b.example', 'ssl/c.pem c.example www.c.example'], 'crt-list https.crtlist: ssl/b.pem has a negative SNI filter'],
        [['ssl/a.pem a.example', 'ssl/b.pem [verify optional ca-file ssl/ca.pem] b.example', 'ssl/c.pem c.example www.c.example'], 'crt-list https.crtlist: ssl/b.pem has options'],
        [['ssl/a.pem a.example', 'ssl/c.pem c.example www.c.example', '/etc/ssl/z.pem z.example'], 'crt-list https.crtlist: /etc/ssl/z.pem is not a certificate of this configuration'],
        [['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem c.example www.c.example'], 'certificate b.pem is not a certificate with its key in one PEM file without empty lines', { 'b.pem': `${pair('B')}\n\n# note\n` }],
      ];
      for (const [lines, reason, certs] of cases) {
        // A certificate the refused line would have loaded is new on its own, too.
        const [first, ...more] = reloadReasons(planDeployment(base, next(lines, certs)));
        assert.equal(first, reason, lines.join(' | '));
        assert.ok(more.every((r) => /^certificate [a-z]\.pem is new$/.test(r)), more.join(', '));
      }
      // A line without names stays: the names in its certificate may be the new line's too.
      const unnamed = withList(['ssl/a.pem a.example', 'ssl/c.pem'], { 'a.pem': pair('A'), 'c.pem': pair('C') });
      const beside = withList(['ssl/a.pem a.example', 'ssl/b.pem b.example', 'ssl/c.pem'], { 'a.pem': pair('A'), 'b.pem': pair('B'), 'c.pem': pair('C') });
      assert.equal(reloadReasons(planDeployment(unnamed, beside))[0], 'crt-list https.crtlist: ssl/c.pem has no SNI filter, so it serves the names in its certificate');
      // A certificate on two lines: haproxy deletes one of them by a line number of its own.
      const twice = withList(['ssl/a.pem a.example', 'ssl/c.pem c.example', 'ssl/c.pem www.c.example'], { 'a.pem': pair('A'), 'c.pem': pair('C') });
      assert.deepEqual(reloadReasons(planDeployment(twice, withList(['ssl/a.pem a.example'], { 'a.pem': pair('A') }))), ['crt-list https.crtlist: the line of ssl/c.pem changed', 'certificate c.pem was removed']);
      // A certificate no longer named anywhere is removed; one that is new without a line to load it reloads.
      assert.deepEqual(reloadReasons(planDeployment(base, withList(['ssl/a.pem a.example', 'ssl/c.pem c.example www.c.example'], { 'a.pem': pair('A'), 'c.pem': pair('C'), 'x.pem': pair('X') }))), ['certificate x.pem is new']);
      // A crt-list no bind line names is a file like any other.
      const unbound = (lines: string[]) => withList(lines, { 'a.pem': pair('A'), 'b.pem': pair('B') }, 'frontend https\n    bind 127.0.0.1:8443');
      assert.deepEqual(reloadReasons(planDeployment(unbound(['ssl/a.pem a.example']), unbound(['ssl/a.pem a.example', 'ssl/b.pem b.example']))), ['certificate https.crtlist changed']);
    });
  });

  it('an unreadable configuration reloads', () => {
    const next = rendered({ backend: 'balance roundrobin\n    http-request set-header X "unterminated' });
    assert.match(reloadReasons(planDeployment(rendered(), next)).join('\n'), /the new haproxy.cfg cannot be read at line \d+: unterminated double quote/);
  });

  it('collects every reason, not just the first', () => {
    const next = rendered({ global: 'maxconn 2000', certs: { 'site.pem': 'B' }, maps: { 'hosts.map': 'a.example be_web\n', 'new.map': 'k v\n' } });
    assert.deepEqual(reloadReasons(planDeployment(rendered({ certs: { 'site.pem': 'A' } }), next)), [
      'certificate site.pem changed',
      'map new.map is new',
      'global: line "maxconn 1000" changed to "maxconn 2000"',
    ]);
  });
});

describe('planDeployment: a reload that is certain', () => {
  it('does not work out how a changed map would be updated at runtime once a section calls for a reload', () => {
    // An entry with no value cannot be set at runtime: alone, that is a reason of its own.
    const prev = rendered();
    const emptyValue = { 'hosts.map': 'a.example be_web\nb.example\n' };
    assert.deepEqual(reloadReasons(planDeployment(prev, rendered({ maps: emptyValue }))), ['map hosts.map changed, but line 2 (key "b.example") has no value, which the runtime API cannot set']);
    assert.deepEqual(reloadReasons(planDeployment(prev, rendered({ maps: emptyValue, extra: 'backend be_new\n    server s1 10.0.0.9:80' }))), ['backend be_new is new']);
  });
});

describe('planDeployment: large configurations', () => {
  const big = (servers: (i: number) => string) => {
    const backends = Array.from({ length: 2_000 }, (_, i) => `backend be_${i}\n    balance roundrobin\n${servers(i)}\n`);
    return sealRendered({ main: `global\n    maxconn 100\ndefaults\n    mode http\n    timeout connect 1s\n${backends.join('')}`, maps: {}, files: {}, certs: {} });
  };
  const tokenized = (config: RenderedConfig) => configOf(config).sections.filter((s) => (s as unknown as { tokenized: boolean }).tokenized).map((s) => `${s.type} ${s.name}`.trim());

  it('reads only the sections whose text changed (and the defaults they inherit)', () => {
    const prev = big((i) => `    server s1 10.0.${i >> 8}.${i & 255}:80`);
    const next = big((i) => `    server s1 10.0.${i >> 8}.${i & 255}:80${i === 1234 ? '\n    server s2 10.9.9.9:80' : ''}`);
    assert.deepEqual(runtimeOps(planDeployment(prev, next)).map((op) => [op.kind, 'backend' in op ? `${op.backend}/${op.server}` : '']), [['server-add', 'be_1234/s2']]);
    assert.deepEqual(tokenized(next), ['defaults', 'backend be_1234']);
    assert.deepEqual(tokenized(prev), ['defaults', 'backend be_1234']);
  });

  it('reads each configuration once however many plans start from it', () => {
    const prev = big((i) => `    server s1 10.0.${i >> 8}.${i & 255}:80`);
    const next = big((i) => `    server s1 10.0.${i >> 8}.${i & 255}:${i === 7 ? 81 : 80}`);
    assert.equal(configOf(prev), configOf(prev));
    const first = planDeployment(prev, next);
    assert.deepEqual(planDeployment(prev, next), first);
    assert.deepEqual(runtimeOps(first), [{ kind: 'server-addr', backend: 'be_7', server: 's1', host: '10.0.0.7', port: 81 }]);
  });
});

describe('planEdits: a chain of edits of server lines', () => {
  /** `config` with the server lines of `backend` replaced by `lines`, sealed, and the edit that made it. */
  function edit(config: RenderedConfig, backend: string, lines: string) {
    const header = config.main.indexOf(`backend ${backend}\n`);
    const start = config.main.indexOf('    server', header);
    const next = config.main.indexOf('\nbackend ', start);
    const e = { start, end: next < 0 ? config.main.length : next + 1, text: lines };
    return { config: sealEdited(config, [e]), edits: [e] };
  }
  const base = () => rendered({ servers: s('server s1 10.0.0.1:80 check', 'server s2 10.0.0.2:80'), extra: 'backend be_other\n    server t1 10.0.1.1:80 track be_web/s1\n    server t2 10.0.1.2:80' });

  it('knows what each configuration of the chain tracks: a track removed frees its server, a track added holds one', () => {
    const c0 = base();
    assert.match(reloadReasons(planEdits(c0, edit(c0, 'be_web', s('server s2 10.0.0.2:80') + '\n').config, edit(c0, 'be_web', s('server s2 10.0.0.2:80') + '\n').edits)).join('\n'), /s1 cannot be deleted at runtime: another server tracks it/);
    // The server that tracks s1 goes: s1 may go next.
    const c1 = edit(c0, 'be_other', `${s('server t2 10.0.1.2:80')}\n`);
    assert.deepEqual(runtimeOps(planEdits(c0, c1.config, c1.edits)).map((op) => op.kind), ['server-del']);
    const c2 = edit(c1.config, 'be_web', `${s('server s2 10.0.0.2:80')}\n`);
    assert.deepEqual(runtimeOps(planEdits(c1.config, c2.config, c2.edits)).map((op) => op.kind), ['server-del']);
    // A server added with a track of s2 (refused at runtime itself) is in what c3 tracks once applied by a reload.
    const c3 = edit(c2.config, 'be_other', `${s('server t2 10.0.1.2:80', 'server t3 10.0.1.3:80 track be_web/s2')}\n`);
    assert.match(reloadReasons(planEdits(c2.config, c3.config, c3.edits)).join('\n'), /it uses "track"/);
    const c4 = edit(c3.config, 'be_web', `${s('server s9 10.0.0.9:80')}\n`);
    assert.match(reloadReasons(planEdits(c3.config, c4.config, c4.edits)).join('\n'), /s2 cannot be deleted at runtime: another server tracks it/);
  });
});
