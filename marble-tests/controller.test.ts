import { describe, it } from 'node:test';
import { type Observable, map } from 'rxjs';
import type { ControllerEvent } from '../src/events.ts';
import { type Decoded, controller } from '../streams/controller.ts';
import { marbles, reconcileNo } from './helpers.ts';

interface Config {
  name: string;
}
const decode = (raw: unknown): Decoded<Config> =>
  typeof raw === 'object' && raw !== null && typeof (raw as { name?: unknown }).name === 'string'
    ? { ok: true, config: raw as Config }
    : { ok: false, path: 'name', message: 'expected a string' };
const label = map((e: ControllerEvent) => {
  if (e.type === 'ConfigAccepted') return `accepted#${e.generation}`;
  if (e.type === 'ConfigRejected') return `rejected:${e.path}`;
  if (e.type === 'ReconcileTriggered') return `tick#${e.reconcile.seq}`;
  return e.type;
});

describe('controller', () => {
  it('keeps the running graph when a new configuration is invalid', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const raw = hot('a 9ms b', { a: { name: 'one' }, b: { name: 42 } });
      const running = cold<ControllerEvent>('5ms t 9ms t', { t: { type: 'ReconcileTriggered', reconcile: reconcileNo(1) } });
      const events = controller(raw, { decode, graph: () => running });
      expectObservable(events.pipe(label), '^ 30ms !').toBe('a 4ms t 4ms r 4ms t', { a: 'accepted#1', t: 'tick#1', r: 'rejected:name' });
      // One subscription, never torn down by the invalid configuration.
      expectSubscriptions(running.subscriptions).toBe('^ 30ms !');
    });
  });

  it('rebuilds the graph when a new configuration is valid', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const raw = hot('a 9ms b', { a: { name: 'one' }, b: { name: 'two' } });
      const graphs: Record<string, Observable<ControllerEvent>> = {};
      const first = cold<ControllerEvent>('----------------');
      const second = cold<ControllerEvent>('----------------');
      graphs.one = first;
      graphs.two = second;
      const events = controller(raw, { decode, graph: (config) => graphs[config.name]! });
      expectObservable(events.pipe(label), '^ 30ms !').toBe('a 9ms b', { a: 'accepted#1', b: 'accepted#2' });
      expectSubscriptions(first.subscriptions).toBe('^ 9ms !');
      expectSubscriptions(second.subscriptions).toBe('10ms ^ 20ms !');
    });
  });

  it('starts nothing until a first valid configuration arrives', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const raw = hot('a-b', { a: {}, b: { name: 'one' } });
      const g = cold<ControllerEvent>('-');
      expectObservable(controller(raw, { decode, graph: () => g }).pipe(label)).toBe('a-b', { a: 'rejected:name', b: 'accepted#1' });
      expectSubscriptions(g.subscriptions).toBe('--^');
    });
  });
});
