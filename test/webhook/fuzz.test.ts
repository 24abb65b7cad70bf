/**
 * The fuzz corpus of the template tests, sent through the webhook over HTTPS: every
 * hostile value in every field of a submitted Ingress and HTTPRoute, and in the
 * request's own fields. Whatever a request holds, the webhook answers, it refuses
 * exactly the objects a full render of the cluster would skip (checked against that
 * render, not against the webhook's narrowed one), and it does nothing but render:
 * no process is started, no file written, no connection opened while it runs.
 */
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { after, before, describe, it } from 'node:test';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { certificateFromSecret } from '../../src/webhook/certificate.ts';
import { type WebhookServer, startWebhookServer } from '../../src/webhook/server.ts';
import { type TestPki, makeTestPki } from '../support/dataplane-double/certs.ts';
import { NON_STRINGS, hostileStrings } from '../templates/hostile.ts';
import { HTTPROUTE, INGRESS, admissionOver, callWebhook, fixtureObjects, httpRoute, ingress, reviewBody, storesFor } from './support.ts';

const require = createRequire(import.meta.url);

type Path = (string | number)[];
const INGRESS_FIELDS: Path[] = [
  ['metadata', 'name'],
  ['metadata', 'namespace'],
  ['spec', 'ingressClassName'],
  ['spec', 'rules', 0, 'host'],
  ['spec', 'rules', 0, 'http', 'paths', 0, 'path'],
  ['spec', 'rules', 0, 'http', 'paths', 0, 'pathType'],
  ['spec', 'rules', 0, 'http', 'paths', 0, 'backend', 'service', 'name'],
  ['spec', 'rules', 0, 'http', 'paths', 0, 'backend', 'service', 'port', 'number'],
  ['spec', 'rules', 0, 'http', 'paths', 1, 'backend', 'service', 'port', 'name'],
  ['spec', 'defaultBackend', 'service', 'name'],
  ['spec', 'tls', 0, 'hosts', 0],
  ['spec', 'tls', 0, 'secretName'],
  ...['timeout-connect', 'timeout-server', 'load-balance', 'ssl-redirect', 'allowlist-source-range', 'rate-limit-requests', 'rate-limit-period', 'auth-type', 'auth-secret', 'auth-realm'].map((a) => ['metadata', 'annotations', `haprx.io/${a}`]),
];
const match0 = ['spec', 'rules', 0, 'matches', 0];
const ROUTE_FIELDS: Path[] = [
  ['spec', 'hostnames', 0],
  ['spec', 'parentRefs', 0, 'sectionName'],
  [...match0, 'path', 'value'],
  [...match0, 'path', 'type'],
  [...match0, 'headers', 0, 'name'],
  [...match0, 'headers', 0, 'value'],
  [...match0, 'queryParams', 0, 'value'],
  [...match0, 'method'],
  ['spec', 'rules', 0, 'filters', 0, 'requestHeaderModifier', 'set', 0, 'value'],
  ['spec', 'rules', 0, 'filters', 1, 'requestRedirect', 'hostname'],
  ['spec', 'rules', 0, 'backendRefs', 0, 'name'],
  ['spec', 'rules', 0, 'backendRefs', 0, 'port'],
  ['spec', 'rules', 0, 'backendRefs', 0, 'weight'],
];

const baseIngress = () =>
  ingress(
    'fuzzed',
    {
      defaultBackend: { service: { name: 'docs', port: { number: 80 } } },
      tls: [{ hosts: ['fuzz.example'], secretName: 'tls-example' }],
      rules: [
        {
          host: 'fuzz.example',
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
              { path: '/api', pathType: 'Exact', backend: { service: { name: 'api', port: { name: 'http' } } } },
            ],
          },
        },
      ],
    },
    { annotations: { 'haprx.io/timeout-connect': '2s', 'haprx.io/load-balance': 'leastconn', 'haprx.io/allowlist-source-range': '10.0.0.0/8', 'haprx.io/rate-limit-requests': '100', 'haprx.io/auth-realm': 'Shop' } },
  );
const baseRoute = () =>
  httpRoute('fuzzed', {
    parentRefs: [{ name: 'gw', sectionName: 'http' }],
    hostnames: ['route.example'],
    rules: [
      {
        matches: [{ path: { type: 'PathPrefix', value: '/v1' }, headers: [{ name: 'x-h', value: 'v' }], queryParams: [{ name: 'q', value: '1' }], method: 'GET' }],
        filters: [
          { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-set', value: 's' }] } },
          { type: 'RequestRedirect', requestRedirect: { hostname: 'new.example', statusCode: 302 } },
        ],
        backendRefs: [{ name: 'web', port: 80, weight: 1 }],
      },
    ],
  });

function withValue(base: KubeObject, path: Path, value: unknown): KubeObject {
  const copy = structuredClone(base) as unknown as Record<string | number, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path.at(-1)!] = value;
  return copy as unknown as KubeObject;
}

/** Counts what the code under test must never do while it reviews. */
function tripwires(allowedPort: () => number) {
  const cp = require('node:child_process') as Record<string, unknown>;
  const fs = require('node:fs') as Record<string, unknown> & { promises: Record<string, unknown> };
  const net = require('node:net') as { Socket: { prototype: { connect: (...a: unknown[]) => unknown } } };
  const tripped: string[] = [];
  const restore: (() => void)[] = [];
  const wrap = (target: Record<string, unknown>, name: string, label: string) => {
    const original = target[name] as (...a: unknown[]) => unknown;
    target[name] = function (this: unknown, ...args: unknown[]) {
      tripped.push(`${label}.${name}`);
      return original.apply(this, args);
    };
    restore.push(() => (target[name] = original));
  };
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) wrap(cp, name, 'child_process');
  for (const name of ['writeFile', 'writeFileSync', 'appendFile', 'appendFileSync', 'open', 'openSync', 'mkdir', 'mkdirSync', 'mkdtemp', 'mkdtempSync', 'rm', 'rmSync', 'unlink', 'unlinkSync']) wrap(fs, name, 'fs');
  for (const name of ['writeFile', 'appendFile', 'open', 'mkdir', 'mkdtemp', 'rm', 'unlink']) wrap(fs.promises, name, 'fs.promises');
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: unknown, ...args: unknown[]) {
    const options = args[0] as { port?: unknown } | unknown[] | number;
    const port = Array.isArray(options) ? (options[0] as { port?: unknown })?.port : typeof options === 'object' ? options?.port : options;
    if (Number(port) !== allowedPort()) tripped.push(`net.connect to ${String(port)}`);
    return connect.apply(this, args);
  };
  restore.push(() => (net.Socket.prototype.connect = connect));
  syncBuiltinESMExports();
  return {
    tripped,
    restore() {
      for (const r of restore) r();
      syncBuiltinESMExports();
    },
  };
}

let pki: TestPki;
let server: WebhookServer;
let loaded: LoadedConfig;
let cluster: KubeObject[];
let agent: Agent;

const post = (body: unknown) => callWebhook(server.port, JSON.stringify(body), { ca: pki.ca, agent });

/** Whether a full render of the cluster with the object skips it (or a part of it): the oracle. */
function fullRenderSkips(object: KubeObject): boolean {
  const stores = storesFor(loaded, [...cluster, object]);
  const result = renderTemplates(loaded.templates, { resources: Object.fromEntries(stores), values: loaded.config.values });
  assert.ok(result.ok, 'the render itself never fails on a cluster value');
  const label = `${object.kind} ${object.metadata.namespace}/${object.metadata.name}`;
  return result.warnings.some((w) => w.object === label && /(^|\s)skipped\b/.test(w.message));
}

before(async () => {
  pki = await makeTestPki();
  cluster = await fixtureObjects('_services.yaml', '_gateway.yaml', '_certificates.yaml');
  const made = await admissionOver(cluster);
  loaded = made.loaded;
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const certificate = certificateFromSecret({ metadata: { name: 'tls' }, data: { 'tls.crt': b64(pki.server.cert), 'tls.key': b64(pki.server.key) } }, 'tls');
  assert.ok(certificate.ok);
  server = await startWebhookServer({ host: '127.0.0.1', port: 0, review: (r) => made.admission.review(r) }, certificate.certificate);
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
});
after(async () => {
  agent?.destroy();
  await server?.close();
});

describe('the fuzz corpus through the webhook', () => {
  it('answers every hostile object, refuses exactly what a full render skips, and does nothing but render', async () => {
    const hostile = hostileStrings();
    assert.ok(hostile.length >= 1_000);
    const cases: { type: typeof INGRESS; object: KubeObject }[] = [];
    // Every hostile string, each in one field (in turn), and every non-string in every field.
    hostile.forEach((value, i) => {
      const [fields, base, type] = i % 2 === 0 ? [INGRESS_FIELDS, baseIngress, INGRESS] : [ROUTE_FIELDS, baseRoute, HTTPROUTE];
      const path = fields[Math.floor(i / 2) % fields.length]!;
      // Names the API server would refuse outright still reach a webhook that anyone can call.
      cases.push({ type, object: withValue(base(), path, value) });
    });
    for (const value of NON_STRINGS) {
      for (const path of INGRESS_FIELDS.filter((p) => p[0] === 'spec')) cases.push({ type: INGRESS, object: withValue(baseIngress(), path, value) });
      for (const path of ROUTE_FIELDS) cases.push({ type: HTTPROUTE, object: withValue(baseRoute(), path, value) });
    }
    const wires = tripwires(() => server.port);
    const verdicts: { allowed: boolean; message?: string; object: KubeObject }[] = [];
    try {
      for (const c of cases) {
        const body = reviewBody(c.type, 'CREATE', c.object);
        const answer = await post(body);
        assert.equal(answer.status, 200, answer.body);
        const review = JSON.parse(answer.body) as { response: { uid: string; allowed: boolean; status?: { message: string } } };
        assert.equal(review.response.uid, body.request.uid);
        // The oracle renders what the webhook received: JSON has no NaN, for one.
        const received = JSON.parse(JSON.stringify(c.object)) as KubeObject;
        verdicts.push({ allowed: review.response.allowed, ...(review.response.status && { message: review.response.status.message }), object: received });
      }
    } finally {
      wires.restore();
    }
    assert.deepEqual([...new Set(wires.tripped)], [], 'nothing but the render ran');
    let refused = 0;
    for (const v of verdicts) {
      const o = v.object;
      if (typeof o.metadata.name !== 'string' || typeof o.metadata.namespace !== 'string' || o.metadata.name === '' || o.metadata.namespace === '') continue;
      const skips = fullRenderSkips(o);
      assert.equal(v.allowed, !skips, `${JSON.stringify(o).slice(0, 2000)}: ${v.message ?? 'allowed'}`);
      if (!v.allowed) {
        refused++;
        assert.match(v.message!, /^haprx would skip (Ingress|HTTPRoute) /);
        assert.doesNotMatch(v.message!, /[\n\r]/, 'one line');
      }
    }
    assert.ok(refused > 100 && refused < verdicts.length - 100, `refused ${refused} of ${verdicts.length}`);
  });

  it('answers a request whose own fields are hostile, or refuses it as malformed, and never fails', async () => {
    const wires = tripwires(() => server.port);
    try {
      for (const value of [...hostileStrings().filter((_, i) => i % 7 === 0), ...NON_STRINGS]) {
        const body = reviewBody(INGRESS, 'CREATE', baseIngress());
        for (const field of ['uid', 'namespace', 'name', 'operation', 'subResource'] as const) {
          const answer = await post({ ...body, request: { ...body.request, [field]: value } });
          assert.ok(answer.status === 200 || answer.status === 400, `${field}=${JSON.stringify(value)}: ${answer.status} ${answer.body}`);
        }
        const kind = await post({ ...body, request: { ...body.request, kind: { ...(body.request.kind as object), kind: value }, resource: { group: value, version: 'v1', resource: value } } });
        assert.ok(kind.status === 200 || kind.status === 400, kind.body);
      }
    } finally {
      wires.restore();
    }
    assert.deepEqual([...new Set(wires.tripped)], []);
  });
});
