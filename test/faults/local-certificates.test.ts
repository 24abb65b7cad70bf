/**
 * TLS under `haprx local`, with the shipped templates: a renewed Secret's certificate
 * reaches haproxy at runtime (`set ssl cert`, `commit ssl cert`), and so does a new TLS
 * host with its own Secret (`new ssl cert`, `add ssl crt-list`), a second host of that
 * Secret (its crt-list line edited), and their removal; haproxy
 * does not reload, and HTTP traffic goes on without a failure meanwhile.
 */
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { selfSigned, servedSerial } from '../support/certificates.ts';
import { freePort } from '../support/ports.ts';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const tlsSecret = (pair: { crt: string; key: string }, name = 'site') =>
  `apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata: {name: ${name}, namespace: shop}\ndata:\n  tls.crt: ${b64(pair.crt)}\n  tls.key: ${b64(pair.key)}\n`;
const tlsIngress = (name: string, host: string, secret: string) => manifest.ingress(name, host, 'a').replace('spec:\n', `spec:\n  tls: [{hosts: [${host}], secretName: ${secret}}]\n`);

describe('local mode: a renewed TLS Secret (real haproxy, shipped templates)', () => {
  const haprx = new LocalHaprx();
  const first = selfSigned('secure.test');
  const renewed = selfSigned('secure.test');
  let httpsPort: number;

  before(async () => {
    httpsPort = await freePort();
    const ingress = tlsIngress('secure', 'secure.test', 'site');
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
    // haproxy serves the certificate once `commit ssl cert` answers, which can be before haprx logs the deployment.
    await haprx.until('the deployment logged', () => haprx.logged(mark, /^deployed to local: .*no reload/));
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });

  it('serves a new TLS host its certificate without a reload, a second host of the same Secret too, and removes them the same way', async (t) => {
    const traffic = haprx.traffic('secure.test', 'e1');
    const reloads = (await haprx.showProc())!.reloads;
    const web = selfSigned('web.test');
    const written = Date.now();
    // Its Secret's name sorts before shop/site, but the crt-list follows the Ingresses: its line goes after the
    // first one, whose certificate is served when no name matches, and so it can go at runtime.
    await writeFile(join(haprx.manifests, 'web.yaml'), `${tlsIngress('web', 'web.test', 'alpha')}---\n${tlsSecret(web, 'alpha')}`);
    await haprx.until('the new host served its certificate', async () => ((await servedSerial(httpsPort, 'web.test')) === web.serial ? true : undefined));
    const live = Date.now() - written;
    // Its routes went first (the fast path); the render that brings the certificate is no paced confirmation (10 s).
    assert.ok(live < 8_000, `the certificate took ${live} ms`);
    await haprx.served('web.test', 'e1');
    // A second Ingress with the same Secret: its host joins the certificate's line.
    await writeFile(join(haprx.manifests, 'web2.yaml'), tlsIngress('web2', 'www.web.test', 'alpha'));
    await haprx.until('the shared certificate served to the second host', async () => ((await servedSerial(httpsPort, 'www.web.test')) === web.serial ? true : undefined));
    await rm(join(haprx.manifests, 'web2.yaml'));
    await haprx.until('the second host gone', async () => ((await servedSerial(httpsPort, 'www.web.test')) !== web.serial ? true : undefined));
    assert.equal(await servedSerial(httpsPort, 'web.test'), web.serial);
    await rm(join(haprx.manifests, 'web.yaml'));
    await haprx.until('the host gone', async () => ((await servedSerial(httpsPort, 'web.test')) !== web.serial ? true : undefined));
    const result = await traffic.stop();
    t.diagnostic(`new TLS host served its certificate ${live} ms after it was written; ${result.failed} of ${result.sent} requests failed`);
    assert.equal((await haprx.showProc())!.reloads, reloads, 'haproxy did not reload');
    assert.equal(await servedSerial(httpsPort, 'web.test'), (await servedSerial(httpsPort, 'secure.test')) ?? 'none');
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });
});
