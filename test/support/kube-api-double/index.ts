import { KubeConfig } from '@kubernetes/client-node';
import type { KubeApiDouble } from './server.ts';

export { KubeApiDouble, type Fault, type KubeApiDoubleOptions, type Obj, type RequestRecord } from './server.ts';

/** A client configuration for the double, as a kubeconfig with a token user would give. */
export function kubeConfigFor(double: KubeApiDouble, token = 'test-token', namespace = 'default'): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'double', server: double.url, skipTLSVerify: true }],
    users: [{ name: 'tester', token }],
    contexts: [{ name: 'double', cluster: 'double', user: 'tester', namespace }],
    currentContext: 'double',
  });
  return kc;
}
