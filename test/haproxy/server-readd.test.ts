import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServerAddOp } from '../../src/haproxy/plan-types.ts';
import { readdOps } from '../../src/haproxy/server-readd.ts';

const add = (over: Partial<ServerAddOp> = {}): ServerAddOp => ({
  kind: 'server-add',
  backend: 'be',
  server: 's1',
  address: '10.0.0.7:8080',
  args: ['maxconn', '10'],
  state: 'ready',
  health: false,
  agent: false,
  ...over,
});
const ref = { backend: 'be', server: 's1' };

describe('readdOps', () => {
  it('re-points the server, sets its weight, then lets traffic in', () => {
    assert.deepEqual(readdOps({ settings: ['maxconn', '10'] }, add()), {
      ops: [
        { kind: 'server-addr', ...ref, host: '10.0.0.7', port: 8080 },
        { kind: 'server-weight', ...ref, weight: 1 },
        { kind: 'server-state', ...ref, state: 'ready' },
      ],
    });
  });

  it('takes the weight the add carries, and the drain state', () => {
    const result = readdOps({ settings: ['maxconn', '10'] }, add({ args: ['maxconn', '10', 'weight', '30'], state: 'drain', address: '[::1]:81' }));
    assert.deepEqual(result, {
      ops: [
        { kind: 'server-addr', ...ref, host: '::1', port: 81 },
        { kind: 'server-weight', ...ref, weight: 30 },
        { kind: 'server-state', ...ref, state: 'drain' },
      ],
    });
  });

  it('leaves a server wanted in maintenance where it is', () => {
    const result = readdOps({ settings: [] }, add({ args: [], state: 'maint' }));
    assert.ok('ops' in result);
    assert.deepEqual(result.ops.map((o) => o.kind), ['server-addr', 'server-weight']);
  });

  it('refuses when the settings differ, are unknown, or the server has an agent or no port', () => {
    const reason = (r: ReturnType<typeof readdOps>) => ('reason' in r ? r.reason : 'taken back');
    assert.match(reason(readdOps({ settings: ['maxconn', '20'] }, add())), /settings differ/);
    assert.match(reason(readdOps({ settings: ['maxconn', '10', 'check'] }, add())), /settings differ/);
    assert.match(reason(readdOps({ settings: [] }, add())), /settings differ/);
    assert.match(reason(readdOps({}, add())), /unknown/);
    assert.match(reason(readdOps({ settings: ['maxconn', '10'] }, add({ agent: true }))), /agent/);
    assert.match(reason(readdOps({ settings: ['maxconn', '10'] }, add({ address: '10.0.0.7' }))), /no port/);
  });
});
