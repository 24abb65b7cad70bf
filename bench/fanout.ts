/**
 * Deploying through the Data Plane API to 1 instance vs 10 at once, through the
 * deploy stage (streams/deploy.ts) and DataplaneTarget, against Data Plane API
 * doubles that each run in their own process with a real haproxy.
 *
 *   npm run bench:fanout        (ROUNDS=3, RELOAD_DELAY_MS=5000, BACKENDS=50 by default)
 *
 * A structural round adds a backend (one reload per instance); a runtime round
 * adds a server (no reload). RELOAD_DELAY_MS is the API's reload_delay (its
 * default is 5 s); the figure for a structural deployment is dominated by it.
 * All doubles share this machine's CPUs: each validates every posted
 * configuration with haproxy -c, so with few cores ten instances queue up on
 * CPU where ten real instances would not.
 */
import { availableParallelism } from 'node:os';
import { lastValueFrom, toArray } from 'rxjs';
import { dataplaneDeployTo } from '../src/dataplane/deploy-to.ts';
import { DataplaneTarget } from '../src/dataplane/target.ts';
import type { DeployRequest, Endpoint } from '../src/events.ts';
import { type RenderedConfig, sealRendered } from '../src/templating/rendered.ts';
import { deployer } from '../streams/deploy.ts';
import { type RemoteDouble, startRemoteDouble } from '../test/support/dataplane-double/remote.ts';
import { freePort } from '../test/support/ports.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const RELOAD_DELAY_MS = Number(process.env.RELOAD_DELAY_MS ?? 5_000);
const BACKENDS = Number(process.env.BACKENDS ?? 50);
const AUTH = { username: 'admin', password: 'adminpwd' };

const port = await freePort();

function config(backends: number, serversInFirst: number): RenderedConfig {
  const lines = [
    'global',
    '  maxconn 1024',
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
  ];
  const hosts: string[] = [];
  for (let b = 0; b < backends; b++) {
    lines.push(`backend be_${b}`, '  balance roundrobin');
    const servers = b === 0 ? serversInFirst : 2;
    for (let s = 0; s < servers; s++) lines.push(`  server s${s} 10.${b >> 8}.${b & 255}.${s + 1}:8080`);
    hosts.push(`h${b}.bench be_${b}\n`);
  }
  return sealRendered({ main: `${lines.join('\n')}\n`, maps: { 'hosts.map': hosts.join('') }, files: {}, certs: {} });
}

const doubles: RemoteDouble[] = await Promise.all(Array.from({ length: 10 }, () => startRemoteDouble({ reloadDelayMs: RELOAD_DELAY_MS })));
const targets = new Map<string, DataplaneTarget>();
const endpoints: Endpoint[] = doubles.map((d, i) => {
  targets.set(`d${i}`, new DataplaneTarget({ baseUrl: d.url, ...AUTH, reloadPollMs: 50 }));
  return { id: `d${i}`, address: d.url };
});
const deploy = deployer({ deployTo: dataplaneDeployTo((e) => targets.get(e.id)) }, { maxParallel: 0, timeoutMs: 120_000 });

let seq = 0;
async function run(cfg: RenderedConfig, to: Endpoint[]): Promise<{ ms: number; reloaded: number; failed: string[] }> {
  const request: DeployRequest = { reconcile: { seq: ++seq, cause: { reason: 'resources', changes: [] }, at: Date.now() }, config: cfg, endpoints: to, reason: 'change', queuedAt: Date.now() };
  const events = await lastValueFrom(deploy(request).pipe(toArray()));
  const done = events.find((e) => e.type === 'DeploymentCompleted');
  if (!done || done.type !== 'DeploymentCompleted') throw new Error('no DeploymentCompleted');
  return {
    ms: done.durationMs,
    reloaded: done.results.filter((r) => r.reloaded).length,
    failed: done.results.filter((r) => !r.ok).map((r) => `${r.endpoint.id}: ${r.error}`),
  };
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
};

const rows: string[] = [];
let backends = BACKENDS;
let servers = 2;
const reloadsBefore = await Promise.all(doubles.map((d) => d.reloadCounts()));
// Everyone on the same configuration first.
await run(config(backends, servers), endpoints);

for (const n of [1, 10]) {
  const to = endpoints.slice(0, n);
  await run(config(backends, servers), endpoints);
  const structural: number[] = [];
  const runtime: number[] = [];
  let reloads = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const s = await run(config(++backends, servers), to);
    if (s.failed.length) throw new Error(s.failed.join('\n'));
    structural.push(s.ms);
    reloads += s.reloaded;
    const t = await run(config(backends, ++servers), to);
    if (t.failed.length) throw new Error(t.failed.join('\n'));
    if (t.reloaded) throw new Error('a runtime round reloaded');
    runtime.push(t.ms);
  }
  const st = stats(structural);
  const rt = stats(runtime);
  rows.push(
    `| ${n} | structural | ${st.median} | ${st.min} | ${st.max} | ${reloads / ROUNDS} |`,
    `| ${n} | runtime | ${rt.median} | ${rt.min} | ${rt.max} | 0 |`,
  );
}
const reloadsAfter = await Promise.all(doubles.map((d) => d.reloadCounts()));

console.log(`fan-out through the Data Plane API: ${ROUNDS} rounds, ${BACKENDS}+ backends, reload_delay ${RELOAD_DELAY_MS} ms, ${availableParallelism()} CPUs, doubles in their own processes`);
console.log('| endpoints | change | median ms | min ms | max ms | reloads per round |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
console.log(
  `reloads counted by show proc per double: ${reloadsAfter.map((a, i) => a.reloads - reloadsBefore[i]!.reloads).join(' ')}; failed: ${reloadsAfter.reduce((sum, a, i) => sum + a.failed - reloadsBefore[i]!.failed, 0)}`,
);

await Promise.all([...targets.values()].map((t) => t.close()));
await Promise.all(doubles.map((d) => d.stop()));
