import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { firstValueFrom } from 'rxjs';
import { DataplaneTargets, dataplaneDeployTo } from '../../src/dataplane/deploy-to.ts';
import { DataplaneTarget, type DataplaneOutcome } from '../../src/dataplane/target.ts';
import type { Deployment } from '../../src/events.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { freePort } from '../support/ports.ts';
import { routingConfig } from './helpers.ts';

const AUTH = { username: 'admin', password: 'adminpwd' };

const deployment = (config: RenderedConfig): Deployment => ({
  reconcile: { seq: 1, cause: { reason: 'resources', changes: [] }, at: 0 },
  config,
  endpoints: [],
  reason: 'change',
  queuedAt: 0,
  id: 1,
  startedAt: 0,
});

describe('dataplaneDeployTo', () => {
  let double: DataplaneDouble;
  before(async () => {
    double = await startDataplaneDouble({ reloadDelayMs: 20 });
  });
  after(async () => {
    await double.stop();
  });

  test('deploys through the target the lookup gives, and reports its outcome', async () => {
    const target = new DataplaneTarget({ baseUrl: double.url, ...AUTH, reloadPollMs: 20 });
    const deployTo = dataplaneDeployTo(() => target);
    const outcome = await firstValueFrom(deployTo({ id: 'x', address: double.url }, deployment(routingConfig(await freePort(), { be: [] }, {}))));
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.reloaded, true);
    await target.close();
  });

  test('an endpoint without a target fails with a clear error', async () => {
    const outcome = await firstValueFrom(dataplaneDeployTo(() => undefined)({ id: 'ghost', address: 'http://127.0.0.1:1' }, deployment(routingConfig(1, {}, {}))));
    assert.deepEqual(outcome, { ok: false, reloaded: false, runtimeOps: 0, error: 'no Data Plane target for ghost' });
  });

  test('unsubscribing aborts the deployment in flight', async () => {
    const target = new DataplaneTarget({ baseUrl: double.url, ...AUTH });
    let settled: DataplaneOutcome | undefined;
    const original = target.deploy.bind(target);
    target.deploy = (config, signal) => original(config, signal).then((o) => (settled = o));
    double.faults.slow(3_000, { path: '/services/haproxy/configuration/version' }, 1);
    const subscription = dataplaneDeployTo(() => target)({ id: 'x', address: double.url }, deployment(routingConfig(await freePort(), { be: [] }, {}))).subscribe();
    await new Promise((r) => setTimeout(r, 200));
    const aborted = Date.now();
    subscription.unsubscribe();
    while (!settled && Date.now() - aborted < 2_000) await new Promise((r) => setTimeout(r, 10));
    assert.ok(settled, 'the target gave up at once');
    assert.equal(settled.ok, false);
    assert.match(settled.error ?? '', /aborted/);
    await target.close();
  });
});

describe('DataplaneTargets', () => {
  test('one target per endpoint, kept while its address stays, replaced when it moves, closed when it leaves', async () => {
    const targets = new DataplaneTargets(AUTH);
    const a = targets.lookup({ id: 'a', address: 'http://127.0.0.1:5555' })!;
    assert.equal(targets.lookup({ id: 'a', address: 'http://127.0.0.1:5555' }), a);
    assert.equal(a.origin, 'http://127.0.0.1:5555');
    const moved = targets.lookup({ id: 'a', address: 'http://127.0.0.1:5556' })!;
    assert.notEqual(moved, a);
    assert.equal(moved.origin, 'http://127.0.0.1:5556');
    const b = targets.lookup({ id: 'b', address: 'http://127.0.0.1:5557' })!;
    await targets.retire([{ id: 'b', address: 'http://127.0.0.1:5557' }]);
    assert.notEqual(targets.lookup({ id: 'a', address: 'http://127.0.0.1:5556' }), moved, 'a was retired');
    assert.equal(targets.lookup({ id: 'b', address: 'http://127.0.0.1:5557' }), b);
    await targets.close();
  });
});
