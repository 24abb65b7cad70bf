import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TemplateAbort } from '../../src/templating/abort.ts';
import { readOnly, resourceSets } from '../../src/templating/readonly.ts';
import { templateRealm } from '../../src/templating/realm.ts';
import { service, storeOf } from './support.ts';

function aborts(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof TemplateAbort && pattern.test(e.reason));
}

/** Frozen data: a write throws a TypeError (of the realm the writing code runs in). */
function refuses(fn: () => unknown): void {
  assert.throws(fn, (e: unknown) => templateRealm().isError(e, 'TypeError'));
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
    refuses(() => {
      view.a.b.push(3);
    });
    refuses(() => {
      (view.a as Record<string, unknown>).c = 1;
    });
    refuses(() => delete (view as Partial<typeof view>).a);
    refuses(() => Object.setPrototypeOf(view, null));
    refuses(() => Object.getOwnPropertyDescriptor(view, 'a')?.value.b.pop());
    assert.ok(Object.isFrozen(view) && Object.isFrozen(view.a.b));
    assert.deepEqual(raw, { a: { b: [1, 2] } });
  });

  it('copies into the template realm, so nothing in it leads back to the controller', () => {
    const view = readOnly({ a: [{ b: 1 }] });
    const realm = templateRealm();
    for (const value of [view, view.a, view.a[0]]) assert.ok(realm.isRealmValue(value));
    assert.notEqual(view.constructor, Object);
    assert.throws(() => (view.constructor.constructor as FunctionConstructor)('return process'), /Code generation from strings disallowed/);
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
      Array.from(view.list(), (s) => s.metadata.name),
      ['x', 'y'],
    );
    assert.equal(view.first('b', 'y')?.metadata.name, 'y');
    assert.equal(view.get('missing').length, 0);
    assert.equal(view.size, 2);
    // Store lists and objects are frozen: a write fails, whether through a view or not.
    refuses(() => (view.list() as unknown[]).sort());
    refuses(() => {
      (view.list()[0]!.metadata as { name: string }).name = 'changed';
    });
    assert.equal(view.list()[0]!.metadata.name, 'x');
  });

  it('names an unknown set and the configured ones', () => {
    const sets = resourceSets({ services, ingresses: storeOf('ingresses', []) });
    aborts(() => sets.endpoints, /^unknown resource set "endpoints" \(configured sets: ingresses, services\)$/);
    aborts(() => resourceSets({}).x, /configured sets: none/);
    assert.deepEqual([...Object.keys(sets)], ['ingresses', 'services']);
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
