/**
 * The whole controller in real time with its real parts: manifests from a folder,
 * the ejs engine, validation by the real haproxy, and a recording target.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BehaviorSubject, type Observable, type Subscription, of } from 'rxjs';
import { loadControllerConfig } from '../../src/cli/load-config.ts';
import { controllerGraph } from '../../src/cli/wiring.ts';
import type { ControllerEvent, Deployment, InstanceOutcome } from '../../src/events.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import { folderSource } from '../../src/local/folder-source.ts';
import { compileWatches } from '../../src/local/manifests.ts';
import { controller } from '../../streams/controller.ts';

const MAIN = `global
  log stdout format raw local0
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:<%= values.port %>
  use_backend %[req.hdr(host),lower,map(<%= h.mapPath('hosts.map') %>,be_default)]
backend be_default
  http-request return status 404
<% for (const svc of resources.services.list()) { -%>
backend <%= h.identifier('be', svc.metadata.namespace, svc.metadata.name) %>
  balance roundrobin
<% for (const p of svc.spec.ports) { -%>
  server s<%= p.port %> 127.0.0.1:<%= p.port %>
<% } -%>
<% } -%>
`;
const HOSTS = `<% for (const svc of resources.services.list()) { -%>
<%= h.mapKey(svc.metadata.annotations.host) %> <%= h.identifier('be', svc.metadata.namespace, svc.metadata.name) %>
<% } -%>
`;

const rawConfig = (main = MAIN) => ({
  watch: [{ name: 'services', apiVersion: 'v1', resource: 'services' }],
  templates: { 'haproxy.cfg': main, maps: { 'hosts.map': HOSTS } },
  settings: { debounce: '50ms', debounceMaxWait: '200ms', minDeployInterval: '200ms', driftInterval: 0 },
  values: { port: 18080 },
});

const service = (name: string, port: number | string) =>
  `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: demo, annotations: {host: ${name}.example}}\nspec: {ports: [{port: ${port}}]}\n`;

describe('controller with real templates, folder source and haproxy -c', () => {
  let dir: string;
  let subscription: Subscription;
  const events: ControllerEvent[] = [];
  const deployed: Deployment[] = [];
  const config$ = new BehaviorSubject<unknown>(rawConfig());

  async function waitFor<T extends ControllerEvent['type']>(type: T, after = 0, ms = 10_000): Promise<Extract<ControllerEvent, { type: T }>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = events.slice(after).find((e) => e.type === type);
      if (found) return found as Extract<ControllerEvent, { type: T }>;
      if (Date.now() > deadline) throw new Error(`no ${type} within ${ms} ms; saw ${events.slice(after).map((e) => e.type).join(', ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-graph-'));
    await writeFile(join(dir, 'web.yaml'), service('web', 9001));
    const validator = new Validator({ timeoutMs: 10_000 });
    subscription = controller(config$, {
      decode: loadControllerConfig,
      graph: (loaded) =>
        controllerGraph(loaded, {
          changes: (watch) => {
            const compiled = compileWatches(watch);
            assert.ok(compiled.ok);
            return folderSource({ dir, watches: compiled.watches, settleMs: 20 });
          },
          endpoints$: of([{ id: 'recorder', address: 'memory' }]),
          validator,
          deployTo: (_endpoint, deployment): Observable<InstanceOutcome> => {
            deployed.push(deployment);
            return of({ ok: true, reloaded: false, runtimeOps: 0 });
          },
        }),
    }).subscribe((e) => events.push(e));
  });

  after(async () => {
    subscription.unsubscribe();
    await rm(dir, { recursive: true, force: true });
  });

  it('renders, validates with haproxy and deploys the initial state', async () => {
    await waitFor('DeploymentCompleted');
    assert.equal(deployed.length, 1);
    assert.match(deployed[0]!.config.main, /backend be_demo_web[^\n]*\n {2}balance roundrobin\n {2}server s9001 127\.0\.0\.1:9001\n/);
    assert.equal(deployed[0]!.config.maps['hosts.map'], `web.example ${/backend (be_demo_web\S*)/.exec(deployed[0]!.config.main)![1]}\n`);
  });

  it('rejects a change that haproxy refuses, with its message and line, and deploys nothing', async () => {
    const mark = events.length;
    await writeFile(join(dir, 'api.yaml'), service('api', '"99999"'));
    const failed = await waitFor('ValidationFailed', mark);
    const problem = failed.problems.find((p) => p.file === 'haproxy.cfg' && p.line !== undefined);
    assert.ok(problem, JSON.stringify(failed.problems));
    const offending = failed.config.main.split('\n')[problem.line! - 1]!;
    assert.match(offending, /server s99999 127\.0\.0\.1:99999/, `line ${problem.line} is the bad server line`);
    assert.match(problem.message, /99999/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(deployed.length, 1, 'the last good configuration stays live');
  });

  it('deploys again once the manifest is fixed', async () => {
    const mark = events.length;
    await writeFile(join(dir, 'api.yaml'), service('api', 9002));
    await waitFor('DeploymentCompleted', mark);
    assert.equal(deployed.length, 2);
    assert.match(deployed[1]!.config.main, /server s9002 127\.0\.0\.1:9002/);
  });

  it('keeps running when the controller configuration turns invalid, and rebuilds on a valid one', async () => {
    const mark = events.length;
    config$.next(rawConfig(MAIN.replace('<% for (const svc', '<% for (const svc of (')));
    const rejected = await waitFor('ConfigRejected', mark);
    assert.equal(rejected.path, 'templates["haproxy.cfg"]');
    assert.match(rejected.message, /^line 13: /);

    await writeFile(join(dir, 'db.yaml'), service('db', 9003));
    await waitFor('DeploymentCompleted', mark);
    assert.match(deployed.at(-1)!.config.main, /server s9003/, 'the old graph still reconciles');

    const mark2 = events.length;
    config$.next({ ...rawConfig(), values: { port: 18081 } });
    await waitFor('ConfigAccepted', mark2);
    await waitFor('DeploymentCompleted', mark2);
    assert.match(deployed.at(-1)!.config.main, /bind 127\.0\.0\.1:18081/);
  });

  it('stops a template that loops at its time limit, keeps the last good configuration live, and recovers once the cause is gone', async () => {
    const mark = events.length;
    // A template that loops forever when a Service named "spin" appears.
    const looping = MAIN.replace('<% for (const svc of resources.services.list()) { -%>', "<% if (resources.services.list().some((s) => s.metadata.name === 'spin')) for (;;) {} -%>\n<% for (const svc of resources.services.list()) { -%>");
    config$.next({ ...rawConfig(looping), settings: { ...rawConfig().settings, renderTimeout: '200ms' } });
    await waitFor('ConfigAccepted', mark);
    await waitFor('DeploymentCompleted', mark);
    const live = deployed.length;

    const mark2 = events.length;
    await writeFile(join(dir, 'spin.yaml'), service('spin', 9004));
    const failed = await waitFor('RenderFailed', mark2);
    assert.equal(failed.error.template, 'haproxy.cfg');
    assert.match(failed.error.message, /render time limit of 200 ms/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(deployed.length, live, 'the last good configuration stays live');

    const mark3 = events.length;
    await rm(join(dir, 'spin.yaml'));
    await writeFile(join(dir, 'after.yaml'), service('after', 9005));
    await waitFor('DeploymentCompleted', mark3);
    assert.match(deployed.at(-1)!.config.main, /server s9005/);
  });
});
