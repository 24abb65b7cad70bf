import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { scrubChange, scrubConfig, scrubObject, scrubText } from '../../src/replay/scrub.ts';
import { type RenderedConfig, sealRendered, serverLines } from '../../src/templating/rendered.ts';

const blank = (text: string) => text.replaceAll('hunter2', '[secret]');

describe('what a recording must not hold', () => {
  it('keeps the keys of a Secret, not its values, nor the copy kubectl apply keeps; other objects only lose what the scrubber knows', () => {
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'a', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"k":"aHVudGVyMg=="}}', team: 'x' }, managedFields: [{ manager: 'kubectl' }] },
      data: { k: 'aHVudGVyMg==' },
      stringData: { t: 'hunter2' },
      type: 'Opaque',
    };
    assert.deepEqual(scrubObject(secret, blank), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'a', annotations: { team: 'x' } },
      data: { k: '[redacted]' },
      stringData: { t: '[redacted]' },
      type: 'Opaque',
    });
    const map: KubeObject = { kind: 'ConfigMap', metadata: { name: 'm', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } }, data: { copied: 'pw=hunter2' } };
    assert.deepEqual(scrubObject(map, blank), { kind: 'ConfigMap', metadata: { name: 'm', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } }, data: { copied: 'pw=[secret]' } });
    const replaced = scrubChange({ type: 'replace', resource: 'secrets', objects: [secret] }, blank);
    assert.ok(replaced.type === 'replace' && (replaced.objects[0]!.data as Record<string, string>).k === '[redacted]');
  });

  it('takes credentials out of URLs in any text', () => {
    assert.equal(scrubText('POST https://admin:hunter2@10.0.0.1:5555/v3/services failed', (s) => s), 'POST https://10.0.0.1:5555/v3/services failed');
    assert.equal(scrubText('mail me at a@b.c', (s) => s), 'mail me at a@b.c');
  });

  it('redacts credentials and private keys of a configuration, and keeps its server sets pointing at the same lines', () => {
    const main = 'userlist u\n  user alice password $6$abc$def\nbackend b\n  server s1 10.0.0.1:80 # hunter2\n  server s2 10.0.0.2:80\nbackend c\n  http-request set-header Authorization "Basic aHVudGVyMg=="\n';
    const start = main.indexOf('  server s1');
    const end = main.indexOf('backend c');
    const config: RenderedConfig = sealRendered(
      { main, maps: { 'hosts.map': 'a.test b\n' }, files: {}, certs: { 'site.pem': '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----\n' } },
      { sets: [{ backend: 'b', snippet: 'servers', args: '[]', start, end, reads: [] }], reads: [] },
    );
    const scrubbed = { ...scrubConfig(config, blank), hash: config.hash };
    assert.match(scrubbed.main, /user alice password \[redacted\]/);
    assert.match(scrubbed.main, /set-header Authorization \[redacted\]/);
    assert.doesNotMatch(scrubbed.main, /hunter2|\$6\$abc/);
    assert.match(scrubbed.certs['site.pem']!, /BEGIN CERTIFICATE-----\nMIIB/);
    assert.doesNotMatch(scrubbed.certs['site.pem']!, /MIIEv/);
    assert.equal(scrubbed.maps['hosts.map'], 'a.test b\n');
    assert.equal(serverLines(scrubbed, 'b'), '  server s1 10.0.0.1:80 # [secret]\n  server s2 10.0.0.2:80\n');
  });
});
