import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { readOnly, resourceSets } from '../../src/templating/readonly.ts';
import { service, storeOf } from './support.ts';

function aborts(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof TemplateAbort && pattern.test(e.reason));
}

describe('readOnly', () => {
  it('enumerates object keys sorted, arrays in index order', () => {
    const view = readOnly({ b: 1, a: { d: 1, c: 2 }, list: [3, 1, 2] });
    assert.deepEqual(Object.keys(view), ['a', 'b', 'list']);
    assert.deepEqual(Object.keys(view.a), ['c', 'd']);
    assert.equal(JSON.stringify(view), '{"a":{"c":2,"d":1},"b":1,"list":[3,1,2]}');
    const seen: string[] = [];
    for (const key in view.a) seen.push(key);
    assert.deepEqual(seen, ['c', 'd']);
  });

  it('refuses every kind of change, nested ones included', () => {
    const raw = { a: { b: [1, 2] } };
    const view = readOnly(raw);
    aborts(() => {
      view.a.b.push(3);
    }, /read-only/);
    aborts(() => {
      (view.a as Record<string, unknown>).c = 1;
    }, /read-only/);
    aborts(() => delete (view as Partial<typeof view>).a, /read-only/);
    aborts(() => Object.setPrototypeOf(view, null), /read-only/);
    aborts(() => Object.preventExtensions(view), /read-only/);
    aborts(() => Object.getOwnPropertyDescriptor(view, 'a')?.value.b.pop(), /read-only/);
    assert.deepEqual(raw, { a: { b: [1, 2] } });
  });

  it('gives the same view for the same object, so identity comparisons hold', () => {
    const shared = { x: 1 };
    const view = readOnly({ left: shared, right: shared });
    assert.equal(view.left, view.right);
    assert.equal(readOnly(view), view);
    assert.equal(new Set([view.left, view.right]).size, 1);
  });

  it('reads frozen data without breaking proxy invariants', () => {
    const view = readOnly(Object.freeze({ inner: Object.freeze({ n: 1 }), list: Object.freeze([1]) }));
    assert.equal(view.inner.n, 1);
    assert.deepEqual(Object.keys(view), ['inner', 'list']);
    assert.equal(view.list[0], 1);
  });

  it('passes primitives through', () => {
    assert.equal(readOnly('x'), 'x');
    assert.equal(readOnly(null), null);
    assert.equal(readOnly(undefined), undefined);
  });
});

describe('resourceSets', () => {
  const services = storeOf('services', [service('b', 'y', 2), service('a', 'x', 1)]);

  it('exposes each set by name with sorted, read-only queries', () => {
    const sets = resourceSets({ services });
    const view = sets.services;
    assert.ok(view);
    assert.deepEqual(
      view.list().map((s) => s.metadata.name),
      ['x', 'y'],
    );
    assert.equal(view.first('b', 'y')?.metadata.name, 'y');
    assert.deepEqual(view.get('missing'), []);
    assert.equal(view.size, 2);
    // Store lists and objects are frozen: a write fails, whether through a view or not.
    assert.throws(() => (view.list() as unknown[]).sort(), TypeError);
    assert.throws(() => {
      (view.list()[0]!.metadata as { name: string }).name = 'changed';
    }, TypeError);
    assert.equal(view.list()[0]!.metadata.name, 'x');
  });

  it('names an unknown set and the configured ones', () => {
    const sets = resourceSets({ services, ingresses: storeOf('ingresses', []) });
    aborts(() => sets.endpoints, /^unknown resource set "endpoints" \(configured sets: ingresses, services\)$/);
    aborts(() => resourceSets({}).x, /configured sets: none/);
    assert.deepEqual(Object.keys(sets), ['ingresses', 'services']);
    aborts(() => {
      (sets as Record<string, unknown>).services = null;
    }, /read-only/);
  });

  it('does not hand out the store itself', () => {
    const view = resourceSets({ services }).services as unknown as Record<string, unknown>;
    assert.equal(view.apply, undefined);
    assert.equal(Object.isFrozen(view), true);
  });
});
