import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { type Observable, distinctUntilChanged, filter, map } from 'rxjs';
import type { KubeApi } from '../k8s/api.ts';
import type { ListWatchOptions } from '../k8s/list-watch.ts';
import type { KubeObject } from '../k8s/resource.ts';
import { watchObject } from '../k8s/sources.ts';

/** The webhook's serving certificate: PEM chain and key, checked to belong together. */
export interface ServingCertificate {
  cert: string;
  key: string;
  /** Changes exactly when the content does; a hash, safe to log. */
  version: string;
  notAfter: string;
}

export type CertificateResult = { ok: true; certificate: ServingCertificate } | { ok: false; message: string };

/**
 * The serving certificate in a `kubernetes.io/tls` Secret, as cert-manager writes it:
 * `tls.crt` (the certificate, then its chain) and `tls.key`. A key that does not
 * belong to the certificate, or a certificate that does not parse, is refused with
 * the reason; the key's text never appears in a message.
 */
export function certificateFromSecret(secret: KubeObject | undefined, name: string): CertificateResult {
  if (!secret) return { ok: false, message: `the Secret ${name} does not exist` };
  const data = (secret.data ?? {}) as Record<string, unknown>;
  const read = (k: string) => (typeof data[k] === 'string' ? Buffer.from(data[k], 'base64').toString('utf8') : undefined);
  const cert = read('tls.crt');
  const key = read('tls.key');
  if (cert === undefined || key === undefined) return { ok: false, message: `the Secret ${name} has no ${cert === undefined ? 'tls.crt' : 'tls.key'}` };
  let parsed: X509Certificate;
  try {
    parsed = new X509Certificate(cert);
  } catch (err) {
    return { ok: false, message: `the Secret ${name}: tls.crt is not a PEM certificate (${(err as Error).message})` };
  }
  try {
    if (!parsed.checkPrivateKey(createPrivateKey(key))) return { ok: false, message: `the Secret ${name}: tls.key is not the key of tls.crt` };
  } catch {
    return { ok: false, message: `the Secret ${name}: tls.key is not a PEM private key` };
  }
  const version = createHash('sha256').update(`${cert.length}:${cert}${key}`).digest('hex').slice(0, 12);
  return { ok: true, certificate: { cert, key, version, notAfter: parsed.validTo } };
}

/** The certificate in the Secret, each time its content changes (cert-manager renewals included). */
export function certificateSource(api: KubeApi, namespace: string, name: string, options: ListWatchOptions = {}): Observable<CertificateResult> {
  const label = `${namespace}/${name}`;
  return watchObject(api, { apiVersion: 'v1', resource: 'secrets', namespace, name }, options).pipe(
    filter((state) => state.type === 'object'),
    map((state) => certificateFromSecret(state.object, label)),
    distinctUntilChanged((a, b) => describe(a) === describe(b)),
  );
}

function describe(result: CertificateResult): string {
  return result.ok ? `ok:${result.certificate.version}` : `error:${result.message}`;
}
