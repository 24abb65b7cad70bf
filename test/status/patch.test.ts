import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cleanupPatch, statusPatch } from '../../src/status/patch.ts';
import type { ObjectStatus } from '../../src/status/types.ts';

const ME = 'haprx.io/gateway-controller';
const THEM = 'example.com/other';
const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:05:00Z';
const base = { controllers: new Set([ME]), addresses: [{ ip: '203.0.113.10' }], addressedByUs: false, now: T1 };

const route = (conditions: ObjectStatus['entries'][number]['conditions'], parentRef: Record<string, unknown> = { name: 'edge' }): ObjectStatus => ({
  ref: { kind: 'HTTPRoute', namespace: 'shop', name: 'web' },
  generation: 4,
  conditions: [],
  fields: {},
  entries: [{ list: 'parents', key: { parentRef, controllerName: ME }, conditions, fields: {} }],
});
const accepted = { type: 'Accepted', status: 'True' as const, reason: 'Accepted', message: 'ok' };

describe('statusPatch', () => {
  it("writes haprx's parents entries and leaves another controller's as they are, in place", () => {
    const theirs = { parentRef: { name: 'mesh' }, controllerName: THEM, conditions: [{ type: 'Accepted', status: 'False', reason: 'X', message: 'theirs', lastTransitionTime: T0 }] };
    const result = statusPatch({ ...base, current: { parents: [theirs] }, composed: route([accepted]) });
    assert.deepEqual(result?.patch, {
      parents: [theirs, { parentRef: { name: 'edge' }, controllerName: ME, conditions: [{ type: 'Accepted', status: 'True', observedGeneration: 4, lastTransitionTime: T1, reason: 'Accepted', message: 'ok' }] }],
    });
  });

  it('keeps lastTransitionTime while the status stays, and writes nothing when nothing differs (defaults the API server filled in included)', () => {
    const stored = { parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }, controllerName: ME, conditions: [{ type: 'Accepted', status: 'True', observedGeneration: 4, lastTransitionTime: T0, reason: 'Accepted', message: 'ok' }] };
    assert.equal(statusPatch({ ...base, current: { parents: [stored] }, composed: route([accepted]) }), undefined);
    // A new message and generation, same status: the transition time stays.
    const next = statusPatch({ ...base, current: { parents: [stored] }, composed: { ...route([{ ...accepted, message: 'still ok' }]), generation: 5 } });
    assert.deepEqual((next?.patch.parents as { conditions: unknown[] }[])[0]!.conditions, [{ type: 'Accepted', status: 'True', observedGeneration: 5, lastTransitionTime: T0, reason: 'Accepted', message: 'still ok' }]);
    // The status changes: a new transition time.
    const refused = statusPatch({ ...base, current: { parents: [stored] }, composed: route([{ type: 'Accepted', status: 'False', reason: 'NoMatchingParent', message: 'no' }]) });
    assert.equal((refused?.patch.parents as { conditions: { lastTransitionTime: string }[] }[])[0]!.conditions[0]!.lastTransitionTime, T1);
  });

  it("removes haprx's entries for parentRefs it no longer declares, and all of them once the object is not declared", () => {
    const mine = (name: string) => ({ parentRef: { name }, controllerName: ME, conditions: [] });
    const theirs = { parentRef: { name: 'mesh' }, controllerName: THEM, conditions: [] };
    const result = statusPatch({ ...base, current: { parents: [mine('old'), theirs] }, composed: route([accepted]) });
    assert.deepEqual((result?.patch.parents as { parentRef: unknown }[]).map((p) => p.parentRef), [{ name: 'mesh' }, { name: 'edge' }]);
    assert.deepEqual(cleanupPatch('HTTPRoute', { ...base, current: { parents: [mine('old'), theirs] } }), { parents: [theirs] });
    assert.equal(cleanupPatch('HTTPRoute', { ...base, current: { parents: [theirs] } }), undefined);
  });

  it('leaves a condition marked keepShown as the object shows it, in an entry too, and writes it where none is shown', () => {
    const held = { type: 'Programmed', status: 'Unknown' as const, reason: 'Pending', message: 'waiting', live: true, keepShown: true };
    const shown = { type: 'Programmed', status: 'True', observedGeneration: 3, lastTransitionTime: T0, reason: 'Programmed', message: 'live' };
    const gw: ObjectStatus = { ref: { kind: 'Gateway', namespace: 'shop', name: 'edge' }, generation: 4, conditions: [held], fields: {}, entries: [] };
    assert.equal(statusPatch({ ...base, current: { conditions: [shown] }, composed: gw }), undefined);
    assert.deepEqual(statusPatch({ ...base, current: {}, composed: gw })?.patch.conditions, [{ type: 'Programmed', status: 'Unknown', observedGeneration: 4, lastTransitionTime: T1, reason: 'Pending', message: 'waiting' }]);
    const stored = { parentRef: { name: 'edge' }, controllerName: ME, conditions: [{ ...accepted, observedGeneration: 4, lastTransitionTime: T0 }, shown] };
    assert.equal(statusPatch({ ...base, current: { parents: [stored] }, composed: route([accepted, held]) }), undefined);
  });

  it('merges conditions by type, keeping types haprx does not declare, and writes listeners whole', () => {
    const gw: ObjectStatus = {
      ref: { kind: 'Gateway', namespace: 'shop', name: 'edge' },
      generation: 2,
      served: true,
      conditions: [accepted],
      fields: {},
      entries: [{ list: 'listeners', key: { name: 'http' }, conditions: [accepted], fields: { attachedRoutes: 1, supportedKinds: [] } }],
    };
    const current = { conditions: [{ type: 'example.com/Custom', status: 'True', reason: 'Mine', message: '', lastTransitionTime: T0 }, { type: 'Accepted', status: 'Unknown', reason: 'Pending', message: 'Waiting for controller', lastTransitionTime: '1970-01-01T00:00:00Z' }] };
    const result = statusPatch({ ...base, current, composed: gw });
    assert.deepEqual(result?.patch, {
      conditions: [current.conditions[0], { type: 'Accepted', status: 'True', observedGeneration: 2, lastTransitionTime: T1, reason: 'Accepted', message: 'ok' }],
      listeners: [{ name: 'http', attachedRoutes: 1, supportedKinds: [], conditions: [{ type: 'Accepted', status: 'True', observedGeneration: 2, lastTransitionTime: T1, reason: 'Accepted', message: 'ok' }] }],
      addresses: [{ type: 'IPAddress', value: '203.0.113.10' }],
    });
  });

  it('gives a served Ingress the address, clears it when it is no longer served, and never touches one it did not address', () => {
    const ing = (served: boolean | undefined): ObjectStatus => ({ ref: { kind: 'Ingress', namespace: 'shop', name: 'web' }, ...(served !== undefined && { served }), conditions: [], fields: {}, entries: [] });
    assert.deepEqual(statusPatch({ ...base, current: {}, composed: ing(true) }), { patch: { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } }, addressed: true });
    const shown = { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } };
    assert.equal(statusPatch({ ...base, current: shown, composed: ing(true) }), undefined);
    assert.deepEqual(statusPatch({ ...base, current: shown, composed: ing(false) })?.patch, { loadBalancer: { ingress: null } });
    // Not declared (another class now): only an address haprx set, and only while it is still haprx's.
    assert.deepEqual(cleanupPatch('Ingress', { ...base, addressedByUs: true, current: shown }), { loadBalancer: { ingress: null } });
    assert.equal(cleanupPatch('Ingress', { ...base, addressedByUs: false, current: shown }), undefined);
    assert.equal(cleanupPatch('Ingress', { ...base, addressedByUs: true, current: { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } } }), undefined);
    // The Service's address is not known: address fields are left alone.
    assert.equal(statusPatch({ ...base, addresses: undefined, current: {}, composed: ing(true) }), undefined);
  });
});
