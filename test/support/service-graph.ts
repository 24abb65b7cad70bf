/**
 * What tests of the whole graph that route by Service share: a controller
 * configuration whose templates send each Service's `host` annotation to the
 * Service's first port, a double of the Services watch, and a haproxy binary
 * wrapped in a shell prelude.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { Observable, Subject } from 'rxjs';
import { loadControllerConfig } from '../../src/cli/load-config.ts';
import type { KubeObject, ResourceChange } from '../../src/k8s/resource.ts';

const mainTemplate = (bindPort: string) => `global
  maxconn 256
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:${bindPort}
  use_backend %[req.hdr(host),field(1,:),lower,map(<%= h.mapPath('hosts.map') %>,be_none)]
backend be_none
  http-request return status 404
<% for (const svc of resources.services.list()) { -%>
backend <%= h.identifier('be', svc.metadata.name) %>
  balance roundrobin
  server s1 127.0.0.1:<%= svc.spec.ports[0].port %>
<% } -%>
`;
const HOSTS = `<% for (const svc of resources.services.list().filter((s) => s.metadata.annotations?.host)) { -%>
<%= h.mapKey(svc.metadata.annotations.host) %> <%= h.identifier('be', svc.metadata.name) %>
<% } -%>
`;

/**
 * The configuration, loaded, that watches Services and routes by their `host`
 * annotation; haproxy binds 127.0.0.1:`bindPort` (template text: a value or an
 * environment variable). Throws if it does not load.
 */
export function serviceRoutingConfig(bindPort: string, settings: Record<string, unknown>, values?: Record<string, unknown>) {
  const loaded = loadControllerConfig({
    watch: [{ name: 'services', apiVersion: 'v1', resource: 'services' }],
    templates: { 'haproxy.cfg': mainTemplate(bindPort), maps: { 'hosts.map': HOSTS } },
    settings,
    ...(values && { values }),
  });
  if (!loaded.ok) throw new Error(`${loaded.path}: ${loaded.message}`);
  return loaded;
}

/** A double of the Services watch: each subscription lists what is there, then follows the changes, as a watch does. */
export class ServicesWatch {
  private readonly objects = new Map<string, KubeObject>();
  private updates = new Subject<ResourceChange>();

  /** Creates or changes a Service of namespace demo; `host` routes that host to it. */
  set(name: string, port: number, host?: string): void {
    const object: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'demo', resourceVersion: String(Date.now() + Math.random()), ...(host && { annotations: { host } }) },
      spec: { ports: [{ port }] },
    };
    this.objects.set(name, object);
    this.updates.next({ type: 'upsert', resource: 'services', object });
  }

  /** The graph's change source. */
  readonly changes = (): Observable<ResourceChange> =>
    new Observable<ResourceChange>((subscriber) => {
      subscriber.next({ type: 'replace', resource: 'services', objects: [...this.objects.values()] });
      subscriber.next({ type: 'synced', resource: 'services' });
      return this.updates.subscribe(subscriber);
    });

  /** Ends the open watches with an error, as a watch that fails; later ones start afresh. */
  fail(err: Error): void {
    const failing = this.updates;
    this.updates = new Subject<ResourceChange>();
    failing.error(err);
  }
}

/** Writes an executable at `path` that runs the `sh` body `prelude`, then haproxy with its arguments. */
export async function wrapHaproxy(path: string, prelude: string): Promise<string> {
  await writeFile(path, `#!/bin/sh\n${prelude}\nexec haproxy "$@"\n`);
  await chmod(path, 0o755);
  return path;
}
