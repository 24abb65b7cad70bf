/**
 * The configuration reference in docs/install.md is what scripts/config-docs.ts
 * generates from the io-ts codecs, and it covers every field they accept.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DOC_PATH, configRows, withTable } from '../../scripts/config-docs.ts';
import { decodeControllerConfig } from '../../src/config/controller-config.ts';
import { ROOT } from './kustomize.ts';

describe('the configuration reference in docs/install.md', () => {
  it('is current (run npm run docs:config after changing the codecs)', async () => {
    const doc = await readFile(join(ROOT, DOC_PATH), 'utf8');
    assert.equal(doc, withTable(doc), `${DOC_PATH} is stale: run npm run docs:config`);
  });

  it('lists every setting with the default the decoder really fills in', () => {
    const rows = new Map(configRows().map((r) => [r.path, r]));
    const decoded = decodeControllerConfig({ watch: [], templates: { 'haproxy.cfg': '' } });
    assert.ok(decoded.ok);
    const s = decoded.value.settings;
    assert.equal(rows.get('settings.debounce')!.default, `\`${s.debounceMs}ms\``);
    assert.equal(rows.get('settings.debounceMaxWait')!.default, `\`${s.debounceMaxWaitMs / 1000}s\``);
    assert.equal(rows.get('settings.driftInterval')!.default, `\`${s.driftIntervalMs / 1000}s\``);
    assert.equal(rows.get('settings.maxParallel')!.default, `\`${s.maxParallel}\``);
    assert.equal(rows.get('settings.haproxy.podSelector')!.default, `\`${s.haproxy!.podSelector}\``);
    assert.equal(rows.get('settings.haproxy.dataplane.port')!.default, `\`${s.haproxy!.dataplane.port}\``);
    assert.equal(rows.get('settings.haproxy.dataplane.scheme')!.default, `\`${s.haproxy!.dataplane.scheme}\``);
    assert.ok(rows.get('watch[].name')!.required && rows.get('watch[].resource')!.required && !rows.get('watch[].namespace')!.required);
    // Every settings field the decoder knows is listed: an unknown one would be rejected by decoding.
    for (const path of ['settings.deployTimeout', 'settings.minDeployInterval', 'settings.haproxy.namespace', 'settings.haproxy.service', 'settings.haproxy.dataplane.container', 'watch[].referencedBy']) assert.ok(rows.has(path), path);
  });
});
