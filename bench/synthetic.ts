/**
 * A synthetic cluster for benchmarks: N Ingresses, each with one host routing to its
 * own Service, whose EndpointSlice has E ready endpoints; T TLS Secrets. Addresses
 * are spread over 10.0.0.0/8 and deterministic, so runs are comparable.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type LoadedConfig, loadControllerConfig } from '../src/cli/load-config.ts';
import { readTemplateDir } from '../src/config/template-dir.ts';
import type { KubeObject } from '../src/k8s/resource.ts';

export interface ClusterSize {
  ingresses: number;
  endpointsPerService: number;
  tlsSecrets: number;
  /** The certificates and keys of the TLS Secrets (tlsPairs); without them their data is empty, and skipped. */
  tls?: readonly TlsPair[];
}

export interface TlsPair {
  crt: string;
  key: string;
}

const execFileP = promisify(execFile);

/**
 * `n` self-signed certificates (EC P-256) and their keys, for app-<i>.example.com, each
 * its own: made once with openssl (some 10 ms each) and kept in the temporary
 * directory for the next run.
 */
export async function tlsPairs(n: number): Promise<TlsPair[]> {
  const dir = join(tmpdir(), 'haprx-bench-tls');
  await mkdir(dir, { recursive: true });
  const pairs: TlsPair[] = new Array(n);
  const make = async (i: number) => {
    const crt = join(dir, `${i}.crt`);
    const key = join(dir, `${i}.key`);
    try {
      pairs[i] = { crt: await readFile(crt, 'utf8'), key: await readFile(key, 'utf8') };
      return;
    } catch {
      // Not made yet.
    }
    await execFileP('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '3650', '-subj', `/CN=app-${i}.example.com`, '-keyout', key, '-out', crt]);
    pairs[i] = { crt: await readFile(crt, 'utf8'), key: await readFile(key, 'utf8') };
  };
  let next = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (next < n) await make(next++);
  }));
  return pairs;
}

export interface SyntheticCluster {
  ingresses: KubeObject[];
  services: KubeObject[];
  endpointslices: KubeObject[];
  secrets: KubeObject[];
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

export function ipOf(n: number): string {
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

export function endpointSlice(i: number, endpoints: number, offset = 0, rv = '1'): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `svc-${i}-abc`, namespace: `ns-${i % 50}`, resourceVersion: rv, labels: { 'kubernetes.io/service-name': `svc-${i}` } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: Array.from({ length: endpoints }, (_, e) => ({ addresses: [ipOf(i * 64 + e + offset + 1)], conditions: { ready: true } })),
  };
}

export function syntheticCluster(size: ClusterSize): SyntheticCluster {
  const cluster: SyntheticCluster = { ingresses: [], services: [], endpointslices: [], secrets: [] };
  for (let i = 0; i < size.ingresses; i++) {
    const namespace = `ns-${i % 50}`;
    cluster.services.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: `svc-${i}`, namespace, resourceVersion: '1' },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    cluster.endpointslices.push(endpointSlice(i, size.endpointsPerService));
    const tls = i < size.tlsSecrets;
    cluster.ingresses.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: `ing-${i}`, namespace, resourceVersion: '1' },
      spec: {
        ...(tls && { tls: [{ hosts: [`app-${i}.example.com`], secretName: `tls-${i}` }] }),
        rules: [
          {
            host: `app-${i}.example.com`,
            http: {
              paths: [
                { path: '/', pathType: 'Prefix', backend: { service: { name: `svc-${i}`, port: { number: 80 } } } },
                { path: '/api', pathType: 'Prefix', backend: { service: { name: `svc-${i}`, port: { number: 80 } } } },
              ],
            },
          },
        ],
      },
    });
    const pair = size.tls?.[i];
    if (tls) {
      cluster.secrets.push({
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name: `tls-${i}`, namespace, resourceVersion: '1' },
        data: pair ? { 'tls.crt': b64(pair.crt), 'tls.key': b64(pair.key) } : { 'tls.crt': '', 'tls.key': '' },
      });
    }
  }
  return cluster;
}

/** The shipped templates, loaded as the controller loads them. */
export async function shippedTemplates(): Promise<LoadedConfig> {
  const raw = await readTemplateDir(new URL('../templates', import.meta.url).pathname);
  if (!raw.ok) throw new Error(raw.message);
  const loaded = loadControllerConfig(raw.raw);
  if (!loaded.ok) throw new Error(`${loaded.path}: ${loaded.message}`);
  return loaded.config;
}
