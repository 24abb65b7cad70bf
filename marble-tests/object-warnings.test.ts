import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { ControllerEvent, RenderWarning } from '../src/events.ts';
import { type ObjectWarningEvent, objectWarnings, warningEvent } from '../streams/object-warnings.ts';
import { configNamed, marbles, reconcileNo } from './helpers.ts';

const skip = (name: string): RenderWarning => ({
  object: `Ingress shop/${name}`,
  ref: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'shop', name, uid: `uid-${name}` },
  message: `skipped: spec.rules[0].host "evil\\nbind :9999" is not a DNS name`,
  field: 'spec.rules[0].host',
  skipped: true,
});
const rendered = (...warnings: RenderWarning[]): ControllerEvent => ({ type: 'Rendered', reconcile: reconcileNo(1), config: configNamed('x'), durationMs: 0, ...(warnings.length > 0 && { warnings }) });
const unchanged = (warnings?: RenderWarning[]): ControllerEvent => ({ type: 'RenderUnchanged', reconcile: reconcileNo(1), hash: 'h', durationMs: 0, ...(warnings && { warnings }) });
const names = map((e: ObjectWarningEvent) => e.regarding.name);

describe('objectWarnings', () => {
  it('reports a warning when it first appears on an object, not while it stays, and again when it comes back', () => {
    marbles().run(({ hot, expectObservable }) => {
      const events$ = hot<ControllerEvent>('a b c d e f', {
        a: rendered(skip('one')),
        b: rendered(skip('one'), skip('two')),
        c: unchanged(),
        d: unchanged([skip('two')]),
        e: rendered(skip('one'), skip('two')),
        f: rendered({ object: 'values.portOffset', message: 'not a whole number' }),
      });
      expectObservable(objectWarnings(events$, hot('t', { t: true })).pipe(names)).toBe('a b - - c', { a: 'one', b: 'two', c: 'one' });
    });
  });

  it('reports only while leading; a new leader reports the warnings standing then', () => {
    marbles().run(({ hot, expectObservable }) => {
      const events$ = hot<ControllerEvent>('a - - - b', { a: rendered(skip('one')), b: rendered(skip('one'), skip('two')) });
      const leader$ = hot<boolean>('f - t - - - f t', { f: false, t: true });
      expectObservable(objectWarnings(events$, leader$).pipe(names)).toBe('- - a - b - - (cd)', { a: 'one', b: 'two', c: 'one', d: 'two' });
    });
  });

  it('names the object with its uid, the field, and the reason the template gave or the kind of skip', () => {
    const whole = warningEvent(skip('one'))!;
    assert.deepEqual(whole.regarding, { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'shop', name: 'one', uid: 'uid-one' });
    assert.equal(whole.type, 'Warning');
    assert.equal(whole.reason, 'Skipped');
    assert.match(whole.note, /spec\.rules\[0\]\.host/);
    const part = warningEvent({ ...skip('p'), skipped: undefined, message: 'spec.tls[0] skipped: the Secret is missing', field: 'spec.tls[0]' })!;
    assert.equal(part.reason, 'PartlySkipped');
    const given = warningEvent({ ...skip('g'), reason: 'UnsupportedValue', message: 'annotation x: not supported', field: 'metadata.annotations["x"]' })!;
    assert.equal(given.reason, 'UnsupportedValue');
    assert.equal(given.note, 'annotation x: not supported (field metadata.annotations["x"])');
    assert.equal(warningEvent({ message: 'no object' }), undefined);
  });
});
