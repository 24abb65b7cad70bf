import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { renderTemplates } from '../../src/templating/engine.ts';
import { MIN_OBJECTS } from '../../src/templating/systematic-faults.ts';
import { compiled, renderError, storeOf } from './support.ts';

const ingress = (name: string, spec: unknown): KubeObject => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { namespace: 'shop', name }, spec });
const good = (name: string) => ingress(name, { rules: [{ host: `${name}.example` }] });
const input = (...objects: KubeObject[]) => ({ resources: { ingresses: storeOf('ingresses', objects) }, values: {} });

/** haproxy.cfg that reads each Ingress's hosts in isolation through `expression` (line 3). */
const hostsVia = (expression: string) => ({
  main: [
    'backends',
    '<% for (const text of h.each(resources.ingresses.list(), (ing) => {',
    `  const hosts = ${expression}.map((r) => r.host);`,
    "  return hosts.join(',') + '\\n';",
    '})) { -%>',
    '<%- text -%>',
    '<% } -%>',
  ].join('\n'),
});

describe('a template fault told from objects at fault', () => {
  it('fails the render, naming the template, the line and the objects, when a typo throws for every object', () => {
    const error = renderError(hostsVia('ing.spce.rules'), input(good('a'), good('b'), good('c'), good('d')));
    assert.equal(error.template, 'haproxy.cfg');
    assert.equal(error.line, 3);
    assert.equal(error.message, "TypeError: Cannot read properties of undefined (reading 'rules'), thrown for every Ingress read there (4 of 4: shop/a, shop/b, shop/c, …): a fault of the template, not of the objects");
  });

  it('fails the render for a single object too: a typo must not deploy a configuration without it', () => {
    const error = renderError(hostsVia('ing.spce.rules'), input(good('only')));
    assert.equal(error.line, 3);
    assert.match(error.message, /thrown for every Ingress read there \(1 of 1: shop\/only\)/);
  });

  it(`skips objects of the wrong shape while they are fewer than ${MIN_OBJECTS} or not more than half`, () => {
    const templates = compiled(hostsVia('ing.spec.rules'));
    const bad = (name: string) => ingress(name, { rules: 'oops' });
    for (const objects of [
      [good('a'), bad('b'), bad('c')], // 2 of 3: fewer than MIN_OBJECTS
      [good('a'), good('b'), good('c'), bad('d'), bad('e'), bad('f')], // 3 of 6: not more than half
    ]) {
      const result = renderTemplates(templates, input(...objects));
      assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
      const goodHosts = objects.filter((o) => Array.isArray((o.spec as { rules: unknown }).rules)).map((o) => `${o.metadata.name}.example\n`);
      assert.equal(result.config.main, `backends\n${goodHosts.join('')}`);
      assert.equal(result.warnings.length, objects.length - goodHosts.length);
      assert.ok(result.warnings.every((w) => /^skipped: TypeError: ing\.spec\.rules\.map is not a function \(at haproxy\.cfg:3\)$/.test(w.message)));
    }
  });

  it(`fails the render when at least ${MIN_OBJECTS} objects and more than half fail at the same line`, () => {
    const bad = (name: string) => ingress(name, { rules: 'oops' });
    const error = renderError(hostsVia('ing.spec.rules'), input(good('a'), good('b'), bad('c'), bad('d'), bad('e')));
    assert.equal(error.line, 3);
    assert.match(error.message, /^TypeError: ing\.spec\.rules\.map is not a function, thrown for 3 of 5 Ingress objects read there \(shop\/c, shop\/d, shop\/e\): a fault of the template/);
  });

  it('counts failures line by line: objects failing at different lines are each their own fault', () => {
    const templates = compiled({
      main: [
        '<%- h.each(resources.ingresses.list(), (ing) => {',
        '  if (ing.spec.a) return ing.spec.a.x.y;',
        '  if (ing.spec.b) return ing.spec.b.x.y;',
        "  return ing.metadata.name + '\\n';",
        "}).join('') -%>",
      ].join('\n'),
    });
    const result = renderTemplates(templates, input(ingress('a', { a: {} }), ingress('b', { a: {} }), ingress('c', { b: {} }), ingress('d', { b: {} }), good('e')));
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    assert.equal(result.config.main, 'e\n');
    assert.deepEqual(result.warnings.map((w) => w.line), [2, 2, 3, 3]);
  });

  it('never counts what says on purpose that the object is at fault: h.skip, h.list, a helper refusing a value, a thrown Error', () => {
    for (const code of ["h.skip('no', 'spec')", "h.list(ing.spec.rules, 'spec.rules')", 'h.mapKey(ing.spec.rules)', "throw new Error('refused')"]) {
      const templates = compiled({ main: `<%- h.each(resources.ingresses.list(), (ing) => { ${code}; return 'kept'; }).join('') %>` });
      const result = renderTemplates(templates, input(ingress('a', { rules: 'x y' }), ingress('b', { rules: 'x y' }), ingress('c', { rules: 'x y' })));
      assert.ok(result.ok, `${code}: ${JSON.stringify(!result.ok && result.error)}`);
      assert.equal(result.config.main, '', code);
      assert.equal(result.warnings.length, 3, code);
    }
  });

  it('counts a part at the site where it is read: a typo that only objects with TLS reach fails the render', () => {
    const templates = compiled({
      main: [
        '<% for (const ing of resources.ingresses.list()) {',
        "  const certs = h.list(ing.spec.tls, 'spec.tls').map((t, i) => h.isolate(ing, () => t.secretNme.length, { part: `spec.tls[${i}]`, fallback: 0 }));",
        '-%>',
        '<%= ing.metadata.name %> <%= certs.length %>',
        '<% } -%>',
      ].join('\n'),
    });
    const tls = (name: string) => ingress(name, { tls: [{ secretName: 'a' }, { secretName: 'b' }] });
    const result = renderTemplates(templates, input(good('a'), good('b'), good('c'), tls('d')));
    assert.ok(!result.ok);
    assert.equal(result.error.line, 2);
    assert.match(result.error.message, /^TypeError: Cannot read properties of undefined \(reading 'length'\), thrown for every Ingress read there \(1 of 1: shop\/d\)/);
  });

  it('names the snippet and its line when the typo is in a snippet included from the isolated function', () => {
    const error = renderError(
      {
        main: "<%- h.each(resources.ingresses.list(), (ing) => include('hosts', { ing })).join('') %>",
        snippets: { hosts: "<% const { ing } = locals -%>\n<%- ing.spec.rulez.map((r) => r.host).join(',') %>\n" },
      },
      input(good('a'), good('b')),
    );
    assert.equal(error.template, 'snippets/hosts');
    assert.equal(error.line, 2);
    assert.match(error.message, /thrown for every Ingress read there \(2 of 2: shop\/a, shop\/b\)/);
  });

  it('leaves values that are not Kubernetes objects to h.isolate alone', () => {
    const templates = compiled({ main: "<%= h.each([{ x: 1 }, { x: 2 }], (v) => v.y.z).length %> <%= h.isolate('values.port', () => values.port.x, { fallback: 'none' }) %>" });
    const result = renderTemplates(templates, { resources: {}, values: {} });
    assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
    assert.equal(result.config.main, '0 none');
    // The two items have no name, so their identical warnings are kept once.
    assert.deepEqual(
      result.warnings.map((w) => [w.object, w.message]),
      [
        [undefined, "skipped: TypeError: Cannot read properties of undefined (reading 'z') (at haproxy.cfg:1)"],
        ['values.port', "skipped: TypeError: Cannot read properties of undefined (reading 'x') (at haproxy.cfg:1)"],
      ],
    );
  });
});
