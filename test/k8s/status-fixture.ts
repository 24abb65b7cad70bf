/**
 * A cluster in the API server double for the status tests: the shipped templates as
 * the controller ConfigMap, one HAProxy pod behind a LoadBalancer Service, and
 * GatewayClasses, Gateways, HTTPRoutes, ReferenceGrants, Services and Ingresses that
 * between them reach every condition and reason the templates declare. Objects of
 * other controllers carry their own status, to show it is left alone.
 */
import { makeSiteCertificate } from '../support/dataplane-double/certs.ts';
import type { KubeApiDouble, Obj } from '../support/kube-api-double/index.ts';
import { CONFIGMAP, NS, credentialsSecret, haproxyPod, shippedConfigMapData } from './cluster-fixture.ts';

export const GW = 'gateway.networking.k8s.io/v1';
export const ME = 'haprx.io/gateway-controller';
export const THEM = 'example.com/mesh-controller';
export const LB_IP = '203.0.113.10';

/** The status another controller wrote on a route of both: it must stay as it is. */
export const THEIR_PARENT = {
  parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'shop', name: 'theirs' },
  controllerName: THEM,
  conditions: [{ type: 'Accepted', status: 'True', observedGeneration: 1, lastTransitionTime: '2025-01-01T00:00:00Z', reason: 'Accepted', message: 'theirs' }],
};
export const THEIR_INGRESS_STATUS = { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } };

const route = (name: string, spec: Record<string, unknown>, namespace = 'shop'): Obj => ({ apiVersion: GW, kind: 'HTTPRoute', metadata: { name, namespace }, spec });
const backend = (name: string, extra: Record<string, unknown> = {}) => ({ backendRefs: [{ name, port: 80, ...extra }] });
const ingress = (name: string, cls: string, host: string, status?: unknown): Obj => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: 'shop' },
  spec: { ingressClassName: cls, rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
  ...(status !== undefined && { status }),
});

export async function seedStatusCluster(double: KubeApiDouble): Promise<void> {
  double.create('v1', 'configmaps', { metadata: { name: CONFIGMAP, namespace: NS }, data: await shippedConfigMapData({ service: 'haproxy' }) });
  double.create('v1', 'secrets', credentialsSecret('pw'));
  double.create('v1', 'pods', haproxyPod('haproxy-0', '10.0.0.10'));
  double.create('v1', 'services', { metadata: { name: 'haproxy', namespace: NS }, spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ ip: LB_IP }] } } });

  for (const ns of ['shop', 'guest']) double.create('v1', 'namespaces', { metadata: { name: ns } });
  double.create('networking.k8s.io/v1', 'ingressclasses', { metadata: { name: 'haprx' }, spec: { controller: 'haprx.io/ingress-controller' } });
  double.create('networking.k8s.io/v1', 'ingressclasses', { metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } });
  double.create('v1', 'services', { metadata: { name: 'web', namespace: 'shop' }, spec: { ports: [{ name: 'http', port: 80 }] } });
  double.create('v1', 'services', { metadata: { name: 'granted', namespace: 'guest' }, spec: { ports: [{ name: 'http', port: 80 }] } });
  double.create('v1', 'services', { metadata: { name: 'secret-web', namespace: 'guest' }, spec: { ports: [{ name: 'http', port: 80 }] } });
  double.create('v1', 'services', { metadata: { name: 'grpc', namespace: 'shop' }, spec: { ports: [{ name: 'grpc', port: 80, appProtocol: 'example.com/custom' }] } });
  double.create('discovery.k8s.io/v1', 'endpointslices', {
    metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: [{ addresses: ['10.1.0.5'], conditions: { ready: true } }],
  });
  const pem = await makeSiteCertificate('gw.example');
  const cut = pem.lastIndexOf('-----BEGIN');
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  double.create('v1', 'secrets', { metadata: { name: 'gw-example', namespace: 'shop' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(pem.slice(0, cut)), 'tls.key': b64(pem.slice(cut)) } });
  double.create('gateway.networking.k8s.io/v1beta1', 'referencegrants', {
    metadata: { name: 'shop-to-granted', namespace: 'guest' },
    spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop' }], to: [{ group: '', kind: 'Service', name: 'granted' }] },
  });

  double.create(GW, 'gatewayclasses', { metadata: { name: 'haprx' }, spec: { controllerName: ME } });
  double.create(GW, 'gatewayclasses', { metadata: { name: 'mesh' }, spec: { controllerName: THEM } });
  double.create(GW, 'gateways', {
    metadata: { name: 'edge', namespace: 'shop' },
    spec: {
      gatewayClassName: 'haprx',
      listeners: [
        { name: 'http', port: 8080, protocol: 'HTTP' },
        { name: 'api', port: 8080, protocol: 'HTTP', hostname: 'api.example' },
        { name: 'again', port: 8080, protocol: 'HTTP', hostname: 'api.example' },
        { name: 'https', port: 8443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'gw-example' }] } },
        { name: 'nocert', port: 9443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'missing' }] } },
        { name: 'foreign', port: 9444, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'elsewhere', namespace: 'guest' }] } },
        { name: 'clash', port: 443, protocol: 'HTTP' },
        { name: 'udp', port: 9000, protocol: 'UDP' },
        { name: 'kinds', port: 8081, protocol: 'HTTP', allowedRoutes: { kinds: [{ kind: 'TCPRoute' }] } },
      ],
    },
  });
  double.create(GW, 'gateways', { metadata: { name: 'theirs', namespace: 'shop' }, spec: { gatewayClassName: 'mesh', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] } });

  double.create(GW, 'httproutes', { ...route('web', { parentRefs: [{ name: 'edge', sectionName: 'http' }, { name: 'theirs' }], rules: [backend('web')] }), status: { parents: [THEIR_PARENT] } });
  double.create(GW, 'httproutes', route('nosection', { parentRefs: [{ name: 'edge', sectionName: 'nothing' }], rules: [backend('web')] }));
  double.create(GW, 'httproutes', route('visitor', { parentRefs: [{ name: 'edge', namespace: 'shop', sectionName: 'http' }], rules: [backend('granted')] }, 'guest'));
  double.create(GW, 'httproutes', route('elsewhere', { parentRefs: [{ name: 'edge', sectionName: 'api' }], hostnames: ['other.example'], rules: [backend('web')] }));
  double.create(GW, 'httproutes', route('missing', { parentRefs: [{ name: 'edge', sectionName: 'api' }], rules: [backend('nowhere')] }));
  double.create(GW, 'httproutes', route('granted', { parentRefs: [{ name: 'edge', sectionName: 'api' }], rules: [backend('granted', { namespace: 'guest' })] }));
  double.create(GW, 'httproutes', route('ungranted', { parentRefs: [{ name: 'edge', sectionName: 'api' }], rules: [backend('secret-web', { namespace: 'guest' })] }));
  double.create(GW, 'httproutes', route('kind', { parentRefs: [{ name: 'edge', sectionName: 'api' }], rules: [{ backendRefs: [{ group: 'example.com', kind: 'Bucket', name: 'b' }] }] }));
  double.create(GW, 'httproutes', route('protocol', { parentRefs: [{ name: 'edge', sectionName: 'api' }], rules: [{ backendRefs: [{ name: 'grpc', port: 80 }] }] }));
  double.create(GW, 'httproutes', route('bad', { parentRefs: [{ name: 'edge', sectionName: 'http' }], rules: [{ matches: [{ path: { type: 'Exact', value: '/a\nbind :9999' } }], ...backend('web') }] }));

  double.create('networking.k8s.io/v1', 'ingresses', ingress('mine', 'haprx', 'mine.example'));
  double.create('networking.k8s.io/v1', 'ingresses', ingress('theirs', 'nginx', 'theirs.example', THEIR_INGRESS_STATUS));
  double.create('networking.k8s.io/v1', 'ingresses', ingress('evil', 'haprx', 'evil.demo.local\nbind :9999'));
}

type Condition = { type: string; status: string; reason: string; message: string; observedGeneration?: number; lastTransitionTime: string };
export type Status = {
  conditions?: Condition[];
  parents?: { parentRef: Record<string, unknown>; controllerName: string; conditions: Condition[] }[];
  listeners?: { name: string; attachedRoutes: number; supportedKinds: unknown[]; conditions: Condition[] }[];
  addresses?: unknown[];
  supportedFeatures?: { name: string }[];
  loadBalancer?: { ingress?: unknown[] };
};

export const statusOf = (double: KubeApiDouble, apiVersion: string, resource: string, namespace: string | undefined, name: string): Status =>
  (double.get(apiVersion, resource, namespace, name)?.status ?? {}) as Status;

export const conditionOf = (conditions: Condition[] | undefined, type: string) => conditions?.find((c) => c.type === type);

/** haprx's parents entry of a route, as `Type=Status Reason` per condition. */
export function parentSummary(double: KubeApiDouble, namespace: string, name: string): string[] {
  const mine = statusOf(double, GW, 'httproutes', namespace, name).parents?.filter((p) => p.controllerName === ME) ?? [];
  return mine.flatMap((p) => p.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`));
}

export function listenerSummary(double: KubeApiDouble, name: string): string[] {
  const listener = statusOf(double, GW, 'gateways', 'shop', 'edge').listeners?.find((l) => l.name === name);
  return listener?.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`) ?? [];
}
