/** `haprx status DIR`: the status haprx would write for each object, without any cluster. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gatewayYaml } from '../support/gateway-manifests.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

const MANIFESTS = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{name: http, port: 80}]}
---
${gatewayYaml({ name: 'edge', namespace: 'shop', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] })}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lost, namespace: shop}
spec:
  parentRefs: [{name: edge, sectionName: nothing}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  rules: [{host: web.example, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: evil, namespace: shop}
spec:
  rules: [{host: "evil.demo.local\\nbind :9999", http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
`;

describe('haprx status', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'haprx-status-'));
  after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'objects.yaml'), MANIFESTS);
  const run = (...args: string[]) => promisify(execFile)(process.execPath, ['bin/haprx.js', 'status', dir, '--set', 'portOffset=8000', ...args], { cwd: ROOT });

  it("prints each object's conditions and the warnings, one line each, control characters escaped", async () => {
    const { stdout } = await run();
    const lines = stdout.split('\n');
    for (const expected of [
      'GatewayClass haprx: Accepted=True Accepted: haprx serves this class (haprx.io/gateway-controller)',
      'Gateway shop/edge: Programmed=True Programmed (once deployed): 1 listener(s) served',
      'Gateway shop/edge: listener http: attachedRoutes=0',
      'HTTPRoute shop/lost: parent edge#nothing: Accepted=False NoMatchingParent: Gateway shop/edge has no valid listener named nothing',
      'Ingress shop/web: served',
      'Ingress shop/evil: not served',
    ]) {
      assert.ok(lines.includes(expected), `${expected}\n--- in ---\n${stdout}`);
    }
    const warning = lines.find((l) => l.startsWith('warning: Ingress shop/evil: skipped'));
    assert.ok(warning?.includes('evil.demo.local\\nbind :9999'), warning);
    assert.ok(!lines.some((l) => l.startsWith('bind :9999')), 'no line of its own for what the value held');
  });

  it('gives the same as JSON', async () => {
    const { stdout } = await run('--json');
    const parsed = JSON.parse(stdout) as { status: { ref: { kind: string; name: string }; served?: boolean }[]; warnings: { object: string }[] };
    assert.equal(parsed.status.find((s) => s.ref.kind === 'Ingress' && s.ref.name === 'evil')?.served, false);
    assert.ok(parsed.warnings.some((w) => w.object === 'Ingress shop/evil'));
  });

  it('fails with the reason when the templates cannot be loaded', async () => {
    await assert.rejects(promisify(execFile)(process.execPath, ['bin/haprx.js', 'status', dir, '--templates', join(dir, 'nothing')], { cwd: ROOT }), (err: { code: number; stderr: string }) => err.code === 1 && /config error/.test(err.stderr));
  });
});
