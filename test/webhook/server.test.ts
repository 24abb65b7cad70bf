/**
 * The webhook's HTTPS server: AdmissionReview v1 over POST /validate and nothing
 * else, bounded bodies, a certificate swapped without a restart, and a failure
 * inside a review answered as "allowed" (a broken webhook never blocks the cluster).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { certificateFromSecret } from '../../src/webhook/certificate.ts';
import type { ServingCertificate } from '../../src/webhook/certificate.ts';
import type { AdmissionRequest, Verdict } from '../../src/webhook/review.ts';
import { type WebhookServer, startWebhookServer } from '../../src/webhook/server.ts';
import { type TestPki, makeTestPki } from '../support/dataplane-double/certs.ts';
import { INGRESS, callWebhook, ingress, prefix, reviewBody } from './support.ts';

let pki: TestPki;
let other: TestPki;
let server: WebhookServer;
const seen: AdmissionRequest[] = [];
let decide: (r: AdmissionRequest) => Verdict = () => ({ allowed: true });

const b64 = (s: string) => Buffer.from(s).toString('base64');
const tlsSecret = (pair: { cert: string; key: string }) => ({ metadata: { name: 'haprx-webhook-tls', namespace: 'haprx-system' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(pair.cert), 'tls.key': b64(pair.key) } });
function serving(pair: { cert: string; key: string }): ServingCertificate {
  const result = certificateFromSecret(tlsSecret(pair), 'haprx-system/haprx-webhook-tls');
  assert.ok(result.ok, JSON.stringify(result));
  return result.certificate;
}

const post = (body: string | Buffer, options: { ca?: string; path?: string; method?: string; type?: string } = {}) => callWebhook(server.port, body, { ...options, ca: options.ca ?? pki.ca });

before(async () => {
  [pki, other] = await Promise.all([makeTestPki(), makeTestPki()]);
  server = await startWebhookServer(
    {
      host: '127.0.0.1',
      port: 0,
      review: (r) => {
        seen.push(r);
        return decide(r);
      },
      maxBodyBytes: 64 * 1024,
    },
    serving(pki.server),
  );
});
after(async () => {
  await server?.close();
});

describe('the webhook server', () => {
  it('answers an AdmissionReview v1 with the uid of its request', async () => {
    decide = () => ({ allowed: false, message: 'haprx would skip Ingress shop/x: spec.rules[0].host "a\nb" is not a DNS name', warnings: ['note'] });
    const body = reviewBody(INGRESS, 'CREATE', ingress('x', { rules: [prefix('a\nb', '/')] }));
    const answer = await post(JSON.stringify(body));
    assert.equal(answer.status, 200);
    const review = JSON.parse(answer.body) as { apiVersion: string; kind: string; response: { uid: string; allowed: boolean; status: { code: number; message: string }; warnings: string[] } };
    assert.equal(review.apiVersion, 'admission.k8s.io/v1');
    assert.equal(review.kind, 'AdmissionReview');
    assert.equal(review.response.uid, body.request.uid);
    assert.equal(review.response.allowed, false);
    assert.equal(review.response.status.code, 403);
    assert.equal(review.response.status.message, 'haprx would skip Ingress shop/x: spec.rules[0].host "a\\nb" is not a DNS name', 'one line, the newline escaped');
    assert.deepEqual(review.response.warnings, ['note']);
    assert.equal(seen.at(-1)!.object!.metadata.name, 'x');
  });

  it('refuses anything but a v1 AdmissionReview as JSON, POSTed to /validate', async () => {
    const count = seen.length;
    const body = reviewBody(INGRESS, 'CREATE', ingress('x', { rules: [] }));
    assert.equal((await post(JSON.stringify({ ...body, apiVersion: 'admission.k8s.io/v1beta1' }))).status, 400);
    assert.match((await post(JSON.stringify({ ...body, apiVersion: 'admission.k8s.io/v1beta1' }))).body, /only v1/);
    assert.equal((await post(JSON.stringify({ ...body, request: { ...body.request, uid: 7 } }))).status, 400);
    assert.equal((await post(JSON.stringify({ ...body, request: { ...body.request, object: 'x' } }))).status, 400);
    assert.equal((await post('{"apiVersion":')).status, 400);
    assert.equal((await post(JSON.stringify(body), { type: 'text/plain' })).status, 415);
    assert.equal((await post('', { method: 'GET' })).status, 405);
    assert.equal((await post(JSON.stringify(body), { path: '/mutate' })).status, 404);
    assert.equal(seen.length, count, 'none of them reached the review');
  });

  it('refuses a body over the bound without reading it whole', async () => {
    const body = reviewBody(INGRESS, 'CREATE', ingress('big', { rules: [], padding: 'x'.repeat(80 * 1024) }));
    const answer = await post(JSON.stringify(body)).catch((err: Error) => ({ status: 0, body: err.message }));
    assert.ok(answer.status === 413 || /ECONNRESET|socket hang up|EPIPE/.test(answer.body), JSON.stringify(answer).slice(0, 200));
  });

  it('answers "allowed", with a warning, when a review fails inside', async () => {
    decide = () => {
      throw new Error('boom');
    };
    const body = reviewBody(INGRESS, 'CREATE', ingress('x', { rules: [] }));
    const review = JSON.parse((await post(JSON.stringify(body))).body) as { response: { allowed: boolean; warnings: string[] } };
    assert.equal(review.response.allowed, true);
    assert.match(review.response.warnings[0]!, /could not check/);
  });

  it('serves a renewed certificate on new connections, without a restart', async () => {
    decide = () => ({ allowed: true });
    const body = JSON.stringify(reviewBody(INGRESS, 'CREATE', ingress('x', { rules: [] })));
    await assert.rejects(post(body, { ca: other.ca }), /self-signed|unable to verify|certificate/i);
    server.setCertificate(serving(other.server));
    assert.equal((await post(body, { ca: other.ca })).status, 200);
    await assert.rejects(post(body, { ca: pki.ca }), /self-signed|unable to verify|certificate/i);
  });
});

describe('the certificate Secret', () => {
  it('takes tls.crt and tls.key as cert-manager writes them, and refuses a key of another certificate', () => {
    const good = certificateFromSecret(tlsSecret(pki.server), 'ns/s');
    assert.ok(good.ok);
    assert.match(good.certificate.version, /^[0-9a-f]{12}$/);
    const mixed = certificateFromSecret(tlsSecret({ cert: pki.server.cert, key: other.server.key }), 'ns/s');
    assert.deepEqual(mixed, { ok: false, message: 'the Secret ns/s: tls.key is not the key of tls.crt' });
    assert.deepEqual(certificateFromSecret(undefined, 'ns/s'), { ok: false, message: 'the Secret ns/s does not exist' });
    assert.deepEqual(certificateFromSecret({ metadata: { name: 's' }, data: { 'tls.crt': b64(pki.server.cert) } }, 'ns/s'), { ok: false, message: 'the Secret ns/s has no tls.key' });
    const garbage = certificateFromSecret(tlsSecret({ cert: 'not a cert', key: pki.server.key }), 'ns/s');
    assert.equal(garbage.ok, false);
    assert.ok(!JSON.stringify(mixed).includes('PRIVATE KEY'), 'a key never appears in a message');
  });
});
