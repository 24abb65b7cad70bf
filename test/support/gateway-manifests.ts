/** Gateway API manifests for tests, as YAML. */

export interface ListenerSpec {
  name: string;
  port: number;
  protocol: 'HTTP' | 'HTTPS' | 'TLS' | 'TCP' | 'UDP';
  hostname?: string;
  /** An HTTPS listener's certificate: a Secret in the Gateway's namespace. */
  certificate?: string;
}

function listenerYaml({ certificate, ...listener }: ListenerSpec): string {
  // JSON is YAML: a flow mapping on the list item's line.
  return JSON.stringify({ ...listener, ...(certificate !== undefined && { tls: { certificateRefs: [{ name: certificate }] } }) });
}

/**
 * haprx's GatewayClass (`haprx`) and one Gateway of that class with these
 * listeners: two YAML documents, without a trailing `---`.
 */
export function gatewayYaml({ name, namespace, listeners }: { name: string; namespace: string; listeners: readonly ListenerSpec[] }): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: haprx}
spec: {controllerName: haprx.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  gatewayClassName: haprx
  listeners:
${listeners.map((l) => `    - ${listenerYaml(l)}`).join('\n')}
`;
}
