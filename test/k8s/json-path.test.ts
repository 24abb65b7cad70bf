import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JSONPathEnvironment } from 'json-p3';
import { compilePath, memberPath } from '../../src/k8s/json-path.ts';

/** The general evaluator, as the standard reads: what every path must select, walked directly or not. */
const reference = new JSONPathEnvironment({ strict: true });

const objects: unknown[] = [
  { metadata: { namespace: 'a', name: 'x', labels: { 'kubernetes.io/service-name': 'web', app: 'shop', 'dotted.key': 1, "it's": 2 } } },
  { metadata: { namespace: '', labels: { 'kubernetes.io/service-name': null } } },
  { metadata: { labels: ['kubernetes.io/service-name'] } },
  { metadata: { labels: 'kubernetes.io/service-name' } },
  { metadata: null },
  { metadata: { namespace: { nested: true } }, spec: { tls: [{ secretName: 's' }] } },
  JSON.parse('{"metadata": {"__proto__": {"name": "own"}, "constructor": "c"}}'),
  { metadata: Object.create({ namespace: 'inherited' }) },
  [1, 2],
  'text',
  null,
];

const paths = [
  '$.metadata.namespace',
  '$.metadata.name',
  '$.metadata.labels["kubernetes.io/service-name"]',
  "$.metadata.labels['app']",
  '$.metadata.labels["dotted.key"]',
  '$.metadata.labels["it\'s"]',
  '$.metadata["__proto__"].name',
  '$.metadata.constructor',
  '$.metadata.toString',
  '$.metadata.labels["0"]',
  '$.metadata.labels.length',
  '$.length',
  '$',
  '$.spec.tls[*].secretName',
  '$..name',
];

describe('compilePath', () => {
  it('selects what the standard selects, for paths of member names walked directly and for the others', () => {
    for (const text of paths) {
      const compiled = compilePath(text);
      assert.ok(compiled.ok, text);
      for (const object of objects) {
        const got = compiled.path.values(object);
        assert.ok(got.ok, text);
        assert.deepEqual(got.values, reference.query(text, object as never).values(), `${text} on ${JSON.stringify(object)}`);
      }
    }
  });

  it('walks paths of member names directly, the shipped index keys among them; any other goes to the general evaluator', () => {
    assert.deepEqual(memberPath('$.metadata.labels["kubernetes.io/service-name"]'), ['metadata', 'labels', 'kubernetes.io/service-name']);
    assert.deepEqual(memberPath("$.metadata['namespace']"), ['metadata', 'namespace']);
    assert.deepEqual(memberPath('$'), []);
    for (const other of ['$.spec.tls[*].secretName', '$..name', '$.a[0]', '$.a["x\\"y"]', '$.a.b-c', '$.items[?@.ready == true]']) assert.equal(memberPath(other), undefined, other);
  });
});
