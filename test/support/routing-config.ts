/** A small routing configuration for tests that deploy to a real haproxy. */
import { type RenderedConfig, sealRendered } from '../../src/templating/rendered.ts';

export interface ServerSpec {
  name: string;
  port: number;
  /** Extra words on the server line. */
  extra?: string;
}

/**
 * A front end on 127.0.0.1:`port` routing by Host through maps/hosts.map, a 404
 * backend, and one backend per name with its servers; `extra` is appended.
 */
export function routingConfig(
  port: number,
  backends: Record<string, ServerSpec[]>,
  hosts: Record<string, string>,
  options: { extra?: string; maps?: Record<string, string>; files?: Record<string, string>; certs?: Record<string, string> } = {},
): RenderedConfig {
  const main = [
    'global',
    '  maxconn 256',
    'defaults',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 5s',
    '  timeout server 5s',
    'frontend fe',
    `  bind 127.0.0.1:${port}`,
    '  use_backend %[req.hdr(host),field(1,:),lower,map(maps/hosts.map,be_none)]',
    'backend be_none',
    '  http-request return status 404',
    ...Object.entries(backends).flatMap(([name, servers]) => [
      `backend ${name}`,
      '  balance roundrobin',
      ...servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port}${s.extra ? ` ${s.extra}` : ''}`),
    ]),
    ...(options.extra ? [options.extra] : []),
    '',
  ].join('\n');
  const map = Object.entries(hosts)
    .map(([host, backend]) => `${host} ${backend}\n`)
    .join('');
  return sealRendered({ main, maps: { 'hosts.map': map, ...options.maps }, files: options.files ?? {}, certs: options.certs ?? {} });
}
