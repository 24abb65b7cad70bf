/**
 * A small template folder for the observability tests, written by the test itself so
 * that changes to the shipped templates do not change what these tests count: one
 * backend per Service with a server per endpoint (added at runtime), a host map,
 * and, with `secrets`, a userlist password and a TLS certificate from Secrets.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const WATCH = `watch:
  - {name: services, apiVersion: v1, resource: services}
  - name: endpointslices
    apiVersion: discovery.k8s.io/v1
    resource: endpointslices
    indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]']
`;

const MAIN = `global
  maxconn 256

defaults
  mode http
  timeout connect 2s
  timeout client 10s
  timeout server 10s

frontend http
  bind <%= \`\${values.bindAddress}:\${values.httpPort}\` %>
  use_backend %[req.hdr(host),field(1,:),lower,map(<%= h.mapPath('hosts.map') %>,be_default)]

backend be_default
  http-request return status 404
<% for (const svc of resources.services.list()) { -%>

backend <%= h.identifier('be', svc.metadata.namespace, svc.metadata.name) %>
  balance roundrobin
<% for (const slice of resources.endpointslices.get(svc.metadata.namespace, svc.metadata.name)) { -%>
<% for (const ep of slice.endpoints ?? []) { for (const address of ep.addresses ?? []) { -%>
  server <%= h.identifier('srv', address, slice.ports[0].port) %> <%= \`\${address}:\${slice.ports[0].port}\` %>
<% } } -%>
<% } -%>
<% } -%>
`;

const SECRET_PARTS = `
userlist admins
<% for (const s of resources.secrets.list()) { if (s.data?.password) { -%>
  user <%= s.metadata.name %> insecure-password <%= h.b64decode(s.data.password) %>
<% } } -%>

frontend https
  bind <%= \`\${values.bindAddress}:\${values.httpsPort}\` %> ssl crt <%= h.certPath('site.pem') %>
  http-request auth realm shop unless { http_auth(admins) }
  default_backend be_default
<% for (const s of resources.secrets.list()) { if (s.data?.upstream) { -%>

backend <%= h.identifier('be_upstream', s.metadata.name) %>
  server up <%= \`\${h.b64decode(s.data.upstream)}:80\` %>
<% } } -%>
`;

const HOSTS = `<% for (const svc of resources.services.list()) { -%>
<%= \`\${svc.metadata.name}.test\` %> <%= h.identifier('be', svc.metadata.namespace, svc.metadata.name) %>
<% } -%>
`;

const CERT = `<% const tls = resources.secrets.first('shop', 'site-tls'); -%>
<%- tls ? h.b64decode(tls.data['tls.crt']) + h.b64decode(tls.data['tls.key']) : '' %>`;

export async function writeTemplates(dir: string, options: { secrets?: boolean } = {}): Promise<void> {
  await mkdir(join(dir, 'maps'), { recursive: true });
  const watch = options.secrets ? `${WATCH}  - {name: secrets, apiVersion: v1, resource: secrets}\n` : WATCH;
  await writeFile(
    join(dir, 'haprx.yaml'),
    `${watch}settings: {debounce: 200ms, debounceMaxWait: 1s, minDeployInterval: 500ms, driftInterval: 0s}\nvalues: {bindAddress: 127.0.0.1, httpPort: 80, httpsPort: 443}\n`,
  );
  await writeFile(join(dir, 'haproxy.cfg'), options.secrets ? MAIN + SECRET_PARTS : MAIN);
  await writeFile(join(dir, 'maps', 'hosts.map'), HOSTS);
  if (options.secrets) {
    await mkdir(join(dir, 'ssl'), { recursive: true });
    await writeFile(join(dir, 'ssl', 'site.pem'), CERT);
  }
}
