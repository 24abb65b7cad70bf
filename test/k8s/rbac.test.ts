/**
 * The shipped RBAC (k8s/base/rbac.yaml) against what `haprx run` really does: the
 * in-cluster controller with the shipped templates runs against the API server
 * double, leads, deploys, writes status and records Events, and every request the
 * double saw must be one the ClusterRole (anywhere) or the Role (in the controller's
 * namespace) grants.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { KubeApiDouble, type RequestRecord } from '../support/kube-api-double/index.ts';
import { NS, type TestController, startController } from './cluster-fixture.ts';
import { until } from './helpers.ts';
import { GW, conditionOf, parentSummary, seedStatusCluster, statusOf } from './status-fixture.ts';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };

/** The verb, group, resource (with its subresource) and namespace of a request, as RBAC sees it. */
export function rbacRequest(r: RequestRecord): { verb: string; group: string; resource: string; namespace?: string } {
  const parts = r.path.split('/').filter(Boolean).map(decodeURIComponent);
  const [group, rest] = parts[0] === 'api' ? ['', parts.slice(2)] : [parts[1]!, parts.slice(3)];
  const namespace = rest[0] === 'namespaces' && rest.length > 2 ? rest[1] : undefined;
  const [resource, name, sub] = namespace !== undefined ? rest.slice(2) : rest;
  const verbs: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  const verb = r.method === 'GET' ? (name !== undefined ? 'get' : r.watch ? 'watch' : 'list') : verbs[r.method]!;
  return { verb, group, resource: sub ? `${resource}/${sub}` : resource!, ...(namespace !== undefined && { namespace }) };
}

const allows = (rules: Rule[], group: string, resource: string, verb: string) => rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));

let double: KubeApiDouble;
let controller: TestController;

describe('k8s/base/rbac.yaml', () => {
  before(async () => {
    double = await KubeApiDouble.start({ token: 'test-token', bookmarkIntervalMs: 0 });
    await seedStatusCluster(double);
    controller = startController(double, 'replica-a', [], { statusIntervalMs: 5 });
    await until('status and Events written', () => {
      const gw = statusOf(double, GW, 'gateways', 'shop', 'edge');
      const served = statusOf(double, 'networking.k8s.io/v1', 'ingresses', 'shop', 'mine').loadBalancer !== undefined;
      return served && conditionOf(gw.conditions, 'Programmed')?.status === 'True' && parentSummary(double, 'shop', 'bad').length > 0 && double.list('events.k8s.io/v1', 'events', 'shop').length > 0;
    }, 15_000);
  });
  after(async () => {
    await controller.running.stop();
    await double.stop();
  });

  it('grants every request haprx run made, and nothing it did was refused', async () => {
    const docs = parseAllDocuments(await readFile(new URL('../../k8s/base/rbac.yaml', import.meta.url), 'utf8')).map((d) => d.toJS() as { kind: string; rules?: Rule[] });
    const clusterRole = docs.find((d) => d.kind === 'ClusterRole')!.rules!;
    const role = docs.find((d) => d.kind === 'Role')!.rules!;
    const seen = new Set<string>();
    const refused: string[] = [];
    for (const r of double.requests) {
      const q = rbacRequest(r);
      const label = `${q.verb} ${q.resource}${q.group ? `.${q.group}` : ''}${q.namespace ? ` in ${q.namespace}` : ''}`;
      seen.add(label);
      const granted = allows(clusterRole, q.group, q.resource, q.verb) || (q.namespace === NS && allows(role, q.group, q.resource, q.verb));
      if (!granted) refused.push(label);
    }
    assert.deepEqual([...new Set(refused)], []);
    // What this run exercised: status of each kind, Events on objects and on the ConfigMap.
    for (const needed of ['patch gateways/status.gateway.networking.k8s.io in shop', 'patch httproutes/status.gateway.networking.k8s.io in shop', 'patch gatewayclasses/status.gateway.networking.k8s.io', 'patch ingresses/status.networking.k8s.io in shop', 'create events.events.k8s.io in shop']) {
      assert.ok(seen.has(needed), `${needed} (seen: ${[...seen].sort().join(', ')})`);
    }
  });
});
