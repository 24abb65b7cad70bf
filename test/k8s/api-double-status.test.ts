/**
 * The API server double treats status as a real API server does (the status writer
 * depends on it): `/status` is a subresource whose writes change status only, the
 * main resource ignores status, metadata.generation moves with the spec alone, and a
 * merge patch naming a stale resourceVersion is a conflict.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { KubeApi } from '../../src/k8s/api.ts';
import { KubeApiDouble, type Obj } from '../support/kube-api-double/index.ts';
import { apiFor } from './helpers.ts';

const GW = 'gateway.networking.k8s.io/v1';
const ref = { apiVersion: GW, resource: 'httproutes', namespace: 'shop', name: 'web' };
const patch = (api: KubeApi, body: unknown, subresource?: 'status') =>
  api.request<Obj>('PATCH', { ...ref, ...(subresource && { subresource }) }, { body, contentType: 'application/merge-patch+json' });

let double: KubeApiDouble;
let api: KubeApi;
beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
  api = apiFor(double);
  double.create(GW, 'httproutes', { metadata: { name: 'web', namespace: 'shop' }, spec: { hostnames: ['a.example'] } });
});
afterEach(() => double.stop());

describe('the API server double, for status', () => {
  it('ignores status on the main resource, and bumps generation for a spec change only', async () => {
    const created = double.get(GW, 'httproutes', 'shop', 'web')!;
    assert.equal(created.metadata.generation, 1);
    const spec = await patch(api, { spec: { hostnames: ['b.example'] }, status: { parents: [] } });
    assert.ok(spec.ok);
    assert.equal(spec.body.metadata.generation, 2);
    assert.equal(spec.body.status, undefined, 'status through the main resource is dropped');
    const labels = await patch(api, { metadata: { labels: { team: 'shop' } } });
    assert.ok(labels.ok);
    assert.equal(labels.body.metadata.generation, 2, 'metadata is not the spec');
    assert.notEqual(labels.body.metadata.resourceVersion, spec.body.metadata.resourceVersion);
  });

  it('changes only status through /status, with generation unchanged; an equal write changes nothing', async () => {
    const parents = [{ parentRef: { name: 'edge' }, controllerName: 'haprx.io/gateway-controller', conditions: [] }];
    const written = await patch(api, { spec: { hostnames: ['evil.example'] }, status: { parents } }, 'status');
    assert.ok(written.ok);
    assert.deepEqual(written.body.status, { parents });
    assert.deepEqual(written.body.spec, { hostnames: ['a.example'] }, 'the spec through /status is dropped');
    assert.equal(written.body.metadata.generation, 1);
    const again = await patch(api, { status: { parents } }, 'status');
    assert.ok(again.ok);
    assert.equal(again.body.metadata.resourceVersion, written.body.metadata.resourceVersion, 'nothing changed, no new version');
    const cleared = await patch(api, { status: { parents: null } }, 'status');
    assert.ok(cleared.ok);
    assert.deepEqual(cleared.body.status, {}, 'null removes a field (JSON merge patch)');
  });

  it('refuses a merge patch naming a stale resourceVersion, and /status on a type without it', async () => {
    const rv = double.get(GW, 'httproutes', 'shop', 'web')!.metadata.resourceVersion;
    double.apply(GW, 'httproutes', { ...double.get(GW, 'httproutes', 'shop', 'web')!, metadata: { name: 'web', namespace: 'shop', labels: { x: 'y' } } });
    const stale = await patch(api, { metadata: { resourceVersion: rv }, status: { parents: [] } }, 'status');
    assert.equal(stale.ok, false);
    assert.equal(!stale.ok && stale.status, 409);
    double.create('v1', 'configmaps', { metadata: { name: 'c', namespace: 'shop' }, data: {} });
    const none = await api.request('PATCH', { apiVersion: 'v1', resource: 'configmaps', namespace: 'shop', name: 'c', subresource: 'status' }, { body: { status: {} }, contentType: 'application/merge-patch+json' });
    assert.equal(!none.ok && none.status, 404);
  });

  it('drops the status of an object created through the API, where status is a subresource', async () => {
    const created = await api.request<Obj>('POST', { apiVersion: GW, resource: 'httproutes', namespace: 'shop' }, { body: { metadata: { name: 'new' }, spec: {}, status: { parents: [{ controllerName: 'forged' }] } } });
    assert.ok(created.ok);
    assert.equal(created.body.status, undefined);
  });
});
