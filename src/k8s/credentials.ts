import { createHash } from 'node:crypto';
import type { KubeObject } from './resource.ts';

/**
 * The Data Plane API credentials from a Secret:
 *
 *   username, password      HTTP basic auth (required)
 *   ca.crt                  CA bundle that signs the Data Plane API's certificate (optional)
 *   tls.crt, tls.key        client certificate and key (optional, both or neither)
 *
 * `version` changes exactly when the content does; it is a hash, so that it can be
 * logged without revealing anything.
 */
export interface Credentials {
  username: string;
  password: string;
  ca?: string;
  cert?: string;
  key?: string;
  version: string;
}

export type CredentialsResult = { ok: true; credentials: Credentials } | { ok: false; message: string };

export function credentialsFromSecret(secret: KubeObject | undefined, name: string): CredentialsResult {
  if (!secret) return { ok: false, message: `the Secret ${name} does not exist` };
  const data = (secret.data ?? {}) as Record<string, unknown>;
  const stringData = (secret.stringData ?? {}) as Record<string, unknown>;
  const read = (k: string): string | undefined => {
    if (typeof data[k] === 'string') return Buffer.from(data[k], 'base64').toString('utf8');
    if (typeof stringData[k] === 'string') return stringData[k];
    return undefined;
  };
  const username = read('username');
  const password = read('password');
  const missing = [username ? undefined : 'username', password ? undefined : 'password'].filter(Boolean);
  if (missing.length > 0) return { ok: false, message: `the Secret ${name} has no ${missing.join(' and no ')}` };
  const cert = read('tls.crt');
  const key = read('tls.key');
  if ((cert === undefined) !== (key === undefined)) return { ok: false, message: `the Secret ${name} has ${cert ? 'tls.crt but no tls.key' : 'tls.key but no tls.crt'}` };
  const ca = read('ca.crt');
  const hash = createHash('sha256');
  for (const part of [username!, password!, ca ?? '', cert ?? '', key ?? '']) hash.update(`${Buffer.byteLength(part)}:${part}`);
  return {
    ok: true,
    credentials: { username: username!, password: password!, ...(ca !== undefined && { ca }), ...(cert !== undefined && { cert, key: key! }), version: hash.digest('hex').slice(0, 12) },
  };
}
