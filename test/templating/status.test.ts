import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { compiled, renderError, storeOf } from './support.ts';

const route = (name: string, spec: unknown, generation = 3): KubeObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { namespace: 'shop', name, uid: `uid-${name}`, generation },
  spec,
});
const input = (...objects: KubeObject[]) => ({ resources: { routes: storeOf('routes', objects) }, values: {} });

describe('h.status', () => {
  it('declares conditions, served, fields and entries per object, merged by type and entry, with the generation read', () => {
    const templates = compiled({
      main: [
        '<% for (const r of resources.routes.list()) {',
        "  h.status(r, { conditions: [{ type: 'Accepted', status: false, reason: 'Pending', message: 'first' }], fields: { a: 1 } });",
        "  h.status(r, { conditions: [{ type: 'Accepted', status: true, reason: 'Accepted', message: 'later wins' }, { type: 'Programmed', status: 'True', reason: 'Programmed', message: '', live: true }], served: true, fields: { b: [2] } });",
        "  h.status(r, { parentRef: { name: 'gw', sectionName: 'web' }, controllerName: 'haprx.io/gateway-controller', conditions: [{ type: 'Accepted', status: 'Unknown', reason: 'Pending', message: 'x' }] });",
        "  h.status(r, { listener: 'web', fields: { attachedRoutes: 1 } });",
        '} -%>',
      ].join('\n'),
    });
    const result = renderTemplates(templates, input(route('b', {}), route('a', {}, 7)));
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    assert.deepEqual(
      result.statuses.map((s) => s.ref.name),
      ['a', 'b'],
    );
    const a = result.statuses[0]!;
    assert.deepEqual(a.ref, { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', namespace: 'shop', name: 'a', uid: 'uid-a' });
    assert.equal(a.generation, 7);
    assert.equal(a.served, true);
    assert.deepEqual(a.conditions, [
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'later wins' },
      { type: 'Programmed', status: 'True', reason: 'Programmed', message: '', live: true },
    ]);
    assert.deepEqual(a.fields, { a: 1, b: [2] });
    assert.deepEqual(a.entries, [
      { list: 'parents', key: { parentRef: { name: 'gw', sectionName: 'web' }, controllerName: 'haprx.io/gateway-controller' }, conditions: [{ type: 'Accepted', status: 'Unknown', reason: 'Pending', message: 'x' }], fields: {} },
      { list: 'listeners', key: { name: 'web' }, conditions: [], fields: { attachedRoutes: 1 } },
    ]);
  });

  it('takes back what a failed h.isolate declared, nested ones included, and keeps the rest', () => {
    const templates = compiled({
      main: [
        '<% h.each(resources.routes.list(), (r) => {',
        "  h.status(r, { conditions: [{ type: 'Accepted', status: true, reason: 'Accepted', message: '' }] });",
        "  h.isolate(r, () => h.status(r, { fields: { inner: true } }));",
        "  if (r.spec.bad) h.skip('spec.bad is set', 'spec.bad', 'UnsupportedValue');",
        '}) -%>',
        '<% for (const r of resources.routes.list()) { const skip = h.skipped(r); if (skip) h.status(r, { conditions: [{ type: \'Accepted\', status: false, reason: skip.reason, message: skip.field + \': \' + skip.message }] }); } -%>',
      ].join('\n'),
    });
    const result = renderTemplates(templates, input(route('good', {}), route('bad', { bad: true })));
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    const byName = Object.fromEntries(result.statuses.map((s) => [s.ref.name, s]));
    assert.deepEqual(byName.good!.fields, { inner: true });
    assert.deepEqual(byName.bad!.fields, {}, 'nothing declared inside the failed isolate stays');
    assert.deepEqual(byName.bad!.conditions, [{ type: 'Accepted', status: 'False', reason: 'UnsupportedValue', message: 'spec.bad: spec.bad is set' }]);
    assert.equal(result.warnings[0]?.reason, 'UnsupportedValue');
    assert.equal(result.warnings[0]?.ref?.uid, 'uid-bad');
  });

  it('h.skipped reads a skip made in an included snippet, and a part skip by its part', () => {
    const templates = compiled({
      main: [
        "<% const r = resources.routes.list()[0]; h.isolate(r, () => include('check', { r })); h.isolate(r, () => h.skip('no tls', 'spec.tls'), { part: 'spec.tls' }); -%>",
        '<%- JSON.stringify([h.skipped(r), h.skipped(r, "spec.tls")]) %>',
      ].join('\n'),
      snippets: { check: "<% h.skip('bad hostnames', 'spec.hostnames', 'UnsupportedValue') %>" },
    });
    const result = renderTemplates(templates, input(route('r', {})));
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    assert.deepEqual(JSON.parse(result.config.main), [
      { message: 'bad hostnames', field: 'spec.hostnames', reason: 'UnsupportedValue' },
      { message: 'no tls', field: 'spec.tls' },
    ]);
  });

  it('fails the render for a malformed declaration, naming what is wrong, and skips a subject that is no object', () => {
    const run = (code: string) => renderError({ main: `<% const r = resources.routes.list()[0]; ${code} %>` }, input(route('r', {})));
    assert.match(run("h.status(r, { condition: [] })").message, /unknown key "condition"/);
    assert.match(run("h.status(r, { conditions: [{ type: 'Accepted', status: 'yes', reason: 'A' }] })").message, /status must be true, false/);
    assert.match(run("h.status(r, { conditions: [{ type: 'Accepted', status: true, reason: 'not a reason' }] })").message, /is not a reason/);
    assert.match(run("h.status(r, { parentRef: { name: 'gw' }, conditions: [] })").message, /needs controllerName/);
    assert.match(run("h.status(r, { fields: { conditions: [] } })").message, /fields\.conditions/);
    assert.match(run("h.skip('x', 'f', 'no reason')").message, /reason must be CamelCase/);
    const templates = compiled({ main: "<% h.each(resources.routes.list(), (r) => h.status({ name: 'x' }, {})) %>" });
    const result = renderTemplates(templates, input(route('r', {})));
    assert.ok(result.ok);
    assert.match(result.warnings[0]?.message ?? '', /the subject must be a Kubernetes object/);
    assert.deepEqual(result.statuses, []);
  });

  it('cuts a long message and copies fields out of the template realm', () => {
    const templates = compiled({
      main: "<% const r = resources.routes.list()[0]; h.status(r, { conditions: [{ type: 'Accepted', status: true, reason: 'Accepted', message: 'x'.repeat(5000) }], fields: { list: [r.metadata.name] } }) %>",
    });
    const result = renderTemplates(templates, input(route('r', {})));
    assert.ok(result.ok);
    const [status] = result.statuses;
    assert.equal(status!.conditions[0]!.message.length, 1025);
    assert.ok(Array.isArray(status!.fields.list), 'a plain array of this realm');
    assert.equal(Object.getPrototypeOf(status!.fields), Object.prototype);
  });
});
