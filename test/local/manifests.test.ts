import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileWatches, parseManifests, pluralOf } from '../../src/local/manifests.ts';

describe('parseManifests', () => {
  it('reads every document of a multi-document file and flattens Lists', () => {
    const text = [
      'apiVersion: v1',
      'kind: Service',
      'metadata: {name: web, namespace: demo}',
      '---',
      '---',
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- {apiVersion: v1, kind: Service, metadata: {name: api, namespace: demo}}',
    ].join('\n');
    const parsed = parseManifests('svc.yaml', text);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.objects.map((o) => o.metadata.name), ['web', 'api']);
    assert.match(parsed.objects[0]!.metadata.resourceVersion!, /^[0-9a-f]{16}$/);
  });

  it('gives equal content the same version and different content another', () => {
    const a = parseManifests('a.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {x: 1}\n');
    const b = parseManifests('b.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {x: 1}\n');
    const c = parseManifests('c.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {x: 2}\n');
    assert.ok(a.ok && b.ok && c.ok);
    assert.equal(a.objects[0]!.metadata.resourceVersion, b.objects[0]!.metadata.resourceVersion);
    assert.notEqual(a.objects[0]!.metadata.resourceVersion, c.objects[0]!.metadata.resourceVersion);
  });

  it('names the file and the line of a YAML error', () => {
    const parsed = parseManifests('ingress.yaml', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: [web\n');
    assert.ok(!parsed.ok);
    assert.equal(parsed.problem.file, 'ingress.yaml');
    assert.equal(typeof parsed.problem.line, 'number');
    assert.ok(parsed.problem.line! >= 4, `line ${parsed.problem.line}`);
  });

  it('names the document that is not a Kubernetes object', () => {
    const parsed = parseManifests('x.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {}\n');
    assert.deepEqual(parsed, { ok: false, problem: { file: 'x.yaml', line: 5, message: 'the Service has no metadata.name' } });
    assert.deepEqual(parseManifests('y.yaml', '- 1\n- 2\n'), { ok: false, problem: { file: 'y.yaml', line: 1, message: 'a document must be a Kubernetes object' } });
  });
});

describe('pluralOf', () => {
  it('follows the API server default plurals', () => {
    assert.deepEqual(['Ingress', 'Service', 'EndpointSlice', 'Endpoints', 'IngressClass', 'NetworkPolicy', 'HTTPRoute', 'Gateway'].map(pluralOf), [
      'ingresses',
      'services',
      'endpointslices',
      'endpoints',
      'ingressclasses',
      'networkpolicies',
      'httproutes',
      'gateways',
    ]);
  });
});

describe('compileWatches', () => {
  it('matches by apiVersion, resource, namespace and selectors', () => {
    const compiled = compileWatches([
      { name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses', namespace: 'demo', labelSelector: 'team=web' },
    ]);
    assert.ok(compiled.ok);
    const [watch] = compiled.watches;
    const ingress = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'a', namespace: 'demo', labels: { team: 'web' } } };
    assert.equal(watch!.matches(ingress), true);
    assert.equal(watch!.matches({ ...ingress, apiVersion: 'extensions/v1beta1' }), false);
    assert.equal(watch!.matches({ ...ingress, metadata: { ...ingress.metadata, namespace: 'other' } }), false);
    assert.equal(watch!.matches({ ...ingress, metadata: { ...ingress.metadata, labels: {} } }), false);
  });

  it('reports a bad selector with the set it belongs to', () => {
    assert.deepEqual(compileWatches([{ name: 'svc', apiVersion: 'v1', resource: 'services', labelSelector: 'a=(b' }]), {
      ok: false,
      message: 'watch svc: cannot parse label selector term "a=(b"',
    });
  });
});
