/**
 * Fuzz: hostile values from the cluster through every helper and every shipped
 * template. Whatever a value holds (newlines, `#`, quotes, backslashes,
 * directives such as `lua-load` and `external-check`, log-format and
 * environment expansions, ACL flags), a render must succeed, and no output may
 * hold a line the templates did not mean to write: each line of haproxy.cfg
 * has a shape the templates write (section, keyword, action and the words
 * that must be ours), each map line is one key and one declared backend, each
 * certificate file only PEM blocks or crt-list lines. Every distinct render of
 * a sample also passes `haproxy -c`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { loadControllerConfig } from '../../src/cli/load-config.ts';
import type { LoadedConfig } from '../../src/cli/load-config.ts';
import { renderFixture } from '../../src/cli/test-command.ts';
import { readTemplateDir } from '../../src/config/template-dir.ts';
import { parseConfig, tokenize } from '../../src/haproxy/config.ts';
import { checkStructure } from '../../src/haproxy/structure.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { compileWatches } from '../../src/local/manifests.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { createHelpers } from '../../src/templating/helpers.ts';
import type { RenderedConfig } from '../../src/templating/rendered.ts';
import { parseCatalogue } from '../../scripts/nginx-annotations-doc.ts';
import { NON_STRINGS, hostileStrings } from './hostile.ts';

const ROOT = new URL('../..', import.meta.url).pathname;


function loadTemplates(): Promise<LoadedConfig> {
  return readTemplateDir(`${ROOT}templates`).then((raw) => {
    if (!raw.ok) throw new Error(raw.message);
    const loaded = loadControllerConfig(raw.raw);
    if (!loaded.ok) throw new Error(loaded.message);
    return loaded.config;
  });
}

async function manifests(file: string): Promise<KubeObject[]> {
  return parseAllDocuments(await readFile(`${ROOT}templates/tests/${file}`, 'utf8')).map((d) => d.toJS() as KubeObject);
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** A cluster using every feature, so that each template path runs. */
async function baseResources(): Promise<KubeObject[]> {
  const objects = [...(await manifests('_services.yaml')), ...(await manifests('_certificates.yaml')), ...(await manifests('_backend-tls.yaml'))];
  const auth = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'users', namespace: 'shop' }, data: { auth: b64('alice:$5$abcdefgh$gruCpC7VkOTspMQTTSAR8mtlO9Upms.fwqE5y16JVM.\n') } };
  const ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: 'shop',
      namespace: 'shop',
      annotations: {
        'haprx.io/timeout-connect': '2s',
        'haprx.io/timeout-server': '30s',
        'haprx.io/load-balance': 'leastconn',
        'haprx.io/ssl-redirect': 'true',
        'haprx.io/allowlist-source-range': '10.0.0.0/8, ::1',
        'haprx.io/rate-limit-requests': '100',
        'haprx.io/rate-limit-period': '10s',
        'haprx.io/auth-type': 'basic',
        'haprx.io/auth-secret': 'users',
        'haprx.io/auth-realm': 'Shop',
      },
    },
    spec: {
      ingressClassName: 'haprx',
      defaultBackend: { service: { name: 'docs', port: { number: 80 } } },
      tls: [{ hosts: ['tls.example', '*.tls.example'], secretName: 'tls-example' }],
      rules: [
        {
          host: 'tls.example',
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
              { path: '/status', pathType: 'Exact', backend: { service: { name: 'api', port: { name: 'http' } } } },
            ],
          },
        },
        { host: '*.tls.example', http: { paths: [{ path: '/x', pathType: 'ImplementationSpecific', backend: { service: { name: 'api', port: { number: 80 } } } }] } },
      ],
    },
  };
  // A control Ingress that no fuzzed field touches: it must always be served.
  const control = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'control', namespace: 'shop' },
    spec: { rules: [{ host: 'control.example', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'docs', port: { number: 80 } } } }] } }] },
  };
  const gatewayClass = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'haprx' }, spec: { controllerName: 'haprx.io/gateway-controller' } };
  const gateway = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'gw', namespace: 'shop' },
    spec: {
      gatewayClassName: 'haprx',
      listeners: [
        { name: 'http', port: 8080, protocol: 'HTTP', hostname: '*.gw.example', allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { team: 'shop' } } } } },
        { name: 'https', port: 8443, protocol: 'HTTPS', hostname: 'gw.example', tls: { certificateRefs: [{ name: 'gw-example' }] } },
        { name: 'pass', port: 9443, protocol: 'TLS', tls: { mode: 'Passthrough' } },
        { name: 'tcp', port: 9000, protocol: 'TCP' },
      ],
    },
  };
  const route = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'route', namespace: 'shop' },
    spec: {
      parentRefs: [{ name: 'gw', sectionName: 'http' }, { name: 'gw', sectionName: 'https' }],
      hostnames: ['a.gw.example', 'gw.example'],
      rules: [
        {
          matches: [
            {
              path: { type: 'PathPrefix', value: '/v1' },
              headers: [{ name: 'x-h', value: 'v' }, { name: 'x-r', type: 'RegularExpression', value: 'a+' }],
              queryParams: [{ name: 'q', value: '1' }, { name: 'r', type: 'RegularExpression', value: '[0-9]+' }],
              method: 'GET',
            },
          ],
          filters: [
            { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-set', value: 's' }], add: [{ name: 'x-add', value: 'a' }], remove: ['x-rm'] } },
            { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-rs', value: 's' }], add: [{ name: 'x-ra', value: 'a' }], remove: ['server'] } },
            { type: 'URLRewrite', urlRewrite: { hostname: 'in.example', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/v2' } } },
          ],
          backendRefs: [{ name: 'web', port: 80, weight: 3 }, { name: 'api', port: 80, weight: 1 }],
        },
        { matches: [{ path: { type: 'Exact', value: '/old' } }], filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', hostname: 'new.example', port: 8443, statusCode: 301, path: { type: 'ReplaceFullPath', replaceFullPath: '/new' } } }] },
        { matches: [{ path: { type: 'RegularExpression', value: '/re/[a-z]+' } }], filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/full' } } }], backendRefs: [{ name: 'shared', namespace: 'other', port: 80 }] },
        {
          name: 'maps',
          matches: [{ path: { type: 'PathPrefix', value: '/maps' } }, { path: { type: 'Exact', value: '/exact' } }],
          filters: [{ type: 'CORS', cors: { allowOrigins: ['https://www.a.example', 'https://*.b.example:8443'], allowMethods: ['GET', 'PUT'], allowHeaders: ['x-h'], exposeHeaders: ['x-e'], allowCredentials: true, maxAge: 60 } }],
          timeouts: { request: '2s', backendRequest: '1s' },
          retry: { codes: [503], attempts: 2 },
          backendRefs: [{ name: 'web', port: 80, filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-b', value: 'b' }] } }] }, { name: 'docs', port: 80, weight: 2 }],
        },
      ],
    },
  };
  const grpc = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GRPCRoute',
    metadata: { name: 'grpc', namespace: 'shop' },
    spec: {
      parentRefs: [{ name: 'gw', sectionName: 'http' }],
      hostnames: ['grpc.gw.example'],
      rules: [
        {
          matches: [{ method: { service: 'pkg.Svc', method: 'Call' }, headers: [{ name: 'x-g', value: 'g' }] }, { method: { type: 'RegularExpression', service: 'pkg\\..+', method: 'Get.*' } }],
          filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-gs', value: 'g' }] } }],
          backendRefs: [{ name: 'api', port: 80 }],
        },
      ],
    },
  };
  const tls = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'TLSRoute',
    metadata: { name: 'tls', namespace: 'shop' },
    spec: { parentRefs: [{ name: 'gw', sectionName: 'pass' }], hostnames: ['pass.example', '*.pass.example'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] },
  };
  const tcp = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'TCPRoute',
    metadata: { name: 'tcp', namespace: 'shop' },
    spec: { parentRefs: [{ name: 'gw', sectionName: 'tcp' }], rules: [{ backendRefs: [{ name: 'docs', port: 80, weight: 1 }, { name: 'api', port: 80, weight: 1 }] }] },
  };
  const backendTls = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'BackendTLSPolicy',
    metadata: { name: 'web-tls', namespace: 'shop' },
    spec: { targetRefs: [{ group: '', kind: 'Service', name: 'web' }], validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'backend-ca' }], hostname: 'web.internal.example' } },
  };
  const other = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'shared', namespace: 'other' }, spec: { ports: [{ name: 'http', port: 80 }] } },
    {
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: 'grant', namespace: 'other' },
      spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop' }], to: [{ group: '', kind: 'Service' }] },
    },
  ];
  const ingressClass = { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'haprx' }, spec: { controller: 'haprx.io/ingress-controller' } };
  return [...objects, auth, ingress, control, gatewayClass, gateway, route, grpc, tls, tcp, backendTls, ingressClass, ...other, ...controlCluster(objects)] as KubeObject[];
}

/** The namespace of the control objects, which share nothing with the others: whatever breaks elsewhere, they must be served unchanged. */
const CONTROL_NS = 'ctl';

/** An Ingress with TLS, a Gateway on a port of its own with an HTTPRoute, and their Service: every kind of output, in CONTROL_NS. */
function controlCluster(certificates: KubeObject[]): object[] {
  const ns = CONTROL_NS;
  const secret = certificates.find((o) => o.kind === 'Secret' && o.metadata.name === 'tls-example')!;
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'app', namespace: ns }, spec: { ports: [{ name: 'http', port: 80 }] } },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'app-1', namespace: ns, labels: { 'kubernetes.io/service-name': 'app' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
    },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'ctl-tls', namespace: ns }, type: 'kubernetes.io/tls', data: secret['data'] },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'ctl', namespace: ns },
      spec: {
        tls: [{ hosts: ['ctl.example'], secretName: 'ctl-tls' }],
        rules: [{ host: 'ctl.example', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'app', port: { number: 80 } } } }] } }],
      },
    },
    { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'ctl-class' }, spec: { controllerName: 'haprx.io/gateway-controller' } },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'ctl-gw', namespace: ns },
      spec: { gatewayClassName: 'ctl-class', listeners: [{ name: 'http', port: 9090, protocol: 'HTTP', hostname: 'ctl-gw.example' }] },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'ctl-route', namespace: ns },
      spec: { parentRefs: [{ name: 'ctl-gw' }], rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: 'app', port: 80 }] }] },
    },
  ];
}

const isControl = (o: KubeObject) => o.metadata.namespace === CONTROL_NS || o.metadata.name === 'ctl-class';

/** What the control objects contribute to a render: their sections, map entries, crt-list lines and certificate file. */
function controlPart(config: RenderedConfig): string[] {
  const parsed = parseConfig(config.main);
  const sections = parsed.sections
    .filter((s) => (s.type === 'backend' && s.name.startsWith('be_ctl_')) || (s.type === 'frontend' && s.name === 'gw_9090'))
    .map((s) => `${s.type} ${s.name}\n${s.lines.map((l) => [l.keyword, ...l.args].join(' ')).join('\n')}`);
  const mapLines = Object.entries(config.maps).flatMap(([name, text]) => text.split('\n').filter((l) => l.includes('ctl.example')).map((l) => `${name}: ${l}`));
  const crtLines = Object.entries(config.certs).flatMap(([name, text]) => (name.endsWith('.crtlist') ? text.split('\n').filter((l) => l.includes('ctl')).map((l) => `${name}: ${l}`) : []));
  const files = Object.entries(config.certs).filter(([name]) => name.includes('ctl')).map(([name, text]) => `${name}: ${text.length}`);
  return [...sections, ...mapLines, ...crtLines, ...files].sort();
}

/** Where a hostile value goes: an object (kind/name) and a path in it; `encode` turns it into what the field holds. */
interface Field {
  kind: string;
  name: string;
  path: (string | number)[];
  encode?: (value: unknown) => unknown;
}

const ann = (key: string): Field => ({ kind: 'Ingress', name: 'shop', path: ['metadata', 'annotations', `haprx.io/${key}`] });
const rule0 = ['spec', 'rules', 0];
const match0 = [...rule0, 'matches', 0];
const filters0 = [...rule0, 'filters'];
const asBase64 = (value: unknown) => (typeof value === 'string' ? b64(value) : value);

const FIELDS: Field[] = [
  { kind: 'Ingress', name: 'shop', path: ['metadata', 'name'] },
  { kind: 'Ingress', name: 'shop', path: ['metadata', 'namespace'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'ingressClassName'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'host'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 1, 'host'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'http', 'paths', 0, 'path'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'http', 'paths', 1, 'path'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'http', 'paths', 0, 'pathType'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'http', 'paths', 0, 'backend', 'service', 'name'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'http', 'paths', 0, 'backend', 'service', 'port', 'number'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'rules', 0, 'http', 'paths', 1, 'backend', 'service', 'port', 'name'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'defaultBackend', 'service', 'name'] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'tls', 0, 'hosts', 0] },
  { kind: 'Ingress', name: 'shop', path: ['spec', 'tls', 0, 'secretName'] },
  ann('timeout-connect'),
  ann('timeout-server'),
  ann('timeout-tunnel'),
  ann('load-balance'),
  ann('ssl-redirect'),
  ann('allowlist-source-range'),
  ann('rate-limit-requests'),
  ann('rate-limit-period'),
  ann('auth-type'),
  ann('auth-secret'),
  ann('auth-realm'),
  { kind: 'Secret', name: 'users', path: ['data', 'auth'], encode: asBase64 },
  { kind: 'Secret', name: 'tls-example', path: ['data', 'tls.crt'], encode: asBase64 },
  { kind: 'Secret', name: 'gw-example', path: ['data', 'tls.key'], encode: asBase64 },
  { kind: 'Service', name: 'web', path: ['spec', 'ports', 0, 'port'] },
  { kind: 'Service', name: 'api', path: ['spec', 'ports', 0, 'name'] },
  { kind: 'EndpointSlice', name: 'web-1', path: ['endpoints', 0, 'addresses', 0] },
  { kind: 'EndpointSlice', name: 'web-1', path: ['ports', 0, 'port'] },
  { kind: 'EndpointSlice', name: 'web-1', path: ['ports', 0, 'name'] },
  { kind: 'EndpointSlice', name: 'api-1', path: ['addressType'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 0, 'hostname'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 0, 'port'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 0, 'name'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 1, 'protocol'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 1, 'tls', 'certificateRefs', 0, 'name'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 0, 'allowedRoutes', 'namespaces', 'selector', 'matchLabels', 'team'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'hostnames', 0] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'parentRefs', 0, 'sectionName'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'path', 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 1, 'matches', 0, 'path', 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 2, 'matches', 0, 'path', 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'headers', 0, 'name'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'headers', 0, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'headers', 1, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'queryParams', 0, 'name'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'queryParams', 0, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'queryParams', 1, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...match0, 'method'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 0, 'requestHeaderModifier', 'set', 0, 'name'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 0, 'requestHeaderModifier', 'set', 0, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 0, 'requestHeaderModifier', 'add', 0, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 0, 'requestHeaderModifier', 'remove', 0] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 1, 'responseHeaderModifier', 'set', 0, 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 2, 'urlRewrite', 'hostname'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 2, 'urlRewrite', 'path', 'replacePrefixMatch'] },
  { kind: 'HTTPRoute', name: 'route', path: [...filters0, 0, 'type'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 1, 'filters', 0, 'requestRedirect', 'hostname'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 1, 'filters', 0, 'requestRedirect', 'path', 'replaceFullPath'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 1, 'filters', 0, 'requestRedirect', 'scheme'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 1, 'filters', 0, 'requestRedirect', 'port'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 1, 'filters', 0, 'requestRedirect', 'statusCode'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 2, 'filters', 0, 'urlRewrite', 'path', 'replaceFullPath'] },
  { kind: 'HTTPRoute', name: 'route', path: [...rule0, 'backendRefs', 0, 'name'] },
  { kind: 'HTTPRoute', name: 'route', path: [...rule0, 'backendRefs', 0, 'port'] },
  { kind: 'HTTPRoute', name: 'route', path: [...rule0, 'backendRefs', 1, 'weight'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 2, 'backendRefs', 0, 'namespace'] },
  { kind: 'ReferenceGrant', name: 'grant', path: ['spec', 'to', 0, 'kind'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'filters', 0, 'cors', 'allowOrigins', 0] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'filters', 0, 'cors', 'allowOrigins', 1] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'filters', 0, 'cors', 'allowMethods', 0] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'filters', 0, 'cors', 'allowHeaders', 0] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'filters', 0, 'cors', 'exposeHeaders', 0] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'filters', 0, 'cors', 'maxAge'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'timeouts', 'request'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'retry', 'codes', 0] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'retry', 'attempts'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'name'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'matches', 0, 'path', 'value'] },
  { kind: 'HTTPRoute', name: 'route', path: ['spec', 'rules', 3, 'backendRefs', 0, 'filters', 0, 'requestHeaderModifier', 'set', 0, 'value'] },
  { kind: 'GRPCRoute', name: 'grpc', path: ['spec', 'rules', 0, 'matches', 0, 'method', 'service'] },
  { kind: 'GRPCRoute', name: 'grpc', path: ['spec', 'rules', 0, 'matches', 0, 'method', 'method'] },
  { kind: 'GRPCRoute', name: 'grpc', path: ['spec', 'rules', 0, 'matches', 1, 'method', 'service'] },
  { kind: 'GRPCRoute', name: 'grpc', path: ['spec', 'rules', 0, 'matches', 0, 'headers', 0, 'value'] },
  { kind: 'GRPCRoute', name: 'grpc', path: ['spec', 'hostnames', 0] },
  { kind: 'TLSRoute', name: 'tls', path: ['spec', 'hostnames', 1] },
  { kind: 'TCPRoute', name: 'tcp', path: ['spec', 'rules', 0, 'backendRefs', 0, 'name'] },
  { kind: 'BackendTLSPolicy', name: 'web-tls', path: ['spec', 'validation', 'hostname'] },
  { kind: 'BackendTLSPolicy', name: 'web-tls', path: ['spec', 'validation', 'caCertificateRefs', 0, 'name'] },
  { kind: 'ConfigMap', name: 'backend-ca', path: ['data', 'ca.crt'] },
  { kind: 'Gateway', name: 'gw', path: ['spec', 'listeners', 2, 'tls', 'mode'] },
];

/**
 * Renders the base with one field set to a hostile value. Only the resource set
 * holding the changed object is rebuilt: templates cannot change stores, so the
 * others are shared between renders, which keeps a thousand renders quick.
 */
function fuzzRenderer(loaded: LoadedConfig, base: KubeObject[], values: Record<string, unknown> = loaded.config.values) {
  const watches = compileWatches(loaded.config.watch);
  assert.ok(watches.ok);
  const setsOf = (object: KubeObject) => watches.watches.filter((w) => w.matches(object)).map((w) => w.name);
  const build = (name: string, objects: KubeObject[]) => {
    const store = new Store(name, loaded.config.watch.find((w) => w.name === name));
    for (const o of objects) if (setsOf(o).includes(name)) store.apply({ type: 'upsert', resource: name, object: o });
    return store;
  };
  const shared = Object.fromEntries(loaded.config.watch.map((w) => [w.name, build(w.name, structuredClone(base))]));
  return (field: Field, value: unknown) => {
    const index = base.findIndex((o) => o.kind === field.kind && o.metadata.name === field.name);
    assert.ok(index >= 0, `${field.kind} ${field.name} is in the base`);
    const changed = structuredClone(base[index]!);
    let at: Record<string | number, unknown> = changed as unknown as Record<string, unknown>;
    for (const key of field.path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
    at[field.path.at(-1)!] = field.encode ? field.encode(value) : value;
    const objects = base.map((o, i) => (i === index ? changed : o));
    const resources = { ...shared };
    for (const name of setsOf(base[index]!)) resources[name] = build(name, structuredClone(objects));
    return renderTemplates(loaded.templates, { resources, values });
  };
}

/**
 * The lines the templates mean to write in haproxy.cfg: per section type, the
 * keyword, the word after it where that is the action, and words that must be
 * exactly ours. Anything else is an injected line.
 */
function lineProblem(section: string, words: string[], backends: ReadonlySet<string>): string | undefined {
  const [keyword, ...args] = words;
  const is = (...expected: string[]) => expected.every((w, i) => args[i] === w);
  const name = /^[A-Za-z0-9_.:-]+$/;
  const ok = (() => {
    switch (section) {
      case 'global':
        return (
          (keyword === 'expose-experimental-directives' && args.length === 0) ||
          (keyword === 'lua-load' && is('general/nginx-auth.lua') && args.length === 1) ||
          (keyword === 'maxconn' && args.length === 1) ||
          (keyword === 'ssl-default-bind-options' && is('ssl-min-ver', 'TLSv1.2')) ||
          (keyword === 'hard-stop-after' && args.length === 1 && /^\d+m$/.test(args[0]!))
        );
      case 'defaults':
        return ['mode', 'option', 'timeout'].includes(keyword!) && args.length <= 2;
      case 'userlist':
        return keyword === 'user' && args.length === 3 && /^[A-Za-z0-9._@-]+$/.test(args[0]!) && args[1] === 'password' && /^\$[A-Za-z0-9./$=]+$/.test(args[2]!);
      case 'frontend':
        if (keyword === 'bind') {
          const tls = is(args[0]!, 'ssl', 'crt-list') && /^ssl\/[A-Za-z0-9_.-]+$/.test(args[3]!) && is(args[0]!, 'ssl', 'crt-list', args[3]!, 'alpn', 'h2,http/1.1');
          const clientCa = args.length === 10 && is(args[0]!, 'ssl', 'crt-list', args[3]!, 'alpn', 'h2,http/1.1', 'ca-ignore-err', 'all', 'crt-ignore-err', 'all');
          // ingress-nginx's ssl-passthrough puts the HTTPS frontend behind a TCP one, on an abstract socket.
          const behind = /^abns@haprx-https-\d+$/.test(args[0]!) && args[1] === 'accept-proxy' && is(args[0]!, 'accept-proxy', 'ssl', 'crt-list', args[4]!, 'alpn', 'h2,http/1.1') && /^ssl\/[A-Za-z0-9_.-]+$/.test(args[4]!);
          if (behind) return args.length === 7 || (args.length === 11 && is(args[0]!, 'accept-proxy', 'ssl', 'crt-list', args[4]!, 'alpn', 'h2,http/1.1', 'ca-ignore-err', 'all', 'crt-ignore-err', 'all'));
          return /^[0-9.:[\]a-f]*:[0-9]+$/.test(args[0]!) && (args.length === 1 || (tls && args.length === 6) || clientCa);
        }
        if (keyword === 'default_backend') return backends.has(args[0]!);
        if (keyword === 'use_backend') return backends.has(args[0]!) || /^%\[var\(txn\.(hostpath|wildpath|anypath|route)\)(,map(_beg)?\(maps\/(exact|prefix)\.map\))?\]$/.test(args[0]!) || args[0] === '%[req.ssl_sni,lower,map(maps/passthrough.map)]' || args[0] === '%[var(txn.gwb)]';
        if (keyword === 'mode') return is('tcp') && args.length === 1;
        if (keyword === 'tcp-request') {
          return (is('inspect-delay', '5s') && args.length === 2) || (is('content', 'accept', 'if', '{', 'req.ssl_hello_type', '1', '}') && args.length === 7) || (args[0] === 'content' && ['set-var(txn.host)', ...GATEWAY_VARS].includes(args[1]!));
        }
        if (keyword === 'acl' && args[1] === 'req.hdr(origin)') return /^[A-Za-z0-9_.:-]+_cors$/.test(args[0]!) && args[2] === '-m' && (args[3] === 'found' ? args.length === 4 : args[4] === '--');
        if (keyword === 'acl') return /^gw\d+_(host|path|h\d+|q\d+|m)$/.test(args[0]!) && /^(var\(txn\.host\)|path|method|req\.fhdr\([^()]+\)|url_param\([^(),]+\))$/.test(args[1]!) && (args[1] === 'method' ? args.length === 3 : args[2] === '-m' && args[4] === '--');
        if (keyword === 'http-request') {
          // ingress-nginx: the route in txn.route (a declared backend, or a map lookup), a regex location's number, a canary's verdict.
          if (args[0] === 'set-var(txn.route)') return (/^str\((.+)\)$/.test(args[1]!) && backends.has(args[1]!.slice(4, -1))) || /^var\(txn\.(hostpath|wildpath|anypath)\),map(_beg)?\(maps\/(exact|prefix)\.map\)$/.test(args[1]!);
          if (args[0] === 'set-var(txn.ngxloc)') return /^str\(\d+\)$/.test(args[1]!);
          if (args[0] === 'set-var(txn.ngxcanary)') return /^str\([01]\)$/.test(args[1]!);
          if (args[0] === 'set-var(txn.wildhost)') return args[1] === 'var(txn.host),regsub(^[^.]+[.],*.)';
          if (args[0] === 'normalize-uri') return ['path-merge-slashes', 'path-strip-dot', 'path-strip-dotdot', 'percent-decode-unreserved'].includes(args[1]!);
          return [...HOST_VARS, ...GATEWAY_VARS, 'set-header', 'add-header', 'del-header', 'redirect', 'set-path', 'return'].includes(args[0]!);
        }
        if (keyword === 'http-after-response') return ['set-header', 'add-header', 'del-header'].includes(args[0]!);
        return false;
      case 'backend':
        if (keyword === 'mode') return is('tcp') && args.length === 1;
        if (keyword === 'server' && args[0] === 'https') return /^abns@haprx-https-\d+$/.test(args[1]!) && args[2] === 'send-proxy-v2' && args.length === 3;
        if (keyword === 'server') return args.length >= 2 && name.test(args[0]!) && /^(\d+\.\d+\.\d+\.\d+|\[[0-9a-f:.]+\]):\d+$/.test(args[1]!) && serverWordsProblem(args.slice(2)) === undefined;
        if (keyword === 'acl') return ['allowed_source', 'ngx_allow', 'ngx_deny'].includes(args[0]!) && args[1] === 'src' && args[2] === '--' && args.slice(3).every((a) => /^[0-9a-f.:/]+$/.test(a));
        if (keyword === 'http-request') {
          if (args.join(' ') === 'set-timeout server var(txn.gwto) if { var(txn.gwto) -m found }') return true;
          return [
            'deny', 'redirect', 'track-sc0', 'auth', 'return', 'track-sc1', 'track-sc2', 'set-header', 'del-header', 'replace-path', 'lua.haprx_nginx_auth',
            'set-var(txn.ngxhash)', 'set-var(txn.ngxnewcookie)', 'set-var-fmt(txn.ngxhash)', 'set-var(txn.ngxorigin)', 'set-var-fmt(txn.ngxauthurl)',
          ].includes(args[0]!);
        }
        if (keyword === 'http-response') return is('add-header', 'Set-Cookie') || args.join(' ') === 'set-var(txn.gwsrv) bool(1)';
        if (keyword === 'http-after-response') return ['set-header', 'add-header'].includes(args[0]!) || args.join(' ') === 'set-status 503 if { status 502 } !{ var(txn.gwsrv) -m found }';
        if (keyword === 'tcp-request') return args.join(' ') === 'content reject';
        if (keyword === 'retries') return args.length === 1 && /^\d+$/.test(args[0]!);
        if (keyword === 'retry-on') return args.every((a) => /^(conn-failure|empty-response|response-timeout|\d{3})$/.test(a));
        return ['balance', 'hash-type', 'timeout', 'stick-table'].includes(keyword!);
      default:
        return false;
    }
  })();
  return ok ? undefined : `unexpected line in ${section}: ${JSON.stringify(words)}`;
}

/** A rule's arguments without the patterns of its inline ACLs (after `--`, up to `}`), which are literal text, not log-format. */
function logFormatArgs(args: string[]): string[] {
  const out: string[] = [];
  let pattern = false;
  for (const a of args) {
    if (a === '--') pattern = true;
    else if (a === '}') pattern = false;
    else if (!pattern) out.push(a);
  }
  return out;
}

/**
 * What is wrong with the words after a server's address, if anything: only TLS and HTTP/2
 * settings, from ingress-nginx's annotations, a Service's appProtocol or a BackendTLSPolicy.
 */
function serverWordsProblem(words: string[]): string | undefined {
  const values: Record<string, RegExp> = {
    verify: /^(none|required)$/,
    'ca-file': /^(ssl\/[a-z0-9_-]+(\.ca)?\.pem|@system-ca)$/,
    crt: /^ssl\/[a-z0-9_-]+\.client\.pem$/,
    verifyhost: /^[a-z0-9.-]+$/,
    sni: /^(str\([a-z0-9.-]+\)|var\(txn\.host\))$/,
    ciphers: /^[A-Za-z0-9_:+!@=.-]+$/,
    'ssl-min-ver': /^TLSv1\.[0-3]$/,
    'ssl-max-ver': /^TLSv1\.[0-3]$/,
    alpn: /^h2$/,
    proto: /^h2$/,
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w === 'ssl') continue;
    const pattern = values[w];
    if (!pattern || !pattern.test(words[i + 1] ?? '')) return w;
    i++;
  }
  return undefined;
}

/** Variables the frontends set: the request's host and path, for the Ingress maps. */
const HOST_VARS = ['set-var(txn.host)', 'set-var(txn.path)', 'set-var(txn.hostpath)', 'set-var(txn.wildpath)', 'set-var(txn.anypath)'];
/** What the Gateway API rules set (gateway-rules): the listener, the match, the rule, its backend and timeout, CORS. */
const GATEWAY_VARS = ['gwg', 'gwsni', 'gwc', 'gwm', 'gwsfx', 'gwcr', 'gwr', 'gwrnd', 'gwpick', 'gwb', 'gwbi', 'gwto', 'gwcors'].map((v) => `set-var(txn.${v})`);

/** The characters of a line that haproxy reads outside single quotes (an escaped character counts as quoted). */
function outsideSingleQuotes(raw: string): string {
  let out = '';
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '\\') i++;
    else if (!quoted) out += c;
  }
  return out;
}

/** The sample expressions the templates write into log-format arguments. */
const LF_EXPRESSION = new RegExp(
  `^%\\[(${[
    'var\\(txn\\.host\\)', 'path', 'path,bytes\\(\\d+\\)', 'query', 'pathq', 'pathq,regsub\\(/\\$,\\)', 'pathq,url_enc', 'ssl_fc,iif\\(https,http\\)', 'dst_port', 'req\\.hdr\\(host\\)', 'src',
    'var\\(txn\\.(ngxhash|ngxorigin|ngxauthwww|ngxauthcookie)\\)', 'date\\(\\d+\\),http_date', 'ssl_c_verify', 'ssl_c_[si]_dn\\(,0,rfc2253\\)', 'ssl_c_der,base64',
    'req\\.fhdr\\([a-z0-9-]+,1\\)', 'req\\.cook\\([A-Za-z0-9_]+\\)', 'url_param\\([A-Za-z0-9_]+\\)',
    // The Gateway API rules: the backend picked, and CORS.
    'var\\(txn\\.(gwb|gwcors)\\)', 'req\\.hdr\\((origin|access-control-request-method)\\)', 'req\\.fhdr\\(access-control-request-headers\\)',
  ].join('|')})\\]`,
);

/** A % that neither is doubled nor starts one of the templates' expressions, read left to right as haproxy does. */
function strayPercent(arg: string): boolean {
  for (let i = 0; i < arg.length; i++) {
    if (arg[i] !== '%') continue;
    if (arg[i + 1] === '%') {
      i++;
      continue;
    }
    const own = LF_EXPRESSION.exec(arg.slice(i));
    if (!own) return true;
    i += own[0].length - 1;
  }
  return false;
}

/** Everything wrong with a render, by the rules above; empty when it only holds lines the templates mean. */
export function injectionProblems(config: RenderedConfig): string[] {
  const problems: string[] = [];
  const control = (file: string, text: string) => {
    if (/[\p{Cc}]/u.test(text.replaceAll('\n', ''))) problems.push(`${file} holds a control character`);
  };
  control('haproxy.cfg', config.main);
  const parsed = parseConfig(config.main);
  for (const e of parsed.errors) problems.push(`haproxy.cfg:${e.line}: ${e.message}`);
  for (const o of parsed.orphans) problems.push(`haproxy.cfg:${o.line}: line outside a section`);
  for (const p of checkStructure(config)) problems.push(`structure: ${p.file}:${p.line ?? ''} ${p.message}`);
  const types = parsed.sections.map((s) => s.type);
  if (types.filter((t) => t === 'global').length !== 1 || types.filter((t) => t === 'defaults').length !== 1) problems.push('not exactly one global and one defaults section');
  const backends = new Set(parsed.sections.filter((s) => s.type === 'backend').map((s) => s.name));
  // Outside single quotes (where haproxy interprets nothing) no environment expansion, and double
  // quotes only in the templates' own fixed texts.
  config.main.split('\n').forEach((raw, i) => {
    const unquoted = outsideSingleQuotes(raw);
    if (unquoted.includes('$')) problems.push(`haproxy.cfg:${i + 1}: unquoted $`);
    if (unquoted.includes('"') && !/^ {2}http-request return status (404|500|503) content-type text\/plain string "[a-z ]+"$/.test(raw)) problems.push(`haproxy.cfg:${i + 1}: unexpected double quote`);
  });
  for (const s of parsed.sections) {
    if (!['global', 'defaults', 'userlist', 'frontend', 'backend'].includes(s.type)) problems.push(`unexpected section ${s.type}`);
    if (s.type === 'frontend' && !/^(https?|gw_\d+|https_passthrough)$/.test(s.name)) problems.push(`unexpected frontend ${s.name}`);
    for (const line of s.lines) {
      if (line.comment !== '' && line.comment !== 'haprx:drain') problems.push(`haproxy.cfg:${line.line}: unexpected comment ${JSON.stringify(line.comment)}`);
      const problem = lineProblem(s.type, [line.keyword, ...line.args], backends);
      if (problem) problems.push(`haproxy.cfg:${line.line}: ${problem}`);
      // In rule arguments (log-format strings among them) every % is doubled, or starts an expression the templates write.
      if (line.keyword.startsWith('http-') && logFormatArgs(line.args).some(strayPercent)) {
        problems.push(`haproxy.cfg:${line.line}: a % that is not the templates' own: ${JSON.stringify(line.args)}`);
      }
    }
  }
  // Each map's values: backends (Ingress), "<rank>/<rule>", "<backend>/<index>", milliseconds.
  const mapValue: Record<string, (v: string) => boolean> = {
    'gateway-paths.map': (v) => /^\d+\/[A-Za-z0-9_.:-]+$/.test(v),
    'gateway-prefixes.map': (v) => /^\d+\/[A-Za-z0-9_.:-]+$/.test(v),
    'gateway-backends.map': (v) => /^[A-Za-z0-9_.:-]+\/\d+$/.test(v) && backends.has(v.split('/')[0]!),
    'gateway-timeouts.map': (v) => /^\d+$/.test(v),
  };
  for (const [name, text] of Object.entries(config.maps)) {
    control(`maps/${name}`, text);
    for (const line of text.split('\n').filter((l) => l !== '')) {
      const parts = line.split(' ');
      const valueOk = mapValue[name] ?? ((v: string) => backends.has(v));
      if (parts.length !== 2 || !/^[a-z0-9*.][!-~]*$/.test(parts[0]!) || !valueOk(parts[1]!)) problems.push(`maps/${name}: unexpected line ${JSON.stringify(line)}`);
    }
  }
  for (const [name, text] of Object.entries(config.certs)) {
    control(`ssl/${name}`, text);
    if (name.endsWith('.crtlist')) {
      for (const line of text.split('\n').filter((l) => l !== '')) {
        const [file, ...rest] = line.split(' ');
        // ingress-nginx's client certificates: the CA of the hosts, a file of the render.
        const ca = rest[0] === '[ca-file' && rest[2] === 'verify' && rest[3] === 'optional]' && Object.hasOwn(config.certs, (rest[1] ?? '').slice(4)) && rest[1]!.startsWith('ssl/');
        const hosts = ca ? rest.slice(4) : rest;
        const ok = file !== undefined && file.startsWith('ssl/') && Object.hasOwn(config.certs, file.slice(4)) && hosts.every((x) => /^(\*\.)?[a-z0-9.-]+$/.test(x));
        if (!ok) problems.push(`ssl/${name}: unexpected line ${JSON.stringify(line)}`);
      }
    } else if (!/^(-----BEGIN [A-Z ]+-----\n([A-Za-z0-9+/=]{1,64}\n)+-----END [A-Z ]+-----\n)+$/.test(text)) {
      problems.push(`ssl/${name} is not only PEM blocks`);
    }
  }
  for (const [name, text] of Object.entries(config.files)) control(`general/${name}`, text);
  return problems;
}

/** haproxy itself accepts a sample of the distinct outputs (every fifth), two checks at a time; returns the sample's size. */
async function validateSample(renders: ReadonlyMap<string, RenderedConfig>): Promise<number> {
  const sample = [...renders.values()].filter((_, i) => i % 5 === 0);
  const validators = [new Validator({ cacheSize: 0 }), new Validator({ cacheSize: 0 })];
  await Promise.all(
    validators.map(async (validator, n) => {
      for (const config of sample.filter((_, i) => i % validators.length === n)) {
        const verdict = await validator.validate(config);
        assert.ok(verdict.ok, `haproxy -c refused a render: ${verdict.ok ? '' : JSON.stringify(verdict.problems)}\n${config.main}`);
      }
    }),
  );
  return sample.length;
}

describe('fuzz: hostile values', () => {
  const hostile = hostileStrings();

  it('has at least 1,000 distinct hostile strings', () => {
    assert.ok(hostile.length >= 1000, `${hostile.length}`);
  });

  it('through every helper: each refuses, or returns a value that stays one value', () => {
    const h = createHelpers({ maps: new Set(['a.map']), files: new Set(), certs: new Set() });
    const refused = (fn: () => unknown): boolean => {
      try {
        fn();
        return false;
      } catch (err) {
        if (err instanceof TemplateAbort) return true;
        throw err;
      }
    };
    const safe = /^[!-~]+$/;
    let checks = 0;
    for (const value of [...hostile, ...NON_STRINGS]) {
      const v = value as string;
      const oneWord = (fn: () => string, inner?: (s: string) => void) => {
        let out: string | undefined;
        if (refused(() => (out = fn()))) return;
        const tokens = tokenize(`x ${out!} y`);
        assert.ok(!('error' in tokens), `${JSON.stringify(value)} -> ${JSON.stringify(out)}`);
        assert.equal(tokens.args.length, 3, `${JSON.stringify(value)} -> ${JSON.stringify(out)} is one word`);
        inner?.(tokens.args[1]!);
      };
      oneWord(() => h.word(value), (w) => assert.equal(w, String(value)));
      const key = refused(() => h.mapKey(value)) ? undefined : h.mapKey(value);
      if (key !== undefined) assert.match(key, /^[^\s#][^\s]*$/u);
      oneWord(() => h.word(h.lfText(value)), (w) => assert.equal(w.replaceAll('%%', ''), w.replaceAll('%%', '').replaceAll('%', ''), 'no single %'));
      if (!refused(() => h.regexEscape(value))) assert.equal(new RegExp(`^${h.regexEscape(value)}$`, 's').test(String(value)), true);
      if (!refused(() => h.identifier(value))) assert.match(h.identifier(value, 'x'), /^[A-Za-z0-9_.:-]+$/);
      if (!refused(() => h.digest(value))) assert.match(h.digest(value), /^[0-9a-f]{12}$/);
      for (const [check, accepted] of [
        [h.isHostname, /^(\*\.)?[A-Za-z0-9.-]+$/],
        [h.isPath, /^\/[!-~]*$/],
        [h.isIP, /^[0-9a-fA-F.:]+$/],
        [h.isCidr, /^[0-9a-fA-F.:/]+$/],
        [h.isPort, /^[0-9]+$/],
        [h.isDuration, /^[0-9]+[a-z]*$/],
        [h.isHeaderName, safe],
        [h.isHeaderValue, /^[!-~]([ -~]*[!-~])?$/],
        [h.isRegex, /^[ -~]+$/],
      ] as [(x: unknown) => boolean, RegExp][]) {
        const result = check(value);
        assert.equal(typeof result, 'boolean');
        if (result) assert.match(String(value), accepted, `${check.name} accepted ${JSON.stringify(value)}`);
        checks++;
      }
      if (h.isHostname(value)) oneWord(() => h.word(value), (w) => assert.equal(w, v));
      if (!refused(() => h.b64decode(value))) assert.equal(typeof h.b64decode(value), 'string');
      assert.equal(h.tlsBundle(value, value), undefined);
      assert.equal(h.caBundle(value), undefined);
      const users = h.htpasswd(value);
      for (const u of users.users) {
        assert.match(u.name, /^[A-Za-z0-9._@-]+$/);
        assert.match(u.hash, /^\$[A-Za-z0-9./$=]+$/);
      }
      for (const path of [h.mapPath, h.filePath, h.certPath]) assert.equal(refused(() => path(v)), true, `${JSON.stringify(value)} is not a template`);
      assert.equal(refused(() => h.fail(value)), true);
      assert.equal(refused(() => h.warn('x', value)), true, 'no render is running');
      for (const fn of [() => h.get({ a: value }, v), () => h.sortBy([{ k: value }, { k: 'b' }], 'k'), () => h.uniq([value, value]), () => h.groupBy([{ k: value }], 'k'), () => h.keys(value), () => h.entries(value)]) {
        refused(fn);
      }
    }
    assert.ok(checks >= 9 * 1000);
  });

  it('through every shipped template: renders never fail, and hold only the lines the templates mean to write', async (t) => {
    const loaded = await loadTemplates();
    const base = await baseResources();
    const baseline = renderFixture(loaded, { resources: base, values: {} });
    assert.ok(baseline.ok, 'the base renders');
    assert.deepEqual(injectionProblems(baseline.config), [], 'the base holds only expected lines');
    assert.deepEqual(baseline.warnings, [], 'the base is valid');
    // The base reaches every kind of line: a shape check that never fires would prove nothing.
    for (const needle of ['userlist ', 'user alice', 'frontend gw_8080', 'ssl crt-list', 'http-after-response', 'acl gw', 'http-request redirect', 'http-request set-path', 'http-request auth', 'stick-table', 'acl allowed_source', 'frontend gw_9443\n  mode tcp', 'frontend gw_9000\n  mode tcp', 'retry-on', ' proto h2', ' ca-file ssl/', '_cors req.hdr(origin)', 'return status 421']) {
      assert.ok(baseline.config.main.includes(needle), needle);
    }
    for (const [map, needle] of [['gateway-backends.map', 'be_other_shared_80/0'], ['gateway-paths.map', '|pass.example '], ['gateway-prefixes.map', '/maps/ '], ['gateway-timeouts.map', ' 1000'], ['gateway-paths.map', '|*.pass.example ']]) {
      assert.ok(baseline.config.maps[map!]?.includes(needle!), `${map}: ${needle}`);
    }

    const render = fuzzRenderer(loaded, base);
    const values: unknown[] = [...hostile, ...NON_STRINGS];
    const renders = new Map<string, RenderedConfig>();
    let count = 0;
    let warned = 0;
    for (const [i, value] of values.entries()) {
      // Each value through two fields (every field, across the corpus); every template renders each.
      const fields = [FIELDS[i % FIELDS.length]!, FIELDS[(i * 7 + 3) % FIELDS.length]!];
      for (const field of fields) {
        const result = render(field, value);
        count++;
        if (!result.ok) assert.fail(`${field.kind} ${field.name} ${field.path.join('.')} = ${JSON.stringify(value)}: render failed: ${result.error.message}`);
        const problems = injectionProblems(result.config);
        if (problems.length > 0) assert.fail(`${field.kind} ${field.name} ${field.path.join('.')} = ${JSON.stringify(value)}:\n${problems.join('\n')}`);
        assert.ok(result.config.maps['exact.map']!.includes('control.example/') || result.config.maps['prefix.map']!.includes('control.example/'), 'the control Ingress is still served');
        if (result.warnings.length > 0) warned++;
        renders.set(result.config.hash, result.config);
      }
    }
    t.diagnostic(`${count} renders of ${values.length} values through ${FIELDS.length} fields; ${warned} raised warnings; ${renders.size} distinct outputs`);
    assert.ok(warned > values.length, 'hostile values are reported, not silently dropped');

    t.diagnostic(`${await validateSample(renders)} distinct outputs checked with haproxy -c`);
  });
});

/** Values of the wrong shape for any field: scalars where maps are, maps where lists are, nulls, and huge or deep values. */
function wrongShapes(): unknown[] {
  let deep: unknown = { end: true };
  for (let i = 0; i < 300; i++) deep = { a: [deep] };
  return ['oops', 7, -1, 1.5, true, null, [], {}, ['x'], [null], [[]], [7], { a: { b: 'c' } }, 'x'.repeat(200_000), Array.from({ length: 5_000 }, (_, i) => `v${i}`), deep];
}

/** Every path into an object below its identity (apiVersion, kind, metadata.name and namespace): maps, lists and values. */
function pathsOf(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const keys: (string | number)[] = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return keys.flatMap((key) => {
    if (at.length === 0 && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) return key === 'metadata' ? pathsOf((value as Record<string, unknown>)[key], [key]) : [];
    if (at.length === 1 && at[0] === 'metadata' && (key === 'name' || key === 'namespace')) return [];
    const path = [...at, key];
    return [path, ...pathsOf((value as Record<string | number, unknown>)[key], path)];
  });
}

/** Text that only the given object puts into a render: gone when the object is skipped whole. */
const OWN_TEXT: Record<string, string> = { 'Ingress shop/shop': 'tls.example/', 'HTTPRoute shop/route': 'gw_shop_route' };

describe('fuzz: structurally wrong objects', () => {
  it('a field of the wrong shape skips only its object, with a warning naming it; every other object is still served', async (t) => {
    const loaded = await loadTemplates();
    const base = await baseResources();
    const baseline = renderFixture(loaded, { resources: base, values: {} });
    assert.ok(baseline.ok, 'the base renders');
    assert.deepEqual(baseline.warnings, []);
    const control = controlPart(baseline.config);
    // The control objects reach every kind of output, or an unchanged control part would prove nothing.
    for (const needle of ['backend be_ctl_app_80', 'server srv_10.1.0.1_8080', 'frontend gw_9090', 'prefix.map: ctl.example', 'https.crtlist: ssl/', '.pem: ']) {
      assert.ok(control.some((c) => c.includes(needle)), `${needle} in ${JSON.stringify(control)}`);
    }

    const render = fuzzRenderer(loaded, base);
    const shapes = wrongShapes();
    const refOf = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
    const named = new Set(base.map(refOf));
    const warnedKinds = new Set<string>();
    let renders = 0;
    let skips = 0;
    let n = 0;
    const outputs = new Map<string, RenderedConfig>();
    for (const object of base.filter((o) => !isControl(o))) {
      for (const path of pathsOf(object)) {
        n++;
        // Three shapes for each path, every shape across the paths.
        for (const shape of [shapes[n % shapes.length], shapes[(n * 5 + 2) % shapes.length], shapes[(n * 11 + 7) % shapes.length]]) {
          const what = `${refOf(object)} ${path.join('.')} = ${JSON.stringify(shape)?.slice(0, 60)}`;
          const result = render({ kind: object.kind!, name: object.metadata.name, path }, shape);
          renders++;
          if (!result.ok) assert.fail(`${what}: render failed: ${result.error.template}:${result.error.line}: ${result.error.message}`);
          const problems = injectionProblems(result.config);
          if (problems.length > 0) assert.fail(`${what}:\n${problems.join('\n')}`);
          assert.deepEqual(controlPart(result.config), control, `${what}: the control objects are served unchanged`);
          for (const w of result.warnings) {
            assert.ok(w.object === undefined || named.has(w.object) || !w.ref, `${what}: a warning about an object that is not in the cluster: ${JSON.stringify(w)}`);
            assert.ok(!w.object?.includes(`${CONTROL_NS}/`), `${what}: a warning about a control object: ${JSON.stringify(w)}`);
            assert.ok(typeof w.template === 'string', `${what}: the warning names its template: ${JSON.stringify(w)}`);
            if (w.skipped && w.object !== undefined && OWN_TEXT[w.object]) {
              const own = OWN_TEXT[w.object]!;
              assert.ok(![result.config.main, ...Object.values(result.config.maps)].some((text) => text.includes(own)), `${what}: ${w.object} was skipped, yet ${own} is in the render`);
            }
          }
          outputs.set(result.config.hash, result.config);
          const mine = result.warnings.filter((w) => w.object === refOf(object));
          if (mine.length > 0) warnedKinds.add(object.kind!);
          skips += mine.filter((w) => w.skipped && w.line !== undefined).length;
        }
      }
    }
    t.diagnostic(`${renders} renders: ${n} paths in ${base.length - base.filter(isControl).length} objects, ${shapes.length} shapes; ${skips} whole objects skipped at a template line`);
    for (const kind of ['Ingress', 'Service', 'EndpointSlice', 'Secret', 'Gateway', 'HTTPRoute', 'ReferenceGrant', 'Namespace']) {
      assert.ok(warnedKinds.has(kind), `some broken ${kind} was named in a warning`);
    }
    assert.ok(skips > 0, 'objects were skipped whole, at a template line');

    // What is left after a skip is still one consistent configuration: haproxy accepts a sample (no backend named but missing, say).
    const sample = [...outputs.values()].filter((_, i) => i % 3 === 0);
    const validator = new Validator({ cacheSize: 0 });
    for (const config of sample) {
      const verdict = await validator.validate(config);
      assert.ok(verdict.ok, `haproxy -c refused a render: ${verdict.ok ? '' : JSON.stringify(verdict.problems)}`);
    }
    t.diagnostic(`${sample.length} of ${outputs.size} distinct outputs checked with haproxy -c`);
  });

  it('an Ingress whose spec.rules is a string is skipped, named, and the rest is served', async () => {
    const loaded = await loadTemplates();
    const base = await baseResources();
    const broken = base.map((o) => (o.kind === 'Ingress' && o.metadata.name === 'shop' ? { ...o, spec: { ...(o['spec'] as object), rules: 'oops' } } : o));
    const result = renderFixture(loaded, { resources: broken, values: {} });
    assert.ok(result.ok, `the render succeeds: ${JSON.stringify(!result.ok && result.error)}`);
    const [warning, ...others] = result.warnings;
    assert.deepEqual(others, []);
    assert.deepEqual(warning?.ref, { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'shop', name: 'shop' });
    assert.equal(warning?.skipped, true);
    assert.equal(warning?.template, 'snippets/ingress-routes');
    assert.ok(typeof warning?.line === 'number' && warning.line > 0);
    assert.match(warning?.message ?? '', /^skipped: /);
    assert.ok(!result.config.maps['prefix.map']!.includes('tls.example'), 'nothing of the skipped Ingress is served');
    assert.ok(result.config.maps['prefix.map']!.includes('control.example/'), 'the other Ingresses are');
    assert.ok(result.config.main.includes('frontend gw_8080'), 'and the Gateway routes');
  });

  it('a TLS Secret in a namespace that is no plain file name is served under a safe file name', async () => {
    const loaded = await loadTemplates();
    const base = await baseResources();
    const odd = 'my ns/../x';
    const moved = base.map((o) => {
      if (o.metadata.namespace !== CONTROL_NS || !['Secret', 'Ingress', 'Service', 'EndpointSlice'].includes(o.kind!)) return o;
      return { ...o, metadata: { ...o.metadata, namespace: odd } };
    });
    const result = renderFixture(loaded, { resources: moved, values: {} });
    assert.ok(result.ok, `the render succeeds: ${JSON.stringify(!result.ok && result.error)}`);
    const crtList = result.config.certs['https.crtlist']!;
    const line = crtList.split('\n').find((l) => l.endsWith(' ctl.example'));
    assert.ok(line, crtList);
    const file = line.split(' ')[0]!.slice('ssl/'.length);
    assert.match(file, /^[a-z0-9_-]+\.pem$/);
    assert.ok(Object.hasOwn(result.config.certs, file), 'the crt-list names a file of the render');
    assert.ok(result.config.maps['prefix.map']!.includes('ctl.example/'), 'its Ingress is served');
    assert.deepEqual(result.warnings.filter((w) => w.object?.includes(odd)), [], 'and nothing in that namespace is warned about');
  });
});

/** The host of the ingress-nginx Ingress that the annotation fuzz does not touch: always served. */
const NGINX_CONTROL_HOST = 'ngx-control.example';

/**
 * ingress-nginx Ingresses using every supported annotation with a valid value (a
 * canary of their own), with the Secrets they name, and a control Ingress of the
 * same class that shares nothing with them.
 */
async function nginxResources(): Promise<KubeObject[]> {
  const [ca, good, backendTls] = (await manifests('_nginx-certificates.yaml')).filter((o) => ['client-ca', 'client-good', 'backend-tls'].includes(o.metadata.name));
  const users = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'ngx-users', namespace: 'shop' }, data: { auth: b64('alice:$5$abcdefgh$gruCpC7VkOTspMQTTSAR8mtlO9Upms.fwqE5y16JVM.\n') } };
  const a = (annotations: Record<string, string>) => Object.fromEntries(Object.entries(annotations).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));
  const route = (host: string, paths: [string, string, string][]) => ({ host, http: { paths: paths.map(([path, pathType, name]) => ({ path, pathType, backend: { service: { name, port: { number: 80 } } } })) } });
  const ingress = (name: string, annotations: Record<string, string>, spec: Record<string, unknown>) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'shop', annotations: a(annotations) }, spec: { ingressClassName: 'nginx', ...spec } });
  const main = ingress(
    'ngx',
    {
      'app-root': '/app', 'from-to-www-redirect': 'true', 'use-regex': 'true', 'rewrite-target': '/$1', 'x-forwarded-prefix': '/v1',
      'ssl-redirect': 'true', 'force-ssl-redirect': 'false', 'preserve-trailing-slash': 'true', 'proxy-body-size': '8m',
      'proxy-connect-timeout': '5', 'proxy-read-timeout': '60', 'proxy-send-timeout': '60',
      'enable-cors': 'true', 'cors-allow-origin': 'https://app.example, https://*.site.example', 'cors-allow-methods': 'GET, POST', 'cors-allow-headers': 'X-Token',
      'cors-expose-headers': 'X-Total', 'cors-allow-credentials': 'false', 'cors-max-age': '600',
      'whitelist-source-range': '10.0.0.0/8', 'allowlist-source-range': '10.0.0.0/8', 'denylist-source-range': '192.168.0.0/16',
      'limit-rps': '10', 'limit-rpm': '100', 'limit-connections': '5', 'limit-burst-multiplier': '3', 'limit-allowlist': '127.0.0.1', 'limit-whitelist': '127.0.0.1',
      'auth-type': 'basic', 'auth-secret': 'ngx-users', 'auth-secret-type': 'auth-file', 'auth-realm': 'Staff',
      'auth-url': 'https://auth.example/verify?host=$host', 'auth-method': 'POST', 'auth-signin': 'https://login.example/start', 'auth-signin-redirect-param': 'next',
      'auth-response-headers': 'X-User, X-Email', 'auth-request-redirect': '/after', 'auth-always-set-cookie': 'true',
      'auth-tls-secret': 'shop/client-ca', 'auth-tls-verify-client': 'optional', 'auth-tls-match-cn': 'CN=client', 'auth-tls-error-page': 'https://help.example/cert',
      'auth-tls-pass-certificate-to-upstream': 'true',
      'backend-protocol': 'HTTPS', 'proxy-ssl-secret': 'shop/backend-tls', 'proxy-ssl-verify': 'on', 'proxy-ssl-name': 'tls.example', 'proxy-ssl-server-name': 'on',
      'proxy-ssl-ciphers': 'ECDHE-ECDSA-AES128-GCM-SHA256', 'proxy-ssl-protocols': 'TLSv1.2 TLSv1.3',
      affinity: 'cookie', 'affinity-mode': 'balanced', 'session-cookie-name': 'route', 'session-cookie-path': '/', 'session-cookie-domain': '.ngx.example',
      'session-cookie-expires': '3600', 'session-cookie-max-age': '3600', 'session-cookie-samesite': 'Lax', 'session-cookie-secure': 'true',
      'upstream-vhost': 'inside.example', 'ssl-passthrough': 'true', 'permanent-redirect': 'https://new.example/', 'permanent-redirect-code': '308',
      'temporal-redirect': 'https://tmp.example/', 'temporal-redirect-code': '307',
    },
    { tls: [{ hosts: ['ngx.tls.example'], secretName: 'tls-example' }], rules: [route('ngx.tls.example', [['/api/(.*)', 'ImplementationSpecific', 'web'], ['/', 'Prefix', 'api']])] },
  );
  // Balancing of its own, the only other annotations a canary takes.
  const hashed = ingress('ngx-hashed', { 'upstream-hash-by': '$request_uri$http_x_tenant', 'load-balance': 'ewma' }, { rules: [route('ngx-hash.example', [['/', 'Prefix', 'docs'], ['/folder/', 'Exact', 'api']])] });
  const canary = ingress('ngx-canary', { canary: 'true', 'canary-by-header': 'x-canary', 'canary-by-header-value': 'yes', 'canary-by-header-pattern': '^v[0-9]+$', 'canary-by-cookie': 'canary', 'canary-weight': '10', 'canary-weight-total': '100', 'load-balance': 'round_robin' }, { rules: [route('ngx-hash.example', [['/', 'Prefix', 'web']])] });
  const control = ingress('ngx-control', {}, { rules: [route(NGINX_CONTROL_HOST, [['/', 'Prefix', 'docs'], ['/is', 'ImplementationSpecific', 'api']])] });
  return [ca!, good!, backendTls!, users, main, hashed, canary, control] as KubeObject[];
}

describe('fuzz: ingress-nginx annotations', () => {
  const hostile = hostileStrings();
  const values = async () => ({ ...(await loadTemplates()).config.values, ingressNginx: true });

  it('every annotation of the catalogue takes hostile values: renders never fail, hold only the lines the templates mean to write, and the other Ingresses are served', async (t) => {
    const loaded = await loadTemplates();
    const base = [...(await baseResources()), ...(await nginxResources())];
    const catalogue = parseCatalogue(await readFile(`${ROOT}templates/snippets/nginx-catalogue`, 'utf8'));
    const baseline = renderFixture(loaded, { resources: base, values: await values() });
    assert.ok(baseline.ok, 'the base renders');
    assert.deepEqual(injectionProblems(baseline.config), [], 'the base holds only expected lines');
    assert.deepEqual(baseline.warnings.filter((w) => !/load-balance: "ewma"/.test(w.message)), [], 'the base is valid');
    // The base reaches every kind of ingress-nginx line: a shape check that never fires would prove nothing.
    for (const needle of ['expose-experimental-directives', 'lua-load', 'normalize-uri', 'set-var(txn.ngxloc)', 'set-var(txn.ngxcanary)', 'replace-path', 'lua.haprx_nginx_auth', 'set-var-fmt(txn.ngxhash)', 'acl ngx_allow', 'acl ngx_deny', 'track-sc2', 'ssl_c_s_dn', 'verify required ca-file', 'http-response add-header Set-Cookie', 'ca-ignore-err', 'backend be_nginx_slash', 'frontend https_passthrough', 'abns@haprx-https-']) {
      assert.ok(baseline.config.main.includes(needle), needle);
    }
    const render = fuzzRenderer(loaded, base, await values());
    // Every annotation of the catalogue, on the Ingress that uses them all (the canary's on the canary), and the paths of both.
    const fields: Field[] = [
      ...Object.keys(catalogue).map((key) => ({ kind: 'Ingress', name: key.startsWith('canary') ? 'ngx-canary' : 'ngx', path: ['metadata', 'annotations', `nginx.ingress.kubernetes.io/${key}`] })),
      { kind: 'Ingress', name: 'ngx', path: ['spec', 'rules', 0, 'http', 'paths', 0, 'path'] },
      { kind: 'Ingress', name: 'ngx-hashed', path: ['spec', 'rules', 0, 'http', 'paths', 1, 'path'] },
      { kind: 'Ingress', name: 'ngx-hashed', path: ['metadata', 'annotations', 'nginx.ingress.kubernetes.io/upstream-hash-by'] },
      { kind: 'Secret', name: 'client-ca', path: ['data', 'ca.crt'], encode: asBase64 },
    ];
    const all: unknown[] = [...hostile, ...NON_STRINGS];
    const renders = new Map<string, RenderedConfig>();
    const touched = new Set<string>();
    let count = 0;
    let warned = 0;
    for (const [i, value] of all.entries()) {
      for (const field of [fields[i % fields.length]!, fields[(i * 7 + 3) % fields.length]!]) {
        const result = render(field, value);
        count++;
        touched.add(`${field.name} ${field.path.join('.')}`);
        const what = `${field.kind} ${field.name} ${field.path.join('.')} = ${JSON.stringify(value)}`;
        if (!result.ok) assert.fail(`${what}: render failed: ${result.error.message}`);
        const problems = injectionProblems(result.config);
        if (problems.length > 0) assert.fail(`${what}:\n${problems.join('\n')}`);
        assert.ok(result.config.maps['prefix.map']!.includes(`${NGINX_CONTROL_HOST}/is `) && result.config.maps['prefix.map']!.includes('control.example/'), `${what}: the control Ingresses are still served`);
        if (result.warnings.length > 1) warned++;
        renders.set(result.config.hash, result.config);
      }
    }
    assert.equal(touched.size, fields.length, 'every field took hostile values');
    t.diagnostic(`${count} renders of ${all.length} values through ${fields.length} fields (${Object.keys(catalogue).length} annotations); ${warned} raised warnings; ${renders.size} distinct outputs`);
    assert.ok(warned > all.length, 'hostile values are reported, not silently dropped');

    t.diagnostic(`${await validateSample(renders)} distinct outputs checked with haproxy -c`);
  });
});
