import { describe, it } from 'node:test';
import { NEVER, type Observable, map, throwError } from 'rxjs';
import type { Reconcile } from '../src/events.ts';
import type { ObjectStatus } from '../src/status/types.ts';
import { type RenderEvent, type RenderOutcome, type Verdict, render } from '../streams/render.ts';
import { configNamed, marbles, reconcileNo } from './helpers.ts';

const label = map((e: RenderEvent) => {
  switch (e.type) {
    case 'Rendered':
      return `${e.reconcile.seq}:${e.config.main.split('\n')[0]!.slice(2)}`;
    case 'RenderUnchanged':
      return `${e.reconcile.seq}:unchanged`;
    case 'RenderFailed':
      return `${e.reconcile.seq}:failed:${e.error.template}:${e.error.line}:${e.error.message}`;
  }
});

describe('render', () => {
  it('lets a newer trigger cancel an unfinished render (latest wins)', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const reconciles = hot<Reconcile>('a 99ms b', { a: reconcileNo(1), b: reconcileNo(2) });
      // Each render takes 300 ms: the first is still running when the second trigger comes.
      const renders: Record<number, ReturnType<typeof cold<RenderOutcome>>> = {
        1: cold('300ms r|', { r: { ok: true, config: configNamed('first') } }),
        2: cold('300ms r|', { r: { ok: true, config: configNamed('second') } }),
      };
      const events = render(reconciles, NEVER, { render: (r) => renders[r.seq]! });
      expectObservable(events.pipe(label)).toBe('400ms x', { x: '2:second' });
      expectSubscriptions(renders[1]!.subscriptions).toBe('^ 99ms !');
    });
  });

  it('is not starved by triggers that come faster than a render takes: once changes waited maxWaitMs, the running render finishes', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      // A trigger every 100 ms, renders of 300 ms: cancelling each for the next, none would finish.
      const reconciles = hot<Reconcile>('a 99ms b 99ms c 99ms d 99ms e', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3), d: reconcileNo(4), e: reconcileNo(5) });
      const renderOf = (r: Reconcile) => cold<RenderOutcome>('300ms r|', { r: { ok: true, config: configNamed(`render ${r.seq}`) } });
      const events = render(reconciles, NEVER, { render: renderOf, maxWaitMs: 250 });
      // 1 and 2 are cancelled (waited under 250 ms); 3 finishes at 500 ms (its result; it completes a frame later), and 5, the newest then, goes next.
      expectObservable(events.pipe(label)).toBe('500ms x 300ms y', { x: '3:render 3', y: '5:render 5' });
    });
  });

  it('compares statuses by the digest the renderer gives: equal digests pass no statuses on, a new one does', () => {
    marbles().run(({ cold, expectObservable }) => {
      const reconciles = cold<Reconcile>('a-b-c', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3) });
      const declared = (message: string): ObjectStatus[] => [{ ref: { kind: 'Ingress', namespace: 'ns', name: 'x' }, conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message }], entries: [], fields: {} }];
      // The statuses' text differs each time; only the digest says whether they changed.
      const outcomes: Record<number, RenderOutcome> = {
        1: { ok: true, config: configNamed('one'), statuses: declared('1'), statusesDigest: 'd1' },
        2: { ok: true, config: configNamed('one'), statuses: declared('2'), statusesDigest: 'd1' },
        3: { ok: true, config: configNamed('one'), statuses: declared('3'), statusesDigest: 'd2' },
      };
      const events = render(reconciles, NEVER, { render: (r): Observable<RenderOutcome> => cold('r|', { r: outcomes[r.seq]! }) });
      const shown = events.pipe(map((e) => `${e.reconcile.seq}:${e.type}${e.type !== 'RenderFailed' && e.statuses ? `+${e.statuses[0]!.conditions[0]!.message}` : ''}`));
      expectObservable(shown).toBe('x-y-z', { x: '1:Rendered+1', y: '2:RenderUnchanged', z: '3:RenderUnchanged+3' });
    });
  });

  it('reports identical output as unchanged, so nothing downstream repeats work', () => {
    marbles().run(({ cold, expectObservable }) => {
      const reconciles = cold<Reconcile>('a-b-c', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3) });
      const outputs: Record<number, string> = { 1: 'one', 2: 'one', 3: 'two' };
      const events = render(reconciles, NEVER, {
        render: (r): Observable<RenderOutcome> => cold('r|', { r: { ok: true, config: configNamed(outputs[r.seq]!) } }),
      });
      expectObservable(events.pipe(label)).toBe('x-y-z', { x: '1:one', y: '2:unchanged', z: '3:two' });
    });
  });

  it('checks output identical to a configuration haproxy refused again, and drops it while its check is still going', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const reconciles = hot<Reconcile>('a-b---c-d---e', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3), d: reconcileNo(4), e: reconcileNo(5) });
      // Every render gives the same output; its check is unfinished at 2, refused at 4, then passed at 10.
      const config = configNamed('same');
      const verdicts = hot<Verdict>('----f-----v', {
        f: { type: 'ValidationFailed', reconcile: reconcileNo(1), config, problems: [{ file: 'haproxy.cfg', message: 'no' }], durationMs: 0 },
        v: { type: 'Validated', reconcile: reconcileNo(3), config, durationMs: 0 },
      });
      const events = render(reconciles, verdicts, { render: () => cold('r|', { r: { ok: true, config } }) });
      expectObservable(events.pipe(label)).toBe('a-b---c-d---e', { a: '1:same', b: '2:unchanged', c: '3:same', d: '4:unchanged', e: '5:unchanged' });
    });
  });

  it('passes on output identical to the live configuration while a newer one is still being checked, so the newer one cannot win', () => {
    marbles().run(({ cold, hot, expectObservable }) => {
      const reconciles = hot<Reconcile>('a---b-c', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3) });
      const outputs: Record<number, string> = { 1: 'live', 2: 'newer', 3: 'live' };
      const verdicts = hot<Verdict>('--v', { v: { type: 'Validated', reconcile: reconcileNo(1), config: configNamed('live'), durationMs: 0 } });
      const events = render(reconciles, verdicts, { render: (r) => cold('r|', { r: { ok: true, config: configNamed(outputs[r.seq]!) } }) });
      expectObservable(events.pipe(label)).toBe('a---b-c', { a: '1:live', b: '2:newer', c: '3:live' });
    });
  });

  it('turns a failed render into a RenderFailed event and keeps going', () => {
    marbles().run(({ cold, expectObservable }) => {
      const reconciles = cold<Reconcile>('a-b-c', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3) });
      const events = render(reconciles, NEVER, {
        render: (r): Observable<RenderOutcome> => {
          if (r.seq === 1) return cold('r|', { r: { ok: false, error: { template: 'haproxy.cfg', line: 7, message: 'boom' } } });
          if (r.seq === 2) return throwError(() => new Error('renderer crashed'));
          return cold('r|', { r: { ok: true, config: configNamed('fine') } });
        },
      });
      expectObservable(events.pipe(label)).toBe('x-y-z', {
        x: '1:failed:haproxy.cfg:7:boom',
        y: '2:failed:(render):undefined:renderer crashed',
        z: '3:fine',
      });
    });
  });

  it('carries the warnings of a render that skipped invalid objects', () => {
    marbles().run(({ cold, expectObservable }) => {
      const reconciles = cold<Reconcile>('a-b', { a: reconcileNo(1), b: reconcileNo(2) });
      const warnings = [{ object: 'Ingress shop/bad', message: 'host "a b" is not a hostname' }];
      const events = render(reconciles, NEVER, {
        render: (r) => cold('r|', { r: { ok: true, config: configNamed(`c${r.seq}`), warnings: r.seq === 1 ? warnings : [] } }),
      });
      expectObservable(events.pipe(map((e) => (e.type === 'Rendered' ? e.warnings : e.type)))).toBe('a-b', { a: warnings, b: undefined });
    });
  });

  it('reports warnings that changed even when the configuration did not: a skipped object often leaves it as it was', () => {
    marbles().run(({ cold, expectObservable }) => {
      const reconciles = cold<Reconcile>('a-b-c-d', { a: reconcileNo(1), b: reconcileNo(2), c: reconcileNo(3), d: reconcileNo(4) });
      const bad = [{ object: 'Ingress shop/bad', message: 'skipped: spec.rules must be a list' }];
      // The same output each time; the bad object comes with the second render and is gone by the fourth.
      const warningsOf: Record<number, typeof bad> = { 1: [], 2: bad, 3: bad, 4: [] };
      const events = render(reconciles, NEVER, { render: (r) => cold('r|', { r: { ok: true, config: configNamed('same'), warnings: warningsOf[r.seq]! } }) });
      const label = (e: RenderEvent) => `${e.type}:${e.type === 'RenderFailed' ? '' : JSON.stringify(e.warnings?.map((w) => w.object))}`;
      expectObservable(events.pipe(map(label))).toBe('a-b-c-d', {
        a: 'Rendered:undefined',
        b: 'RenderUnchanged:["Ingress shop/bad"]',
        c: 'RenderUnchanged:undefined',
        d: 'RenderUnchanged:[]',
      });
    });
  });

  it('measures the render in scheduler time', () => {
    marbles().run(({ cold, expectObservable }) => {
      const reconciles = cold<Reconcile>('a', { a: reconcileNo(1) });
      const events = render(reconciles, NEVER, { render: () => cold('250ms r|', { r: { ok: true, config: configNamed('x') } }) });
      expectObservable(events.pipe(map((e) => e.durationMs))).toBe('250ms d', { d: 250 });
    });
  });
});
