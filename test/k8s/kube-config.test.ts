/**
 * The client configuration: in-cluster (service account token and CA, over TLS, to
 * the API server double serving HTTPS) and from a kubeconfig.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeApi, SERVICE_ACCOUNT_DIR, loadKubeConfig } from '../../src/k8s/api.ts';
import { listWatch } from '../../src/k8s/list-watch.ts';
import { type TestPki, makeTestPki } from '../support/dataplane-double/certs.ts';
import { KubeApiDouble } from '../support/kube-api-double/index.ts';
import { configMap, record, until } from './helpers.ts';

let pki: TestPki;
let double: KubeApiDouble;
let root: string;

before(async () => {
  pki = await makeTestPki();
  double = await KubeApiDouble.start({ token: 'sa-token', tls: pki.server });
  double.create('v1', 'configmaps', configMap('cm', {}, 'team'));
  root = await mkdtemp(join(tmpdir(), 'haprx-sa-'));
  const dir = join(root, SERVICE_ACCOUNT_DIR);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'token'), 'sa-token');
  await writeFile(join(dir, 'ca.crt'), pki.ca);
  await writeFile(join(dir, 'namespace'), 'team\n');
});
after(async () => {
  await double.stop();
  await rm(root, { recursive: true, force: true });
});

/** Runs `fn` with the variables a pod has, restoring the environment after. */
async function inPod<T>(fn: () => Promise<T>, extra: Record<string, string> = {}): Promise<T> {
  const saved = { ...process.env };
  delete process.env.KUBECONFIG;
  Object.assign(process.env, { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(double.port), ...extra });
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

describe('loadKubeConfig', () => {
  it('in a pod, uses the service account: token, CA and namespace, over HTTPS', async () => {
    await inPod(async () => {
      const loaded = loadKubeConfig({ serviceAccountRoot: root });
      assert.equal(loaded.source, 'in-cluster');
      assert.equal(loaded.namespace, 'team');
      const api = new KubeApi(loaded.config);
      const result = await api.request<{ items: { metadata: { name: string } }[] }>('GET', { apiVersion: 'v1', resource: 'configmaps', namespace: 'team' });
      assert.ok(result.ok, JSON.stringify(result));
      assert.deepEqual(result.body.items.map((i) => i.metadata.name), ['cm']);
      // Watches go through the same TLS and token.
      const { items, subscription } = record(listWatch(api, { name: 'cms', apiVersion: 'v1', resource: 'configmaps', namespace: 'team' }));
      await until('watching', () => double.openWatches('configmaps') === 1);
      double.create('v1', 'configmaps', configMap('over-tls', {}, 'team'));
      await until('the watched change', () => items.some((c) => c.type === 'upsert' && c.object.metadata.name === 'over-tls'));
      subscription.unsubscribe();
    });
  });

  it('refuses an API server whose certificate the service account CA did not sign', async () => {
    const other = await mkdtemp(join(tmpdir(), 'haprx-sa-'));
    try {
      const dir = join(other, SERVICE_ACCOUNT_DIR);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'token'), 'sa-token');
      await writeFile(join(dir, 'ca.crt'), pki.rogueCa);
      await inPod(async () => {
        const api = new KubeApi(loadKubeConfig({ serviceAccountRoot: other }).config);
        const result = await api.request('GET', { apiVersion: 'v1', resource: 'configmaps' });
        assert.ok(!result.ok);
        assert.equal(result.status, 0);
        assert.match(result.message, /certificate|self.signed|verify/i);
      });
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('prefers KUBECONFIG over the service account, and takes the context namespace', async () => {
    const file = join(root, 'kubeconfig');
    await writeFile(
      file,
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${double.url}", certificate-authority-data: ${Buffer.from(pki.ca).toString('base64')}}}]
users: [{name: u, user: {token: sa-token}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: from-context}}]
current-context: x
`,
    );
    await inPod(
      async () => {
        const loaded = loadKubeConfig({ serviceAccountRoot: root });
        assert.equal(loaded.source, `kubeconfig ${file}`);
        assert.equal(loaded.namespace, 'from-context');
        const result = await new KubeApi(loaded.config).request('GET', { apiVersion: 'v1', resource: 'configmaps' });
        assert.ok(result.ok);
      },
      { KUBECONFIG: file },
    );
    const explicit = loadKubeConfig({ kubeconfig: file });
    assert.equal(explicit.source, `kubeconfig ${file}`);
  });
});
