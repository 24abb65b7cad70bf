import { describe, it } from 'node:test';
import { map, throwError } from 'rxjs';
import type { ControllerEvent } from '../src/events.ts';
import { type ValidateEvent, type ValidateOutcome, validate } from '../streams/validate.ts';
import { configNamed, marbles, reconcileNo } from './helpers.ts';

type RenderedEvent = Extract<ControllerEvent, { type: 'Rendered' }>;
const rendered = (seq: number, name: string): RenderedEvent => ({ type: 'Rendered', reconcile: reconcileNo(seq), config: configNamed(name), durationMs: 0 });
const label = map((e: ValidateEvent) =>
  e.type === 'Validated' ? `${e.reconcile.seq}:ok` : `${e.reconcile.seq}:${e.problems.map((p) => `${p.file}:${p.line}:${p.message}`).join(';')}`,
);

describe('validate', () => {
  it('cancels the check of a configuration that a newer one superseded', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const input = hot<RenderedEvent>('a 199ms b', { a: rendered(1, 'one'), b: rendered(2, 'two') });
      const checks = { one: cold<ValidateOutcome>('500ms r|', { r: { ok: true } }), two: cold<ValidateOutcome>('500ms r|', { r: { ok: true } }) };
      const events = validate(input, { validate: (config) => (config.main.includes('one') ? checks.one : checks.two) });
      expectObservable(events.pipe(label)).toBe('700ms x', { x: '2:ok' });
      expectSubscriptions(checks.one.subscriptions).toBe('^ 199ms !');
    });
  });

  it('reports haproxy problems, and a crashed check, as ValidationFailed', () => {
    marbles().run(({ cold, expectObservable }) => {
      const input = cold<RenderedEvent>('a-b-c', { a: rendered(1, 'bad'), b: rendered(2, 'crash'), c: rendered(3, 'good') });
      const events = validate(input, {
        validate: (config) => {
          if (config.main.includes('bad')) return cold<ValidateOutcome>('r|', { r: { ok: false, problems: [{ file: 'haproxy.cfg', line: 3, message: "unknown keyword 'bogus'" }] } });
          if (config.main.includes('crash')) return throwError(() => new Error('spawn haproxy ENOENT'));
          return cold<ValidateOutcome>('r|', { r: { ok: true } });
        },
      });
      expectObservable(events.pipe(label)).toBe('x-y-z', {
        x: "1:haproxy.cfg:3:unknown keyword 'bogus'",
        y: '2:haproxy.cfg:undefined:spawn haproxy ENOENT',
        z: '3:ok',
      });
    });
  });
});
