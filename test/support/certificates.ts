/** Certificates for tests that serve TLS through a real haproxy. */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';

/** A self-signed certificate for `cn` (EC P-256, made with openssl), its key, both as one PEM file, and its serial number. */
export function selfSigned(cn: string): { crt: string; key: string; pem: string; serial: string } {
  const dir = mkdtempSync(join(tmpdir(), 'haprx-cert-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${cn}`, '-keyout', join(dir, 'k'), '-out', join(dir, 'c')], { stdio: 'ignore' });
    const crt = readFileSync(join(dir, 'c'), 'utf8');
    const key = readFileSync(join(dir, 'k'), 'utf8');
    return { crt, key, pem: crt + key, serial: new X509Certificate(crt).serialNumber };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The serial number of the certificate served on 127.0.0.1:`port` for `servername`; undefined when the handshake fails. */
export function servedSerial(port: number, servername: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial);
    });
    socket.on('error', () => resolve(undefined));
  });
}
