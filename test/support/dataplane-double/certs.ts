/**
 * Test certificates made with the openssl CLI: a CA, a server certificate for
 * 127.0.0.1 / localhost signed by it, a client certificate signed by it, and a
 * client certificate from an unrelated CA (which an mTLS server must refuse).
 * Also a self-signed site certificate with its key, for ssl storage uploads.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair {
  cert: string;
  key: string;
}

export interface TestPki {
  ca: string;
  server: KeyPair;
  client: KeyPair;
  /** Signed by another CA: the server must refuse it. */
  rogueClient: KeyPair;
  /** The CA of the rogue client; a client that trusts only it must refuse the server. */
  rogueCa: string;
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir });
}

async function makeCa(dir: string, name: string): Promise<void> {
  await openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.crt`);
}

async function makeLeaf(dir: string, ca: string, name: string, ext: string): Promise<KeyPair> {
  await openssl(dir, 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.crt`);
  return { cert: await readFile(join(dir, `${name}.crt`), 'utf8'), key: await readFile(join(dir, `${name}.key`), 'utf8') };
}

export async function makeTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'haprx-pki-'));
  try {
    await makeCa(dir, 'ca');
    await makeCa(dir, 'rogue-ca');
    const server = await makeLeaf(dir, 'ca', 'server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
    const client = await makeLeaf(dir, 'ca', 'client', 'extendedKeyUsage=clientAuth\n');
    const rogueClient = await makeLeaf(dir, 'rogue-ca', 'rogue-client', 'extendedKeyUsage=clientAuth\n');
    return {
      ca: await readFile(join(dir, 'ca.crt'), 'utf8'),
      rogueCa: await readFile(join(dir, 'rogue-ca.crt'), 'utf8'),
      server,
      client,
      rogueClient,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A self-signed certificate and its key in one PEM, as haproxy's `crt` and ssl storage want it. */
export async function makeSiteCertificate(cn: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'haprx-site-'));
  try {
    await openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${cn}`, '-keyout', 'leaf.key', '-out', 'leaf.crt');
    return (await readFile(join(dir, 'leaf.crt'), 'utf8')) + (await readFile(join(dir, 'leaf.key'), 'utf8'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
