/** The Ingress status writer against the API server double: what it remembers stays bounded by what awaits an echo. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { IngressStatusWriter } from '../../src/k8s/ingress-status.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { apiFor, until } from './helpers.ts';

let double: KubeApiDouble;
let writer: IngressStatusWriter | undefined;
beforeEach(async () => {
  double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
});
afterEach(async () => {
  writer?.stop();
  await double.stop();
});

const ingress = (name: string): KubeObject => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'apps' }, spec: {} });
const stored = (name: string) => double.get('networking.k8s.io/v1', 'ingresses', 'apps', name) as KubeObject;

describe('IngressStatusWriter', () => {
  it('forgets a write once its echo arrives, and the writes for Ingresses that are gone', async () => {
    const names = Array.from({ length: 100 }, (_, i) => `web-${i}`);
    for (const name of names) double.create('networking.k8s.io/v1', 'ingresses', ingress(name));
    writer = new IngressStatusWriter(apiFor(double), { ingressSets: new Set(['ingresses']) });
    writer.setLeader(true);
    writer.setAddresses([{ ip: '203.0.113.10' }]);
    writer.onChange({ type: 'replace', resource: 'ingresses', objects: names.map(stored) });
    await until('every status written', () => writer!.writes === 100, 10_000);
    assert.equal(writer.awaitingEcho, 100, 'each write waits for its echo');
    // The echoes of half of them, through the watch; the other half are deleted.
    for (const name of names.slice(0, 50)) writer.onChange({ type: 'upsert', resource: 'ingresses', object: stored(name) });
    for (const name of names.slice(50)) writer.onChange({ type: 'delete', resource: 'ingresses', object: stored(name) });
    await until('nothing awaiting an echo', () => writer!.awaitingEcho === 0, 5_000);
    assert.equal(writer.writes, 100, 'no write repeated');
  });
});
