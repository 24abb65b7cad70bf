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

  it('parses again only the documents whose text changed: the others are the objects read before', () => {
    const doc = (name: string, x: number) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}}\nspec: {x: ${x}}\n`;
    const first = parseManifests('s.yaml', [doc('a', 1), doc('b', 1), doc('c', 1)].join('---\n'));
    assert.ok(first.ok);
    const second = parseManifests('s.yaml', [doc('a', 1), doc('b', 2), doc('c', 1)].join('---\n'), undefined, first.documents);
    assert.ok(second.ok);
    assert.deepEqual(second.objects.map((o) => `${o.metadata.name} ${(o.spec as { x: number }).x}`), ['a 1', 'b 2', 'c 1']);
    assert.equal(second.objects[0], first.objects[0], 'a: unchanged, not read again');
    assert.notEqual(second.objects[1], first.objects[1], 'b: changed, read again');
    assert.equal(second.objects[2], first.objects[2], 'c: unchanged, not read again');
    assert.equal(second.documents.digests.length, 3, 'what the next read may reuse: the documents the file holds now');
    // A changed document that is wrong still fails the whole file, whatever was reused.
    const broken = parseManifests('s.yaml', [doc('a', 1), 'kind: [', doc('c', 1)].join('---\n'), undefined, second.documents);
    assert.ok(!broken.ok);
    assert.ok(broken.problem.line! >= 6, `line ${broken.problem.line}`);
  });

  it('finds a document read before where it moved to, by its text', () => {
    const doc = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}}\n`;
    // Every document after a `---` line, so that each one's text is the same wherever it stands.
    const file = (...names: string[]) => names.map((n) => `---\n${doc(n)}`).join('');
    const first = parseManifests('s.yaml', file('a', 'b', 'c'));
    assert.ok(first.ok);
    const second = parseManifests('s.yaml', file('new', 'c', 'a'), undefined, first.documents);
    assert.ok(second.ok);
    assert.deepEqual(second.objects.map((o) => o.metadata.name), ['new', 'c', 'a']);
    assert.equal(second.objects[1], first.objects[2], 'c: moved up, not read again');
    assert.equal(second.objects[2], first.objects[0], 'a: moved down, not read again');
    const items = `---\napiVersion: v1\nkind: List\nitems:\n- ${doc('x').replace(/\n(?!$)/g, '\n  ')}- ${doc('y').replace(/\n(?!$)/g, '\n  ')}`;
    const list = parseManifests('l.yaml', items);
    assert.ok(list.ok);
    const again = parseManifests('l.yaml', `${file('z')}${items}`, undefined, list.documents);
    assert.ok(again.ok);
    assert.deepEqual(again.objects.map((o) => o.metadata.name), ['z', 'x', 'y']);
    assert.equal(again.objects[1], list.objects[0], 'a List document gives its objects again');
    assert.equal(again.objects[2], list.objects[1]);
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

describe('parseManifests with a size bound', () => {
  const big = (metadata: string) => `apiVersion: v1\nkind: ConfigMap\n${metadata}\ndata:\n  k: "${'x'.repeat(4096)}"\n`;
  const small = 'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: demo}\n';

  it('skips a document above the bound, names it by its first lines, and reads the others', () => {
    const parsed = parseManifests('m.yaml', [small, big('metadata:\n  labels:\n    name: not-this\n  name: huge\n  namespace: ns1'), small.replace('web', 'api')].join('---\n'), 1024);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.objects.map((o) => o.metadata.name), ['web', 'api']);
    assert.equal(parsed.skipped.length, 1);
    assert.deepEqual(parsed.skipped[0]!.object, { kind: 'ConfigMap', namespace: 'ns1', name: 'huge' });
    assert.equal(parsed.skipped[0]!.line, 4);
    assert.match(parsed.skipped[0]!.message, /^ConfigMap ns1\/huge is 0\.0 MiB, more than the 0\.0 MiB an object may be; skipped$/);
  });

  it('names an object in flow style even when its metadata runs past what is read', () => {
    const parsed = parseManifests('m.yaml', big(`metadata: {name: huge, namespace: ns2, annotations: {a: "${'y'.repeat(70_000)}"}}`), 1024);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.skipped[0]!.object, { kind: 'ConfigMap', namespace: 'ns2', name: 'huge' });
    const last = parseManifests('m.yaml', big('metadata: {namespace: ns3, name: "huge"}'), 1024);
    assert.ok(last.ok);
    assert.deepEqual(last.skipped[0]!.object, { kind: 'ConfigMap', namespace: 'ns3', name: 'huge' });
  });

  it('keeps a %YAML directive with its document, and counts lines across documents', () => {
    const bad = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: [oops\n';
    const alone = parseManifests('m.yaml', bad);
    const parsed = parseManifests('m.yaml', `%YAML 1.2\n---\n${small}---\n${bad}`);
    assert.ok(!alone.ok && !parsed.ok);
    // Six lines come before the bad document.
    assert.equal(parsed.problem.line, alone.problem.line! + 6);
    const directive = parseManifests('m.yaml', `%YAML 1.2\n---\n${small}`);
    assert.ok(directive.ok);
    assert.deepEqual(directive.objects.map((o) => o.metadata.name), ['web']);
  });
});
