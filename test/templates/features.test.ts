/**
 * The README's Gateway API table lists what the shipped templates declare in
 * GatewayClass status.supportedFeatures, and nothing more.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { loadControllerConfig } from '../../src/cli/load-config.ts';
import { renderFixture } from '../../src/cli/test-command.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

async function declaredFeatures(): Promise<string[]> {
  const raw = await readTemplateDir(`${ROOT}templates`);
  assert.ok(raw.ok);
  const loaded = loadControllerConfig(raw.raw);
  assert.ok(loaded.ok);
  const gatewayClass: KubeObject = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'haprx' }, spec: { controllerName: 'haprx.io/gateway-controller' } };
  const rendered = renderFixture(loaded.config, { resources: [gatewayClass], values: {} });
  assert.ok(rendered.ok);
  const declared = rendered.statuses.find((s) => s.ref.kind === 'GatewayClass')?.fields.supportedFeatures as { name: string }[] | undefined;
  assert.ok(declared, 'the class declares its features');
  return declared.map((f) => f.name);
}

describe('Gateway API features', () => {
  it('the README table lists exactly what GatewayClass status.supportedFeatures declares, in its order', async () => {
    const readme = await readFile(`${ROOT}README.md`, 'utf8');
    const table = /<!-- gateway-features:start[^\n]*-->\n([\s\S]*?)<!-- gateway-features:end -->/.exec(readme);
    assert.ok(table, 'the README has the table between its markers');
    const listed = [...table[1]!.matchAll(/^\| `([A-Za-z0-9]+)` \|/gm)].map((m) => m[1]!);
    assert.deepEqual(listed, await declaredFeatures());
  });

  it('declares them sorted by name, as the spec asks, each once', async () => {
    const declared = await declaredFeatures();
    assert.deepEqual(declared, [...new Set(declared)].sort());
  });
});
