/**
 * The resource types the Kubernetes API server double serves. Each entry says how
 * the real API server treats the type where it matters to a client: whether it is
 * namespaced, whether it has a status subresource (then the main resource ignores
 * status writes and `/status` ignores everything else), and whether an update
 * without a resourceVersion is allowed.
 */
export interface ResourceType {
  group: string;
  version: string;
  /** The plural, as in the URL. */
  resource: string;
  kind: string;
  namespaced: boolean;
  statusSubresource: boolean;
  /** False for Leases: their strategy refuses an update that names no resourceVersion. */
  unconditionalUpdate: boolean;
  /** Checks a created or updated object the way the real API server's validation does. */
  validate?: (object: Record<string, unknown>) => string[];
}

export function apiVersionOf(type: Pick<ResourceType, 'group' | 'version'>): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** `leases.coordination.k8s.io`, as the API server names a resource in messages. */
export function qualifiedName(type: ResourceType): string {
  return type.group ? `${type.resource}.${type.group}` : type.resource;
}

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function validateEvent(object: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const required = ['reportingController', 'reportingInstance', 'action', 'reason'];
  for (const field of required) if (typeof object[field] !== 'string' || !object[field]) problems.push(`${field}: Required value`);
  if (typeof object.eventTime !== 'string' || !MICRO_TIME.test(object.eventTime)) problems.push('eventTime: Required value: must be a MicroTime (2006-01-02T15:04:05.000000Z)');
  if (object.type !== 'Normal' && object.type !== 'Warning') problems.push(`type: Unsupported value: ${JSON.stringify(object.type)}: supported values: "Normal", "Warning"`);
  if (typeof object.note === 'string' && Buffer.byteLength(object.note) > 1024) problems.push('note: Too long: may not be longer than 1024');
  const regarding = object.regarding as Record<string, unknown> | undefined;
  if (!regarding || typeof regarding.kind !== 'string' || typeof regarding.name !== 'string') problems.push('regarding: Required value');
  const series = object.series as Record<string, unknown> | undefined;
  if (series !== undefined) {
    if (typeof series.count !== 'number' || series.count < 2) problems.push('series.count: Invalid value: should be at least 2');
    if (typeof series.lastObservedTime !== 'string' || !MICRO_TIME.test(series.lastObservedTime)) problems.push('series.lastObservedTime: Required value');
  }
  return problems;
}

function validateLease(object: Record<string, unknown>): string[] {
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  if (spec.leaseDurationSeconds !== undefined && !(Number.isInteger(spec.leaseDurationSeconds) && (spec.leaseDurationSeconds as number) > 0)) {
    problems.push('spec.leaseDurationSeconds: Invalid value: must be greater than 0');
  }
  for (const field of ['acquireTime', 'renewTime']) {
    if (spec[field] !== undefined && spec[field] !== null && !(typeof spec[field] === 'string' && MICRO_TIME.test(spec[field]))) problems.push(`spec.${field}: Invalid value: must be a MicroTime`);
  }
  if (spec.leaseTransitions !== undefined && !(Number.isInteger(spec.leaseTransitions) && (spec.leaseTransitions as number) >= 0)) problems.push('spec.leaseTransitions: Invalid value: must be 0 or more');
  return problems;
}

const type = (group: string, version: string, resource: string, kind: string, extra: Partial<ResourceType> = {}): ResourceType => ({
  group,
  version,
  resource,
  kind,
  namespaced: true,
  statusSubresource: false,
  unconditionalUpdate: true,
  ...extra,
});

/** The built-in types haprx touches; tests add CRDs with `KubeApiDouble.addResource`. */
export const BUILT_IN: readonly ResourceType[] = [
  type('', 'v1', 'namespaces', 'Namespace', { namespaced: false, statusSubresource: true }),
  type('', 'v1', 'configmaps', 'ConfigMap'),
  type('', 'v1', 'secrets', 'Secret'),
  type('', 'v1', 'pods', 'Pod', { statusSubresource: true }),
  type('', 'v1', 'services', 'Service', { statusSubresource: true }),
  type('', 'v1', 'endpoints', 'Endpoints'),
  type('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice'),
  type('networking.k8s.io', 'v1', 'ingresses', 'Ingress', { statusSubresource: true }),
  type('networking.k8s.io', 'v1', 'ingressclasses', 'IngressClass', { namespaced: false }),
  type('coordination.k8s.io', 'v1', 'leases', 'Lease', { unconditionalUpdate: false, validate: validateLease }),
  type('events.k8s.io', 'v1', 'events', 'Event', { validate: validateEvent }),
  type('gateway.networking.k8s.io', 'v1', 'httproutes', 'HTTPRoute', { statusSubresource: true }),
  type('gateway.networking.k8s.io', 'v1', 'gateways', 'Gateway', { statusSubresource: true }),
  type('gateway.networking.k8s.io', 'v1', 'gatewayclasses', 'GatewayClass', { namespaced: false, statusSubresource: true }),
  type('gateway.networking.k8s.io', 'v1beta1', 'referencegrants', 'ReferenceGrant'),
  type('gateway.networking.k8s.io', 'v1', 'referencegrants', 'ReferenceGrant'),
  type('gateway.networking.k8s.io', 'v1', 'grpcroutes', 'GRPCRoute', { statusSubresource: true }),
  type('gateway.networking.k8s.io', 'v1', 'tlsroutes', 'TLSRoute', { statusSubresource: true }),
  type('gateway.networking.k8s.io', 'v1', 'tcproutes', 'TCPRoute', { statusSubresource: true }),
  type('gateway.networking.k8s.io', 'v1', 'backendtlspolicies', 'BackendTLSPolicy', { statusSubresource: true }),
];
