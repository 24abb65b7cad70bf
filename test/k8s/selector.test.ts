import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/k8s/resource.ts';
import { fieldSelector, labelSelector } from '../../src/k8s/selector.ts';

const pod = (labels: Record<string, string>, spec: Record<string, unknown> = {}): KubeObject => ({ metadata: { name: 'p', namespace: 'prod', labels }, spec });

function matches(selector: ReturnType<typeof labelSelector>, object: KubeObject): boolean {
  assert.ok(selector.ok, 'selector parses');
  return selector.matches(object);
}

describe('labelSelector', () => {
  it('applies equality, inequality, set and existence terms as the API server does', () => {
    const s = labelSelector('app=web,tier!=db,env in (prod, staging),!legacy,track');
    assert.equal(matches(s, pod({ app: 'web', env: 'prod', track: 'stable' })), true);
    assert.equal(matches(s, pod({ app: 'web', env: 'prod', track: 'stable', tier: 'db' })), false);
    assert.equal(matches(s, pod({ app: 'web', env: 'dev', track: 'stable' })), false);
    assert.equal(matches(s, pod({ app: 'web', env: 'prod', track: 'stable', legacy: 'yes' })), false);
    assert.equal(matches(s, pod({ app: 'web', env: 'prod' })), false);
    assert.equal(matches(labelSelector('env notin (dev)'), pod({})), true);
    assert.equal(matches(labelSelector('app==web'), pod({ app: 'web' })), true);
  });

  it('matches everything when empty, and rejects what it cannot parse', () => {
    assert.equal(matches(labelSelector(''), pod({})), true);
    assert.deepEqual(labelSelector('app=(web'), { ok: false, message: 'cannot parse label selector term "app=(web"' });
  });
});

describe('fieldSelector', () => {
  it('compares field paths and JSONPath values', () => {
    assert.equal(matches(fieldSelector('metadata.namespace=prod'), pod({})), true);
    assert.equal(matches(fieldSelector('metadata.namespace!=prod'), pod({})), false);
    assert.equal(matches(fieldSelector('spec.ingressClassName=haprx'), pod({}, { ingressClassName: 'haprx' })), true);
    assert.equal(matches(fieldSelector('spec.ingressClassName=haprx'), pod({}, {})), false);
    assert.equal(matches(fieldSelector('spec.ingressClassName='), pod({}, {})), true, 'an absent field equals the empty string');
    assert.equal(matches(fieldSelector('$.spec.rules[*].host=b.example'), pod({}, { rules: [{ host: 'a.example' }, { host: 'b.example' }] })), true);
  });

  it('rejects a term without an operator', () => {
    assert.equal(fieldSelector('metadata.name').ok, false);
  });

  it('compiles its paths when parsed: a typo is an error then, not on some object later', () => {
    const typo = fieldSelector('metadata.labels["app"=web');
    assert.ok(!typo.ok);
    assert.match(typo.message, /is not a JSONPath/);
    assert.equal(fieldSelector('$.spec.rules[?@.host].host=a').ok, true);
  });

  it('never throws: an object a path cannot be evaluated on does not match, and the verdict says why', () => {
    const selector = fieldSelector('$..host=a.example');
    assert.ok(selector.ok);
    let deep: unknown = { host: 'a.example' };
    for (let i = 0; i < 300; i++) deep = { a: deep };
    const object = pod({}, { deep });
    assert.equal(selector.matches(object), false);
    assert.match(selector.test(object).problem ?? '', /fieldSelector JSONPath \$\.\.host: .*recursion/i);
    assert.deepEqual(selector.test(pod({}, { host: 'a.example' })), { match: true });
    const labels = labelSelector('app=web');
    assert.ok(labels.ok);
    assert.equal(labels.matches({ metadata: { name: 'x', labels: 'oops' } } as unknown as KubeObject), false);
    assert.equal(labels.matches({} as unknown as KubeObject), false);
  });
});
