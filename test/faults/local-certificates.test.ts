/**
 * A TLS Secret renewed under `haprx local`, with the shipped templates: the new
 * certificate reaches haproxy at runtime (`set ssl cert`, `commit ssl cert`), haproxy
 * does not reload, and HTTP traffic goes on without a failure meanwhile.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { selfSigned, servedSerial } from '../support/certificates.ts';
import { freePort } from '../support/ports.ts';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const tlsSecret = (pair: { crt: string; key: string }) =>
  `apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata: {name: site, namespace: shop}\ndata:\n  tls.crt: ${b64(pair.crt)}\n  tls.key: ${b64(pair.key)}\n`;

describe('local mode: a renewed TLS Secret (real haproxy, shipped templates)', () => {
  const haprx = new LocalHaprx();
  const first = selfSigned('secure.test');
  const renewed = selfSigned('secure.test');
  let httpsPort: number;

  before(async () => {
    httpsPort = await freePort();
    const ingress = manifest.ingress('secure', 'secure.test', 'a').replace('spec:\n', 'spec:\n  tls: [{hosts: [secure.test], secretName: site}]\n');
    await haprx.start({
      manifests: { 'services.yaml': manifest.service('a'), 'ingress.yaml': ingress, 'secret.yaml': tlsSecret(first) },
      echoes: ['e1'],
      settings: { driftInterval: '0s' },
      args: ['--set', `httpsPort=${httpsPort}`],
    });
    await writeFile(join(haprx.manifests, 'slices.yaml'), manifest.slice('a', 'a', haprx.echo.e1!.port));
    await haprx.served('secure.test', 'e1');
    await haprx.until('the first certificate served', async () => ((await servedSerial(httpsPort, 'secure.test')) === first.serial ? true : undefined));
  });

  after(() => haprx.stop());

  it('serves the new certificate without a reload, and traffic goes on', async (t) => {
    const traffic = haprx.traffic('secure.test', 'e1');
    const reloads = (await haprx.showProc())!.reloads;
    const mark = haprx.logs.length;
    const written = Date.now();
    await writeFile(join(haprx.manifests, 'secret.yaml'), tlsSecret(renewed));
    await haprx.until('the renewed certificate served', async () => ((await servedSerial(httpsPort, 'secure.test')) === renewed.serial ? true : undefined));
    const live = Date.now() - written;
    const result = await traffic.stop();
    t.diagnostic(`renewed certificate served ${live} ms after the Secret was written; ${result.failed} of ${result.sent} requests failed`);
    assert.equal((await haprx.showProc())!.reloads, reloads, 'haproxy did not reload');
    assert.ok(haprx.logged(mark, /^deployed to local/), haprx.recentLogs());
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });
});
