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

  it('starves no check: configurations rendered faster than a check takes cancel checks only until one has waited maxWait', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      // A new configuration every second, each check 3 s (haproxy -c at 10k certificates
      // takes longer than a render): with maxWait 2 s, 1 and 2 are cancelled, 3 (at 2 s)
      // finds 1 waited 2 s, so 2's check finishes at 4 s; 4 (the newest waiting) goes next.
      const input = hot<RenderedEvent>('a 999ms b 999ms c 999ms d', { a: rendered(1, 'one'), b: rendered(2, 'two'), c: rendered(3, 'three'), d: rendered(4, 'four') });
      const events = validate(input, { ...exact, validate: () => cold<ValidateOutcome>('3s (r|)', { r: { ok: true } }), maxWaitMs: 2_000 });
      expectObservable(events.pipe(label), '^ 10s !').toBe('4s x 2999ms y', { x: '2:ok', y: '4:ok' });
      // As before without the bound: every check is cancelled but the last.
      expectObservable(validate(input, { ...exact, validate: () => cold<ValidateOutcome>('3s (r|)', { r: { ok: true } }) }).pipe(label), '^ 10s !').toBe('6s y', { y: '4:ok' });
    });
  });

  it('a check waiting to be tried again gives way to a newer configuration at once, even once the wait bound has passed', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const input = hot<RenderedEvent>('a 1499ms b 1499ms c', { a: rendered(1, 'one'), b: rendered(2, 'two'), c: rendered(3, 'three') });
      const checks = {
        one: cold<ValidateOutcome>('(r|)', { r: { ok: false, unavailable: 'killed' } }),
        two: cold<ValidateOutcome>('1s (r|)', { r: { ok: false, unavailable: 'timed out' } }),
        three: cold<ValidateOutcome>('(r|)', { r: { ok: true } }),
      };
      const events = validate(input, { ...exact, maxWaitMs: 500, validate: (config) => (config.main.includes('one') ? checks.one : config.main.includes('two') ? checks.two : checks.three) });
      // 1 waits to be tried again (at 2 s) when 2 comes at 1.5 s, long after 1 waited its 500 ms:
      // 2 goes at once. Its check takes 1 s and could not run; 3 comes at 3 s, while 2 waits to be
      // tried again (at 3.5 s), and goes at once too.
      expectObservable(events.pipe(label), '^ 10s !').toBe('a 999ms b 1499ms c 499ms d', {
        a: '1:unavailable#1:killed:retry in 1000',
        b: '1:unavailable#2:killed:retry in 2000',
        c: '2:unavailable#1:timed out:retry in 1000',
        d: '3:ok',
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
