import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseManifests } from '../../src/local/manifests.ts';
import { type ParseWire, fromWireSteps, toWire } from '../../src/local/parse-wire.ts';
import { runSteps } from '../../src/steps.ts';

const fromWire = (wire: ParseWire) => runSteps(fromWireSteps(wire));

// A file with what a parse can give: single objects, a List of two, an empty document,
// a JSON document, a value JSON cannot hold (.nan), and a document too large to keep.
const text = [
  'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: demo}\nspec: {ports: [{port: 80}]}\n',
  'apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {x: "1"}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, resourceVersion: "7"}}\n',
  '# nothing here\n',
  '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "d"}, "spec": {"weight": 2}}\n',
  'apiVersion: v1\nkind: Service\nmetadata: {name: e}\nspec: {ratio: .nan}\n',
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: ${'x'.repeat(2_000)}}\n`,
].join('---\n');

describe('parse wire', () => {
  it('carries a parsed file as JSON text, one per document, and gives back what parsing on this thread gives', () => {
    const wire = toWire(parseManifests('a.yaml', text, 1_000, undefined, { readBack: false }));
    assert.ok(wire.ok);
    assert.equal(wire.gave.length, 5);
    assert.ok(wire.gave.every((given) => typeof given === 'string'));
    const parsed = fromWire(wire);
    assert.deepEqual(parsed, parseManifests('a.yaml', text, 1_000));
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.objects.map((o) => o.metadata.name), ['a', 'b', 'c', 'd', 'e']);
    assert.equal(parsed.skipped.length, 1);
    assert.equal((parsed.objects[4]!.spec as { ratio: unknown }).ratio, null);
  });

  it('gives objects that are the ones their documents gave, so a file read again reuses them', () => {
    const parsed = fromWire(toWire(parseManifests('a.yaml', text, 1_000, undefined, { readBack: false })));
    assert.ok(parsed.ok);
    const [service, list, empty, json, nan] = parsed.documents.gave;
    assert.equal(service, parsed.objects[0]);
    assert.ok(Array.isArray(list));
    assert.equal(list[0], parsed.objects[1]);
    assert.equal(list[1], parsed.objects[2]);
    assert.deepEqual(empty, []);
    assert.equal(json, parsed.objects[3]);
    assert.equal(nan, parsed.objects[4]);
    // Read again with one document changed, the others are taken from the wire's objects.
    const again = parseManifests('a.yaml', text.replace('port: 80', 'port: 81'), 1_000, parsed.documents);
    assert.ok(again.ok);
    assert.notEqual(again.objects[0], parsed.objects[0]);
    assert.equal(again.objects[1], parsed.objects[1]);
    assert.equal(again.objects[4], parsed.objects[4]);
  });

  it('reads a document at a time, yielding after each, so a large file is read in turns', () => {
    const wire = toWire(parseManifests('a.yaml', text, 1_000, undefined, { readBack: false }));
    const steps = fromWireSteps(wire);
    let yields = 0;
    for (let step = steps.next(); !step.done; step = steps.next()) yields++;
    assert.equal(yields, 5);
  });

  it('refuses a document whose text is not JSON', () => {
    assert.throws(() => fromWire({ ok: true, gave: ['{"kind":"Serv'], digests: ['x'], skipped: [] }), SyntaxError);
  });

  it('passes a file that failed as it is', () => {
    const failed = parseManifests('b.yaml', 'kind: [unclosed\n');
    assert.equal(failed.ok, false);
    assert.deepEqual(fromWire(toWire(failed)), failed);
  });
});
