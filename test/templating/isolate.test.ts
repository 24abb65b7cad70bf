import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { compiled, renderError, storeOf } from './support.ts';

const ingress = (name: string, spec: unknown): KubeObject => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { namespace: 'shop', name }, spec });
const input = (...objects: KubeObject[]) => ({ resources: { ingresses: storeOf('ingresses', objects) }, values: {} });

describe('h.isolate and h.each', () => {
  it('skip only the object that throws, with a structured warning naming it, the template and the line', () => {
    const templates = compiled({
      main: [
        'backends',
        '<% for (const text of h.each(resources.ingresses.list(), (ing) => {',
        '  const hosts = ing.spec.rules.map((r) => r.host);',
        "  return hosts.join(',') + '\\n';",
        '})) { -%>',
        '<%- text -%>',
        '<% } -%>',
      ].join('\n'),
    });
    const result = renderTemplates(templates, input(ingress('a', { rules: [{ host: 'a.example' }] }), ingress('bad', { rules: 'oops' }), ingress('c', { rules: [{ host: 'c.example' }] })));
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    assert.equal(result.config.main, 'backends\na.example\nc.example\n');
    assert.deepEqual(result.warnings, [
      {
        object: 'Ingress shop/bad',
        ref: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'shop', name: 'bad' },
        message: 'skipped: TypeError: ing.spec.rules.map is not a function (at haproxy.cfg:3)',
        template: 'haproxy.cfg',
        line: 3,
        skipped: true,
      },
    ]);
  });

  it('take back the certificate files of a skipped object, also from nested isolations, and keep those of the others', () => {
    const templates = compiled({
      main: [
        '<% h.each(resources.ingresses.list(), (ing) => {',
        "  h.isolate(ing, () => h.certFile(ing.metadata.name + '-inner.pem', 'x'));",
        "  h.certFile(ing.metadata.name + '.pem', 'pem');",
        '  if (ing.spec.fail) throw new Error(ing.spec.fail);',
        '}) %>',
      ].join('\n'),
    });
    const result = renderTemplates(templates, input(ingress('a', {}), ingress('b', { fail: 'no' })));
    assert.ok(result.ok);
    assert.deepEqual(Object.keys(result.config.certs).sort(), ['a-inner.pem', 'a.pem']);
    assert.equal(result.warnings[0]?.line, 4);
    assert.match(result.warnings[0]?.message ?? '', /^skipped: no \(at haproxy\.cfg:4\)$/);
  });

  it('h.skip names the field; a part skips only that part; the fallback is returned', () => {
    const templates = compiled({
      main: [
        '<% for (const ing of resources.ingresses.list()) {',
        "  const tls = h.isolate(ing, () => { if (typeof ing.spec.tls !== 'string') h.skip('must be a string', 'spec.tls'); return ing.spec.tls; }, { part: 'spec.tls', fallback: 'none' }); -%>",
        '<%= ing.metadata.name %> <%= tls %>',
        '<% } -%>',
      ].join('\n'),
    });
    const result = renderTemplates(templates, input(ingress('a', { tls: 'yes' }), ingress('b', { tls: 7 })));
    assert.ok(result.ok);
    assert.equal(result.config.main, 'a yes\nb none\n');
    assert.deepEqual(result.warnings, [
      {
        object: 'Ingress shop/b',
        ref: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'shop', name: 'b' },
        message: 'spec.tls skipped: must be a string',
        field: 'spec.tls',
        template: 'haproxy.cfg',
        line: 2,
      },
    ]);
  });

  it('locate a throw inside a snippet included from the isolated function at the snippet line', () => {
    const templates = compiled({
      main: "<%- h.each(resources.ingresses.list(), (ing) => include('one', { ing })).join('') %>",
      snippets: { one: "<%= locals.ing.metadata.name %>\n<% if (locals.ing.spec.bad) h.skip('bad spec', 'spec.bad') %>;" },
    });
    const result = renderTemplates(templates, input(ingress('a', {}), ingress('b', { bad: true })));
    assert.ok(result.ok);
    assert.equal(result.config.main, 'a\n;');
    assert.deepEqual(
      result.warnings.map((w) => [w.object, w.field, w.template, w.line, w.message]),
      [['Ingress shop/b', 'spec.bad', 'snippets/one', 2, 'skipped: bad spec']],
    );
  });

  it('still fail the render on faults of the templates: h.fail, unknown names, misspelt helpers, read-only writes', () => {
    const cases: [string, RegExp][] = [
      ["h.fail('stop')", /^stop$/],
      ["include('missing')", /unknown snippet/],
      ['notDefined + 1', /ReferenceError/],
      ['h.isHostnam(ing)', /is not a function/],
      ["ing.metadata.name = 'x'", /read-only/],
      ["h.mapPath('nope.map')", /no maps template/],
      ['resources.nothing.list()', /unknown resource set/],
    ];
    for (const [code, message] of cases) {
      const error = renderError({ main: `<% h.each(resources.ingresses.list(), (ing) => { ${code} }) %>` }, input(ingress('a', {})));
      assert.match(error.message, message, code);
      assert.equal(error.template, 'haproxy.cfg');
    }
  });

  it('each keeps results that are undefined, and leaves the list alone when nothing fails', () => {
    const templates = compiled({ main: '<%= h.each([1, 2, 3], (n) => (n === 2 ? undefined : n)).length %>' });
    const result = renderTemplates(templates, { resources: {}, values: {} });
    assert.ok(result.ok);
    assert.equal(result.config.main, '3');
    assert.deepEqual(result.warnings, []);
  });

  it('h.skip outside any isolation fails the render with its message', () => {
    assert.deepEqual(renderError({ main: "x\n<% h.skip('no', 'spec') %>" }), { template: 'haproxy.cfg', line: 2, message: 'no' });
  });

  it('h.warn records the template, the line and the field', () => {
    const templates = compiled({ main: "x\n<% h.warn(values.ing, 'odd', { field: 'spec.x' }) %>", snippets: {} });
    const result = renderTemplates(templates, { resources: {}, values: { ing: { kind: 'Service', metadata: { name: 'web', namespace: 'shop' } } } });
    assert.ok(result.ok);
    assert.deepEqual(result.warnings, [{ object: 'Service shop/web', ref: { kind: 'Service', namespace: 'shop', name: 'web' }, message: 'odd', field: 'spec.x', template: 'haproxy.cfg', line: 2 }]);
  });
});
