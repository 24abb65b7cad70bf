/**
 * The kustomize base in k8s/base, checked statically: the RBAC grants every
 * call `haprx run` makes, for the sets the shipped templates watch.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';

const root = new URL('../../', import.meta.url);
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
type Doc = { kind: string; metadata: { name: string }; rules?: Rule[]; spec?: unknown };

async function docs(path: string): Promise<Doc[]> {
  return parseAllDocuments(await readFile(new URL(path, root), 'utf8')).map((d) => d.toJS() as Doc);
}

const allows = (rules: Rule[], group: string, resource: string, verb: string) =>
  rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));

describe('k8s/base manifests', () => {
  it('let haprx run read its configuration, credentials, pods and Service, hold the Lease in its namespace, and write Events', async () => {
    const rbac = await docs('k8s/base/rbac.yaml');
    const role = rbac.find((d) => d.kind === 'Role')!;
    const clusterRole = rbac.find((d) => d.kind === 'ClusterRole')!;
    const needed: [string, string, string[]][] = [
      ['', 'configmaps', ['list', 'watch']],
      ['', 'secrets', ['list', 'watch']],
      ['', 'pods', ['list', 'watch']],
      ['', 'services', ['list', 'watch']],
      ['coordination.k8s.io', 'leases', ['get', 'create', 'update']],
    ];
    for (const [group, resource, verbs] of needed) for (const verb of verbs) assert.ok(allows(role.rules!, group, resource, verb), `${verb} ${resource}.${group}`);
    // Events go to the namespace of the object they are about: anywhere.
    for (const verb of ['create', 'update', 'get']) assert.ok(allows(clusterRole.rules!, 'events.k8s.io', 'events', verb), `${verb} events`);
  });

  it('let haprx run list and watch every set the shipped templates watch (get and watch for one held on demand by name), and patch the status they declare', async () => {
    const clusterRole = (await docs('k8s/base/rbac.yaml')).find((d) => d.kind === 'ClusterRole')!;
    type Watched = { apiVersion: string; resource: string; labelSelector?: string; referencedBy?: unknown[] };
    const watched = (parse(await readFile(new URL('templates/haprx.yaml', root), 'utf8')) as { watch: Watched[] }).watch;
    for (const w of watched) {
      const group = w.apiVersion.includes('/') ? w.apiVersion.split('/')[0]! : '';
      const byName = (w.referencedBy?.length ?? 0) > 0 && w.labelSelector === undefined;
      for (const verb of byName ? ['get', 'watch'] : ['list', 'watch']) assert.ok(allows(clusterRole.rules!, group, w.resource, verb), `${verb} ${w.resource}.${group}`);
    }
    for (const [group, resource] of [['networking.k8s.io', 'ingresses'], ['gateway.networking.k8s.io', 'gatewayclasses'], ['gateway.networking.k8s.io', 'gateways'], ['gateway.networking.k8s.io', 'httproutes']]) {
      assert.ok(allows(clusterRole.rules!, group!, `${resource}/status`, 'patch'), `patch ${resource}/status`);
    }
  });

  it('run the controller with the variables it reads and a grace period above its drain bound', async () => {
    const [deployment] = await docs('k8s/base/deployment.yaml');
    const pod = (deployment!.spec as { template: { spec: { terminationGracePeriodSeconds: number; serviceAccountName: string; containers: { env: { name: string }[] }[] } } }).template.spec;
    const env = pod.containers[0]!.env.map((e) => e.name);
    assert.ok(env.includes('HAPRX_NAMESPACE') && env.includes('POD_NAME'));
    assert.ok(pod.terminationGracePeriodSeconds > 20);
    assert.equal(pod.serviceAccountName, 'haprx');
    const run = await readFile(new URL('src/cli/run.ts', root), 'utf8');
    for (const name of ['HAPRX_NAMESPACE', 'POD_NAME']) assert.ok(run.includes(name), `run.ts reads ${name}`);
  });
});
