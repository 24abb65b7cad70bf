import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { map, tap } from 'rxjs';
import type { DeployRequest, Desired, Reconcile, ValidatedEvent } from '../src/events.ts';
import { type RenderedConfig, sealRendered } from '../src/templating/rendered.ts';
import { type FastEvent, type FastPathOutcome, fastPath, fastRequests } from '../streams/fast-path.ts';
import type { Steps } from '../src/steps.ts';
import { endpoint, marbles } from './helpers.ts';

/** A configuration whose one backend `be` has these server lines, recorded as h.servers records them. */
function config(lines: string, extra = ''): RenderedConfig {
  const head = `${extra}backend be\n`;
  return sealRendered({ main: `${head}${lines}`, maps: {}, files: {}, certs: {} }, { sets: [{ backend: 'be', snippet: 'servers', args: '{}', start: head.length, end: head.length + lines.length, reads: [] }], reads: [] });
}

const reconcile = (seq: number, reason: Reconcile['cause']['reason'] = 'resources'): Reconcile => ({ seq, cause: { reason, changes: [] }, at: 0 });
const validated = (seq: number, c: RenderedConfig): ValidatedEvent => ({ type: 'Validated', reconcile: reconcile(seq), config: c, durationMs: 0 });

/** The fake plan: reconciliation n gives server line `sN`, or declines when `declines` has it. */
function planner(declines: number[] = []) {
  const bases: string[] = [];
  const plan = (base: RenderedConfig, r: Reconcile): FastPathOutcome => {
    bases.push(base.main.split('\n')[1] ?? '');
    if (declines.includes(r.seq)) return { kind: 'unsupported', reason: `#${r.seq} is not only servers` };
    return { kind: 'runtime', config: config(`s${r.seq}\n`), ops: [{ kind: 'server-addr', backend: 'be', server: 's', host: '10.0.0.1', port: r.seq }], backends: ['be'] };
  };
  return { plan, bases };
}

const label = map((e: FastEvent | ValidatedEvent): string => {
  switch (e.type) {
    case 'FastPathPlanned':
      return `F${e.reconcile.seq}:${e.config.main.split('\n')[1]}`;
    case 'FastPathSkipped':
      return `S${e.reconcile.seq}`;
    case 'ValidatedSuperseded':
      return `X${e.reconcile.seq}`;
    case 'Validated':
      return `V${e.reconcile.seq}`;
  }
});

describe('fastPath', () => {
  it('plans each batch of changes at once, on the last validated configuration and then on its own plans', () => {
    const p = planner();
    marbles().run(({ hot, expectObservable }) => {
      const validated$ = hot<ValidatedEvent>('a---------', { a: validated(1, config('s1\n')) });
      const reconciles$ = hot<Reconcile>('--b--c----', { b: reconcile(2), c: reconcile(3) });
      expectObservable(fastPath(reconciles$, validated$, { plan: p.plan }).pipe(label)).toBe('a-b--c', { a: 'V1', b: 'F2:s2', c: 'F3:s3' });
    });
    assert.deepEqual(p.bases, ['s1', 's2']);
  });

  it('makes each new base ready when it becomes the base, once, and not an older validated configuration', () => {
    const p = planner();
    const prepared: string[] = [];
    const c1 = config('s1\n');
    const c2 = config('s2\n');
    marbles().run(({ hot, expectObservable }) => {
      // c1 validated twice (a drift, a retry): ready once. c0 from reconciliation 1 comes after c2 from 3: it is no base.
      const validated$ = hot<ValidatedEvent>('a-b-c-d', { a: validated(2, c1), b: validated(2, c1), c: validated(3, c2), d: validated(1, config('s0\n')) });
      const reconciles$ = hot<Reconcile>('-------');
      expectObservable(fastPath(reconciles$, validated$, { plan: p.plan, prepare: (base) => void prepared.push(base.main.split('\n')[1] ?? '') }).pipe(label)).toBe('a-b-c-d', { a: 'V2', b: 'V2', c: 'V3', d: 'V1' });
    });
    assert.deepEqual(prepared, ['s1', 's2']);
  });

  it('takes nothing before a configuration is validated, and nothing but cluster changes', () => {
    const p = planner();
    marbles().run(({ hot, expectObservable }) => {
      const validated$ = hot<ValidatedEvent>('--a------', { a: validated(1, config('s1\n')) });
      const reconciles$ = hot<Reconcile>('b---c--d-', { b: reconcile(1, 'config'), c: reconcile(2, 'config'), d: reconcile(3, 'drift') });
      expectObservable(fastPath(reconciles$, validated$, { plan: p.plan }).pipe(label)).toBe('--a------', { a: 'V1' });
    });
    assert.deepEqual(p.bases, []);
  });

  it('stops a validated configuration older than the servers it applied, and lets through one that agrees', () => {
    marbles().run(({ hot, expectObservable }) => {
      // Validated 2 began before fast path 3: it would take s3 back. Validated 3 has s3.
      const validated$ = hot<ValidatedEvent>('a----b---c', { a: validated(1, config('s1\n')), b: validated(2, config('s2\n')), c: validated(3, config('s3\n', '# and the rest\n')) });
      const reconciles$ = hot<Reconcile>('--d-------', { d: reconcile(3) });
      expectObservable(fastPath(reconciles$, validated$, { plan: planner().plan }).pipe(label)).toBe('a-d--x---c', { a: 'V1', d: 'F3:s3', x: 'X2', c: 'V3' });
    });
  });

  it('stops a validated configuration that lacks the map entries it added, and lets through one that has them', () => {
    const routed = (seq: number, entries: string) => sealRendered({ main: `backend be\n# ${seq}\n`, maps: { 'hosts.map': entries }, files: {}, certs: {} });
    const plan = (_base: RenderedConfig, r: Reconcile): FastPathOutcome => ({
      kind: 'runtime',
      config: routed(r.seq, 'old.example be\nnew.example be\n'),
      ops: [{ kind: 'map-add', map: 'hosts.map', ref: 'maps/hosts.map', key: 'new.example', value: 'be' }],
      backends: [],
      entries: [{ map: 'hosts.map', key: 'new.example', value: 'be' }],
    });
    marbles().run(({ hot, expectObservable }) => {
      // Validated 2 began before fast path 3 added new.example: it would take the entry back. Validated 3 has it (in its own order).
      const validated$ = hot<ValidatedEvent>('a----b---c', {
        a: validated(1, routed(1, 'old.example be\n')),
        b: validated(2, routed(2, 'old.example be\n')),
        c: validated(3, routed(3, 'new.example be\nold.example be\n')),
      });
      const reconciles$ = hot<Reconcile>('--d-------', { d: reconcile(3) });
      const shown = map((e: FastEvent | ValidatedEvent) => (e.type === 'ValidatedSuperseded' ? `X${e.reconcile.seq}:${(e.entries ?? []).join(',')}` : e.type === 'FastPathPlanned' ? `F${e.reconcile.seq}:${(e.entries ?? []).join(',')}` : `${e.type[0]}${e.reconcile.seq}`));
      expectObservable(fastPath(reconciles$, validated$, { plan }).pipe(shown)).toBe('a-d--x---c', { a: 'V1', d: 'F3:hosts.map new.example', x: 'X2:hosts.map new.example', c: 'V3' });
    });
  });

  it('stops a validated configuration that routes an added key elsewhere', () => {
    const routed = (entries: string) => sealRendered({ main: 'backend be\n', maps: { 'hosts.map': entries }, files: {}, certs: {} });
    const plan = (): FastPathOutcome => ({ kind: 'runtime', config: routed('new.example be\n'), ops: [], backends: [], entries: [{ map: 'hosts.map', key: 'new.example', value: 'be' }] });
    marbles().run(({ hot, expectObservable }) => {
      const validated$ = hot<ValidatedEvent>('a---b', { a: validated(1, routed('')), b: validated(2, routed('new.example other\n')) });
      const reconciles$ = hot<Reconcile>('--c--', { c: reconcile(3) });
      expectObservable(fastPath(reconciles$, validated$, { plan }).pipe(label)).toBe('a-c-x', { a: 'V1', c: 'F3:', x: 'X2' });
    });
  });

  it('after a batch it cannot take, waits for the validated configuration that has it before planning again', () => {
    const p = planner([2]);
    marbles().run(({ hot, expectObservable }) => {
      const validated$ = hot<ValidatedEvent>('a------b----', { a: validated(1, config('s1\n')), b: validated(2, config('s2 from the full render\n')) });
      const reconciles$ = hot<Reconcile>('--c--d----e-', { c: reconcile(2), d: reconcile(3), e: reconcile(4) });
      expectObservable(fastPath(reconciles$, validated$, { plan: p.plan }).pipe(label)).toBe('a-c--d-b--e-', { a: 'V1', c: 'S2', d: 'S3', b: 'V2', e: 'F4:s4' });
    });
    // Planned on the full render of 2, not on what came before it.
    assert.deepEqual(p.bases, ['s1', 's2 from the full render']);
  });

  it('lets a validated configuration go on before its preparation in slices, and plans the next change after it', () => {
    let clock = 0;
    const steps: string[] = [];
    const p = planner();
    const prepare = (base: RenderedConfig): Steps<void> =>
      (function* () {
        for (let i = 1; i <= 3; i++) {
          clock += 6;
          steps.push(`${base.main.split('\n')[1]} part ${i}`);
          yield;
        }
      })();
    const plan = (base: RenderedConfig, r: Reconcile) => {
      steps.push(`plan ${r.seq}`);
      return p.plan(base, r);
    };
    marbles().run(({ hot, expectObservable }) => {
      // The change comes in the frame its base does, behind it.
      const validated$ = hot<ValidatedEvent>('a', { a: validated(1, config('s1\n')) });
      const reconciles$ = hot<Reconcile>('b', { b: reconcile(2) });
      const events = fastPath(reconciles$, validated$, { plan, prepare, clock: () => clock }).pipe(label, tap((e) => steps.push(e)));
      expectObservable(events).toBe('(ab)', { a: 'V1', b: 'F2:s2' });
    });
    // Two parts fill the first 10 ms slice; the change waits for the third.
    assert.deepEqual(steps, ['V1', 's1 part 1', 's1 part 2', 's1 part 3', 'plan 2', 'F2:s2']);
  });

  it('plans a large batch in slices, and takes a validated configuration that comes meanwhile after it, as if it had planned at once', () => {
    let clock = 0;
    const bases: string[] = [];
    const busy: boolean[] = [];
    // Reconciliation 2 plans in three steps of 6 ms: two slices of 10 ms. Reconciliation 3 plans at once.
    const plan = (base: RenderedConfig, r: Reconcile): FastPathOutcome | Steps<FastPathOutcome> => {
      bases.push(base.main.split('\n')[1] ?? '');
      const outcome: FastPathOutcome = { kind: 'runtime', config: config(`s${r.seq}\n`), ops: [], backends: ['be'] };
      if (r.seq !== 2) return outcome;
      return (function* () {
        for (let i = 0; i < 3; i++) {
          clock += 6;
          yield;
        }
        return outcome;
      })();
    };
    marbles().run(({ hot, expectObservable }) => {
      // Reconciliation 2 and the full render of 2 come in the same frame: the render's slice-free
      // event runs between the plan's slices, and waits for the plan.
      const reconciles$ = hot<Reconcile>('--b-----c', { b: reconcile(2), c: reconcile(3) });
      const validated$ = hot<ValidatedEvent>('a-v--', { a: validated(1, config('s1\n')), v: validated(2, config('s2 from the full render\n')) });
      const events = fastPath(reconciles$, validated$, { plan, clock: () => clock, planning: (b) => busy.push(b) }).pipe(label);
      expectObservable(events).toBe('a-(bv)--c', { a: 'V1', b: 'F2:s2', v: 'V2', c: 'F3:s3' });
    });
    // Reconciliation 3 planned on the full render of 2, which came after the plan of 2, not on that plan.
    assert.deepEqual(bases, ['s1', 's2 from the full render']);
    assert.deepEqual(busy, [true, false], 'planning is told of the plan in slices only');
  });
});

describe('fastRequests', () => {
  it('sends a planned fast path to every instance the newest desired state names, with its runtime operations', () => {
    marbles().run(({ hot, expectObservable }) => {
      const state: Desired = { reconcile: reconcile(1), config: config('s1\n'), endpoints: [endpoint('e1'), endpoint('e2')] };
      const desired$ = hot<Desired>('a----', { a: state });
      const planned: FastEvent = { type: 'FastPathPlanned', reconcile: reconcile(2), config: config('s2\n'), from: state.config.hash, ops: [], backends: ['be'], durationMs: 0 };
      const fast$ = hot<FastEvent | ValidatedEvent>('--b-c', { b: planned, c: validated(3, config('s3\n')) });
      const shown = map((r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[1]}:${r.endpoints.map((e) => e.id).join(',')}:${r.fast?.from === state.config.hash}`);
      expectObservable(fastRequests(fast$, desired$).pipe(shown)).toBe('--b--', { b: 'fast:s2:e1,e2:true' });
    });
  });
});
