import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { Store } from '../../src/k8s/store.ts';
import { type TemplateSet, renderServerSets, renderTemplates } from '../../src/templating/engine.ts';
import { readKey } from '../../src/templating/rendered.ts';
import { compiled } from './support.ts';

const slice = (ns: string, service: string, name: string, ips: string[]): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { namespace: ns, name, labels: { 'kubernetes.io/service-name': service } },
  endpoints: ips.map((ip) => ({ addresses: [ip] })),
});

function slicesOf(objects: KubeObject[]): Store {
  const store = new Store('slices', { indexBy: ['$.metadata.namespace', '$.metadata.labels["kubernetes.io/service-name"]'] });
  for (const object of objects) store.apply({ type: 'upsert', resource: 'slices', object });
  return store;
}

const SET: TemplateSet = {
  main: `global
  maxconn 10
<% for (const [ns, svc] of [['a', 'web'], ['b', 'api']]) { -%>
backend be_<%- ns %>_<%- svc %>
  balance roundrobin
<%- h.servers('be_' + ns + '_' + svc, 'servers', { ns, svc }) -%>
<% } -%>
# <%- resources.slices.size %> slices
`,
  snippets: {
    servers: `<% for (const s of resources.slices.get(locals.ns, locals.svc)) for (const e of s.endpoints) { -%>
  server <%= h.identifier('srv', e.addresses[0]) %> <%= e.addresses[0] %>:80
<% } -%>`,
  },
};

describe('h.servers', () => {
  it('places the server lines, and records where they stand, with what, and what their snippet read', () => {
    const templates = compiled(SET);
    const result = renderTemplates(templates, { resources: { slices: slicesOf([slice('a', 'web', 'web-1', ['10.0.0.1', '10.0.0.2']), slice('b', 'api', 'api-1', ['10.0.1.1'])]) }, values: {} });
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    const { main, serverSets } = result.config;
    assert.equal(main, 'global\n  maxconn 10\nbackend be_a_web\n  balance roundrobin\n  server srv_10.0.0.1 10.0.0.1:80\n  server srv_10.0.0.2 10.0.0.2:80\nbackend be_b_api\n  balance roundrobin\n  server srv_10.0.1.1 10.0.1.1:80\n# 2 slices\n');
    assert.deepEqual(
      serverSets!.sets.map((s) => ({ backend: s.backend, snippet: s.snippet, args: JSON.parse(s.args), text: main.slice(s.start, s.end), reads: s.reads })),
      [
        { backend: 'be_a_web', snippet: 'servers', args: { ns: 'a', svc: 'web' }, text: '  server srv_10.0.0.1 10.0.0.1:80\n  server srv_10.0.0.2 10.0.0.2:80\n', reads: [readKey('slices', 'a\u0000web')] },
        { backend: 'be_b_api', snippet: 'servers', args: { ns: 'b', svc: 'api' }, text: '  server srv_10.0.1.1 10.0.1.1:80\n', reads: [readKey('slices', 'b\u0000api')] },
      ],
    );
    // The slice count read outside any server set reads the whole set.
    assert.deepEqual(serverSets!.reads, [readKey('slices', undefined)]);
  });

  it('renders a set alone as the full render would with what the sets hold now', () => {
    const templates = compiled(SET);
    const slices = slicesOf([slice('a', 'web', 'web-1', ['10.0.0.1'])]);
    const before = renderTemplates(templates, { resources: { slices }, values: {} });
    assert.ok(before.ok);
    slices.apply({ type: 'upsert', resource: 'slices', object: slice('a', 'web', 'web-1', ['10.0.0.9', '10.0.0.1']) });
    const full = renderTemplates(templates, { resources: { slices }, values: {} });
    assert.ok(full.ok);
    const alone = renderServerSets(templates, [before.config.serverSets!.sets[0]!], { resources: { slices }, values: {} });
    assert.ok(alone.ok, JSON.stringify(!alone.ok && alone.error));
    const set = full.config.serverSets!.sets[0]!;
    assert.equal(alone.texts[0], full.config.main.slice(set.start, set.end));
    assert.deepEqual(alone.reads, [[readKey('slices', 'a\u0000web')]]);
  });

  it('keeps no record of a set whose lines stand twice or not at all, and still writes them', () => {
    const templates = compiled({
      main: `<% const lines = h.servers('be_x', 'servers', { ns: 'a', svc: 'web' }) -%>
backend be_x
<%- lines -%>
backend be_y
<%- lines -%>
<% h.servers('be_z', 'servers', { ns: 'a', svc: 'web' }) -%>
`,
      snippets: SET.snippets!,
    });
    const result = renderTemplates(templates, { resources: { slices: slicesOf([slice('a', 'web', 'w', ['10.0.0.1'])]) }, values: {} });
    assert.ok(result.ok);
    assert.equal(result.config.main, 'backend be_x\n  server srv_10.0.0.1 10.0.0.1:80\nbackend be_y\n  server srv_10.0.0.1 10.0.0.1:80\n');
    assert.deepEqual(result.config.serverSets!.sets, []);
  });

  it('fails the render where it cannot work: outside haproxy.cfg, nested, with arguments that are not data, written escaped', () => {
    const slices = slicesOf([]);
    const error = (set: TemplateSet) => {
      const result = renderTemplates(compiled(set), { resources: { slices }, values: {} });
      assert.ok(!result.ok, 'expected the render to fail');
      return result.error.message;
    };
    assert.match(error({ main: '', maps: { 'a.map': "<%- h.servers('be', 's') %>" }, snippets: { s: '' } }), /not of another file/);
    assert.match(error({ main: "<%- h.servers('be', 's') %>", snippets: { s: "<%- h.servers('be2', 't') %>", t: '' } }), /snippet of another servers\(\)/);
    assert.match(error({ main: "<%- h.servers('be', 's', { f: 10n }) %>", snippets: { s: '' } }), /plain data/);
    assert.match(error({ main: "<%= h.servers('be', 's') %>", snippets: { s: '' } }), /control character/);
  });

  it('records nothing for an object h.isolate skipped', () => {
    const templates = compiled({
      main: `<% h.isolate({ kind: 'Service', metadata: { name: 'bad' } }, () => { h.servers('be_bad', 'servers', { ns: 'a', svc: 'web' }); h.skip('broken'); }) -%>
backend be_ok
<%- h.servers('be_ok', 'servers', { ns: 'a', svc: 'web' }) -%>
`,
      snippets: SET.snippets!,
    });
    const result = renderTemplates(templates, { resources: { slices: slicesOf([slice('a', 'web', 'w', ['10.0.0.1'])]) }, values: {} });
    assert.ok(result.ok);
    assert.deepEqual(result.config.serverSets!.sets.map((s) => s.backend), ['be_ok']);
  });
});
