import { describe, it } from 'node:test';
import { type Observable, defer, map } from 'rxjs';
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
  if (e.type === 'StageFailed') return `failed:${e.stage}:${e.message}:${e.restartInMs}`;
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

  it('rejects a configuration whose decoder throws, and keeps the running graph', () => {
    marbles().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const raw = hot('a-b', { a: { name: 'one' }, b: { name: 'boom' } });
      const running = cold<ControllerEvent>('-');
      const throwing = (r: unknown) => {
        if ((r as Config).name === 'boom') throw new RangeError('Maximum call stack size exceeded');
        return decode(r);
      };
      expectObservable(controller(raw, { decode: throwing, graph: () => running }).pipe(label)).toBe('a-r', { a: 'accepted#1', r: 'rejected:(configuration)' });
      expectSubscriptions(running.subscriptions).toBe('^');
    });
  });

  it('reports a configuration source that fails and reads it again after 1 s; the running graph goes on meanwhile', () => {
    marbles().run(({ cold, expectObservable, expectSubscriptions }) => {
      let reads = 0;
      const source = defer(() => (++reads === 1 ? cold('a 9ms #', { a: { name: 'one' } }, new Error('watch ended')) : cold('a', { a: { name: 'one' } })));
      const running = cold<ControllerEvent>('-');
      const events = controller(source, { decode, graph: () => running, random: () => 0 });
      expectObservable(events.pipe(label), '^ 1500ms !').toBe('a 9ms f 999ms b', { a: 'accepted#1', f: 'failed:controller configuration:watch ended:1000', b: 'accepted#2' });
      // The first graph runs until the re-read configuration replaces it.
      expectSubscriptions(running.subscriptions).toBe(['^ 1009ms !', '1010ms ^ 490ms !']);
    });
  });

  it('reports a graph that cannot be built and builds it again after 1 s', () => {
    marbles().run(({ hot, cold, expectObservable }) => {
      let builds = 0;
      const graph = () => {
        if (++builds === 1) throw new TypeError('cannot build');
        return cold<ControllerEvent>('t', { t: { type: 'ReconcileTriggered', reconcile: reconcileNo(1) } });
      };
      expectObservable(controller(hot('a', { a: { name: 'one' } }), { decode, graph, random: () => 0 }).pipe(label), '^ 1500ms !').toBe('(af) 996ms t', {
        a: 'accepted#1',
        f: 'failed:graph:cannot build:1000',
        t: 'tick#1',
      });
    });
  });
});
