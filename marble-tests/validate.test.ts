import { describe, it } from 'node:test';
import { map, throwError } from 'rxjs';
import type { ControllerEvent } from '../src/events.ts';
import { type ValidateEvent, type ValidateOutcome, validate } from '../streams/validate.ts';
import { configNamed, marbles, reconcileNo } from './helpers.ts';

type RenderedEvent = Extract<ControllerEvent, { type: 'Rendered' }>;
const rendered = (seq: number, name: string): RenderedEvent => ({ type: 'Rendered', reconcile: reconcileNo(seq), config: configNamed(name), durationMs: 0 });
const label = map((e: ValidateEvent) => {
  if (e.type === 'Validated') return `${e.reconcile.seq}:ok`;
  if (e.type === 'ValidationUnavailable') return `${e.reconcile.seq}:unavailable#${e.attempt}:${e.message}:retry in ${e.retryInMs}`;
  return `${e.reconcile.seq}:${e.problems.map((p) => `${p.file}:${p.line}:${p.message}`).join(';')}`;
});
/** No jitter: delays are exactly 1 s, 2 s, 4 s ... */
const exact = { backoff: { initialMs: 1000, maxMs: 60_000, jitter: 0.2 }, random: () => 0 };

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

  it('reports haproxy problems as ValidationFailed, and a check that could not run as ValidationUnavailable, never as a refusal', () => {
    marbles().run(({ cold, expectObservable }) => {
      const input = cold<RenderedEvent>('a-b-c', { a: rendered(1, 'bad'), b: rendered(2, 'crash'), c: rendered(3, 'good') });
      const events = validate(input, {
        ...exact,
        validate: (config) => {
          if (config.main.includes('bad')) return cold<ValidateOutcome>('r|', { r: { ok: false, problems: [{ file: 'haproxy.cfg', line: 3, message: "unknown keyword 'bogus'" }] } });
          if (config.main.includes('crash')) return throwError(() => new Error('spawn haproxy ENOENT'));
          return cold<ValidateOutcome>('r|', { r: { ok: true } });
        },
      });
      // c supersedes b at 4, so b is not checked again (watched for 10 s).
      expectObservable(events.pipe(label), '^ 10s !').toBe('x-y-z', {
        x: "1:haproxy.cfg:3:unknown keyword 'bogus'",
        y: '2:unavailable#1:spawn haproxy ENOENT:retry in 1000',
        z: '3:ok',
      });
    });
  });

  it('checks a configuration whose check could not run again, with backoff, until haproxy gives a verdict', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const input = hot<RenderedEvent>('a', { a: rendered(1, 'one') });
      let attempts = 0;
      const events = validate(input, {
        ...exact,
        validate: () => {
          attempts++;
          if (attempts <= 2) return cold<ValidateOutcome>('10ms (r|)', { r: { ok: false, unavailable: 'haproxy -c did not finish within 30000 ms' } });
          if (attempts === 3) return cold<ValidateOutcome>('10ms |'); // no answer at all
          return cold<ValidateOutcome>('10ms (r|)', { r: { ok: true } });
        },
      });
      // Each check takes 10 ms; they start at 0, 1010 (1 s later), 3020 (2 s later) and 7030 (4 s later).
      expectObservable(events.pipe(label)).toBe('10ms a 1009ms b 2009ms c 4009ms d', {
        a: '1:unavailable#1:haproxy -c did not finish within 30000 ms:retry in 1000',
        b: '1:unavailable#2:haproxy -c did not finish within 30000 ms:retry in 2000',
        c: '1:unavailable#3:the check ended without an answer:retry in 4000',
        d: '1:ok',
      });
    });
  });

  it('stops retrying a configuration that a newer one superseded', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const input = hot<RenderedEvent>('a 1499ms b', { a: rendered(1, 'one'), b: rendered(2, 'two') });
      const checks = { one: cold<ValidateOutcome>('(r|)', { r: { ok: false, unavailable: 'killed' } }), two: cold<ValidateOutcome>('(r|)', { r: { ok: true } }) };
      const events = validate(input, { ...exact, validate: (config) => (config.main.includes('one') ? checks.one : checks.two) });
      expectObservable(events.pipe(label), '^ 10s !').toBe('a 999ms b 499ms c', {
        a: '1:unavailable#1:killed:retry in 1000',
        b: '1:unavailable#2:killed:retry in 2000',
        c: '2:ok',
      });
    });
  });
});
