import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ControllerEvent, InstanceResult } from '../../src/events.ts';
import { StatusBook } from '../../src/status/book.ts';
import type { ObjectStatus } from '../../src/status/types.ts';
import { configNamed, reconcileNo } from '../../marble-tests/helpers.ts';
import { heapAfterGc } from '../support/heap.ts';

const gateway = (generation: number, extra: Partial<ObjectStatus> = {}): ObjectStatus => ({
  ref: { kind: 'Gateway', namespace: 'shop', name: 'edge' },
  generation,
  conditions: [
    { type: 'Accepted', status: 'True', reason: 'Accepted', message: '' },
    { type: 'Programmed', status: 'True', reason: 'Programmed', message: 'served', live: true },
  ],
  fields: {},
  entries: [],
  ...extra,
});
const ingress = (generation: number): ObjectStatus => ({ ref: { kind: 'Ingress', namespace: 'shop', name: 'web' }, generation, served: true, conditions: [], fields: {}, entries: [] });

const rendered = (label: string, statuses: ObjectStatus[]): ControllerEvent => ({ type: 'Rendered', reconcile: reconcileNo(1), config: configNamed(label), durationMs: 1, statuses });
const unchanged = (label: string, statuses: ObjectStatus[]): ControllerEvent => ({ type: 'RenderUnchanged', reconcile: reconcileNo(1), hash: configNamed(label).hash, durationMs: 1, statuses });
const result = (ok: boolean): InstanceResult => ({ endpoint: { id: 'haproxy-0', address: 'x' }, ok, reloaded: true, runtimeOps: 0, durationMs: 1, ...(!ok && { error: 'connection refused\nmore' }) });
const deployed = (label: string, ok = true): ControllerEvent => {
  const deployment = { id: 1, reconcile: reconcileNo(1), config: configNamed(label), endpoints: [], reason: 'change' as const, queuedAt: 0, startedAt: 0 };
  return { type: 'DeploymentCompleted', deployment, results: [result(ok)], durationMs: 1 };
};
const programmed = (book: StatusBook, key = 'Gateway shop/edge') => book.composed(key)?.conditions.find((c) => c.type === 'Programmed');

describe('StatusBook', () => {
  it('holds Programmed back until the configuration that declared it is deployed to every instance', () => {
    const book = new StatusBook();
    const pending = { type: 'Programmed', status: 'Unknown', reason: 'Pending', message: 'waiting for the configuration to be deployed to every instance', live: true };
    assert.deepEqual(book.apply(rendered('a', [gateway(1)])), ['Gateway shop/edge']);
    // Nothing deployed since the start: a Programmed condition the object shows is kept as it is.
    assert.deepEqual(programmed(book), { ...pending, keepShown: true });
    assert.equal(book.composed('Gateway shop/edge')?.conditions[0]?.status, 'True', 'Accepted is not held back');
    assert.deepEqual(book.apply(deployed('a')), ['Gateway shop/edge']);
    assert.equal(programmed(book)?.status, 'True');
    assert.deepEqual(book.apply(deployed('a')), [], 'the same again changes nothing');
    // What runs is known from now on: a change waits as Pending, written over what is shown.
    assert.deepEqual(book.apply(rendered('b', [gateway(2)])), ['Gateway shop/edge']);
    assert.deepEqual(programmed(book), pending);
  });

  it('changes nothing on deployments of configurations no render declared for (the fast path\'s), and still takes the next render live', () => {
    const book = new StatusBook();
    book.apply(rendered('a', [gateway(1)]));
    assert.deepEqual(book.apply(deployed('a')), ['Gateway shop/edge']);
    assert.deepEqual(book.apply(deployed('fast-1')), []);
    assert.equal(programmed(book)?.status, 'True', 'still live');
    assert.deepEqual(book.apply(rendered('b', [gateway(2)])), ['Gateway shop/edge']);
    assert.deepEqual(book.apply(deployed('fast-2')), []);
    assert.equal(programmed(book)?.status, 'Unknown', 'generation 2 waits for its own configuration');
    assert.deepEqual(book.apply(deployed('b')), ['Gateway shop/edge']);
    assert.equal(programmed(book)?.status, 'True');
  });

  it('tells changed keys apart whether a status comes again as the same object, as an equal copy, or changed', () => {
    const book = new StatusBook();
    const edge = gateway(1);
    const web = ingress(1);
    assert.deepEqual(book.apply(rendered('a', [edge, web])), ['Gateway shop/edge', 'Ingress shop/web']);
    assert.deepEqual(book.apply(unchanged('a', [edge, web])), [], 'the same objects');
    assert.deepEqual(book.apply(unchanged('a', [gateway(1), ingress(1)])), [], 'equal copies');
    assert.deepEqual(book.apply(unchanged('a', [edge, ingress(2)])), ['Ingress shop/web'], 'one changed');
    assert.deepEqual(book.apply(deployed('a')), ['Gateway shop/edge', 'Ingress shop/web'], 'both become live');
    assert.deepEqual(book.apply(deployed('a')), []);
    assert.deepEqual(book.apply(rendered('b', [edge])), ['Ingress shop/web'], 'one gone');
  });

  it('takes the very statuses list again (the render thread\'s did not change) as it takes an equal copy', () => {
    const events = (list: () => ObjectStatus[]) => [rendered('a', list()), deployed('a'), rendered('b', list()), unchanged('b', list()), deployed('b'), rendered('c', [gateway(2)]), rendered('d', list()), deployed('d')];
    const same = [gateway(1), ingress(3)];
    const once = new StatusBook();
    const copies = new StatusBook();
    const sameChanges = events(() => same).map((e) => once.apply(e));
    const copyChanges = events(() => structuredClone(same)).map((e) => copies.apply(e));
    assert.deepEqual(sameChanges, copyChanges);
    assert.deepEqual(once.all(), copies.all());
    assert.ok(sameChanges.some((keys) => keys.length > 0));
  });

  it('says why when the deployment failed or haproxy refused the configuration, and recovers', () => {
    const book = new StatusBook();
    book.apply(rendered('a', [gateway(1)]));
    book.apply(deployed('a', false));
    assert.deepEqual(programmed(book), { type: 'Programmed', status: 'False', reason: 'Pending', message: 'the configuration is not live on every instance: haproxy-0: connection refused', live: true });
    book.apply(deployed('a'));
    assert.equal(programmed(book)?.status, 'True');
    // A new generation whose configuration haproxy refuses: the old configuration stays live, the new one is Invalid.
    book.apply(rendered('b', [gateway(2)]));
    book.apply({ type: 'ValidationFailed', reconcile: reconcileNo(2), config: configNamed('b'), problems: [{ file: 'haproxy.cfg', line: 3, message: 'unknown keyword\nmore' }], durationMs: 1 });
    assert.deepEqual(programmed(book), { type: 'Programmed', status: 'False', reason: 'Invalid', message: 'haproxy refused the configuration, the last good one stays live: haproxy.cfg:3: unknown keyword', live: true });
    book.apply(rendered('c', [gateway(3)]));
    assert.equal(programmed(book)?.status, 'Unknown');
    book.apply(deployed('c'));
    assert.equal(programmed(book)?.status, 'True');
  });

  it('keeps an object that a newer render did not change live, and one whose declaration changed without the configuration', () => {
    const book = new StatusBook();
    const other = gateway(1, { ref: { kind: 'Gateway', namespace: 'shop', name: 'other' } });
    book.apply(rendered('a', [gateway(1), other]));
    book.apply(deployed('a'));
    // Only edge changes in b; other is as it was, and stays Programmed while b is deployed.
    assert.deepEqual(book.apply(rendered('b', [gateway(2), other])), ['Gateway shop/edge']);
    assert.equal(programmed(book, 'Gateway shop/other')?.status, 'True');
    assert.equal(programmed(book)?.status, 'Unknown');
    book.apply(deployed('b'));
    // A generation bump that changes no configuration: the render is unchanged, and what runs serves it.
    book.apply(unchanged('b', [gateway(3), other]));
    assert.equal(programmed(book)?.status, 'True');
    assert.equal(book.composed('Gateway shop/edge')?.generation, 3);
  });

  it('serves a new Ingress once deployed, and an updated one meanwhile; forgets objects no longer declared', () => {
    const book = new StatusBook();
    book.apply(rendered('a', [ingress(1)]));
    // Nothing deployed since the start: what the instances run (after a restart, most likely the
    // configuration that served it) is unknown, so whether it is served is not said either way.
    assert.equal(book.composed('Ingress shop/web')?.served, undefined);
    book.apply(deployed('a'));
    assert.equal(book.composed('Ingress shop/web')?.served, true);
    book.apply(rendered('b', [ingress(2), { ...ingress(1), ref: { kind: 'Ingress', namespace: 'shop', name: 'new' } }]));
    assert.equal(book.composed('Ingress shop/web')?.served, true, 'what runs still serves it');
    assert.equal(book.composed('Ingress shop/new')?.served, false, 'what runs is known, and does not serve it yet');
    assert.deepEqual(book.apply(rendered('c', [])), ['Ingress shop/web', 'Ingress shop/new']);
    assert.equal(book.composed('Ingress shop/web'), undefined);
    assert.equal(book.size, 0);
  });

  it('composes the same in a book that does not report changes, and digests each status object once for every book', () => {
    const statuses = Array.from({ length: 50 }, (_, i): ObjectStatus => ({ ...gateway(1), ref: { kind: 'Gateway', namespace: 'shop', name: `gw-${i}` } }));
    const events = [rendered('a', statuses), deployed('a'), rendered('b', [...statuses.slice(1), gateway(2)]), deployed('b', false)];
    const writer = new StatusBook();
    const reader = new StatusBook({ reportChanges: false });
    const stringify = JSON.stringify;
    let stringified = 0;
    for (const event of events) {
      assert.ok(writer.apply(event).length > 0);
      JSON.stringify = ((value: unknown) => {
        stringified++;
        return stringify(value);
      }) as typeof JSON.stringify;
      try {
        assert.deepEqual(reader.apply(event), []);
      } finally {
        JSON.stringify = stringify;
      }
      assert.deepEqual(reader.all(), writer.all());
    }
    assert.equal(stringified, 0, 'the reader took every digest the writer had made');
    assert.equal(programmed(reader)?.status, 'False');
  });

  it('holds a declaration that renders repeat once, however many renders it keeps', () => {
    const many = () => Array.from({ length: 5_000 }, (_, i): ObjectStatus => ({ ...ingress(1), ref: { kind: 'Ingress', namespace: 'shop', name: `web-${i}` } }));
    const book = new StatusBook();
    const empty = heapAfterGc();
    book.apply(rendered('a', many()));
    const one = heapAfterGc() - empty;
    for (const label of ['b', 'c', 'd']) book.apply(rendered(label, many()));
    const more = heapAfterGc() - empty - one;
    assert.equal(book.size, 5_000);
    assert.ok(more < one, `three more renders of the same declarations took ${Math.round(more / 1024)} KiB, the first ${Math.round(one / 1024)} KiB`);
  });
});
