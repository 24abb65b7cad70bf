import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { ControllerEvent, DeployRequest, Desired, Endpoint, ValidatedEvent } from '../src/events.ts';
import { deployRequests, desired, redeployOn } from '../streams/endpoints.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const validated = (name: string): ValidatedEvent => ({ type: 'Validated', reconcile: reconcileNo(1), config: configNamed(name), durationMs: 0 });
type FastPlanned = Extract<ControllerEvent, { type: 'FastPathPlanned' }>;
const fastPlanned = (name: string, seq: number): FastPlanned => ({ type: 'FastPathPlanned', reconcile: reconcileNo(seq), config: configNamed(name), from: 'x', ops: [], backends: ['be'], durationMs: 0 });
const state = (name: string, ...endpoints: Endpoint[]): Desired => ({ reconcile: reconcileNo(1), config: configNamed(name), endpoints });
const fastState = (name: string, ...endpoints: Endpoint[]): Desired => ({ ...state(name, ...endpoints), appliedByFastPath: true });
const nameOf = (r: { config: { main: string } }) => r.config.main.split('\n')[0]!.slice(2);
const label = map((r: DeployRequest) => `${r.reason}:${nameOf(r)}:${r.endpoints.map((e) => e.id).join(',')}`);

describe('desired', () => {
  it('pairs the newest valid configuration with every current instance, whenever either changes', () => {
    marbles().run(({ hot, expectObservable }) => {
      const configs = hot<ValidatedEvent>('a-----b----', { a: validated('one'), b: validated('two') });
      const endpoints = hot<readonly Endpoint[]>('x--y------z', { x: [endpoint('e1')], y: [endpoint('e1'), endpoint('e2')], z: [endpoint('e2')] });
      const shown = map((d: Desired) => `${nameOf(d)}:${d.endpoints.map((e) => e.id).join(',')}`);
      expectObservable(desired(configs, endpoints).pipe(shown)).toBe('a--b--c---d', { a: 'one:e1', b: 'one:e1,e2', c: 'two:e1,e2', d: 'two:e2' });
    });
  });

  it('takes what the fast path applied as desired from then on, so that no redeploy takes it back', () => {
    marbles().run(({ hot, expectObservable }) => {
      const configs = hot<ValidatedEvent | FastPlanned>('a--f--b', { a: validated('one'), f: fastPlanned('fast', 2), b: validated('two') });
      const endpoints = hot<readonly Endpoint[]>('x------', { x: [endpoint('e1')] });
      const shown = map((d: Desired) => `${nameOf(d)}:${d.appliedByFastPath === true}`);
      expectObservable(desired(configs, endpoints).pipe(shown)).toBe('a--f--b', { a: 'one:false', f: 'fast:true', b: 'two:false' });
    });
  });
});

describe('deployRequests', () => {
  it('sends a new configuration to every instance, and the current one to an instance that joins', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a--b--c---d', {
        a: state('one', endpoint('e1')),
        b: state('one', endpoint('e1'), endpoint('e2')),
        c: state('two', endpoint('e1'), endpoint('e2')),
        d: state('two', endpoint('e2')), // e1 left: nothing to deploy
      });
      expectObservable(deployRequests(states).pipe(label)).toBe('a--j--b', { a: 'change:one:e1', j: 'endpoints:one:e2', b: 'change:two:e1,e2' });
    });
  });

  it('does not send what the fast path applied (it sent it), nor its full render when that agrees; an instance that joins gets it', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a-f-b--c', { a: state('one', endpoint('e1')), f: fastState('two', endpoint('e1')), b: state('two', endpoint('e1')), c: state('two', endpoint('e1'), endpoint('e2')) });
      expectObservable(deployRequests(states).pipe(label)).toBe('a------j', { a: 'change:one:e1', j: 'endpoints:two:e2' });
    });
  });

  it('sends what the fast path applied to every instance when there was none to send it to', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('f-c', { f: fastState('two'), c: fastState('two', endpoint('e1')) });
      expectObservable(deployRequests(states).pipe(label)).toBe('--c', { c: 'change:two:e1' });
    });
  });

  it('sends a validated configuration that differs from what the fast path applied', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a-f-b', { a: state('one', endpoint('e1')), f: fastState('two', endpoint('e1')), b: state('three', endpoint('e1')) });
      expectObservable(deployRequests(states).pipe(label)).toBe('a---b', { a: 'change:one:e1', b: 'change:three:e1' });
    });
  });

  it('waits for the first instance, then deploys the current configuration to it', () => {
    marbles().run(({ hot, expectObservable }) => {
      const states = hot<Desired>('a-b-c', { a: state('one'), b: state('two'), c: state('two', endpoint('e1')) });
      expectObservable(deployRequests(states).pipe(label)).toBe('----c', { c: 'change:two:e1' });
    });
  });

  it('sends the current configuration at once to an instance that comes back: restarted, replaced or re-addressed', () => {
    marbles().run(({ hot, expectObservable }) => {
      const e1 = endpoint('e1');
      const e2 = { ...endpoint('e2'), incarnation: 'uid-a/0' };
      const states = hot<Desired>('a-b-c-d-e', {
        a: state('one', e1, e2),
        b: state('one', e1, { ...e2, incarnation: 'uid-a/1' }), // a container of e2 restarted
        c: state('one', e1, { ...e2, incarnation: 'uid-b/0' }), // a new pod named e2
        d: state('one', { ...e1, address: 'http://10.0.0.9:5555' }, { ...e2, incarnation: 'uid-b/0' }), // e1 moved
        e: state('one', { ...e1, address: 'http://10.0.0.9:5555' }, { ...e2, incarnation: 'uid-b/0' }), // nothing new
      });
      expectObservable(deployRequests(states).pipe(label)).toBe('a-b-c-d', { a: 'change:one:e1,e2', b: 'endpoints:one:e2', c: 'endpoints:one:e2', d: 'endpoints:one:e1' });
    });
  });
});

describe('redeployOn', () => {
  it('sends the current configuration to every instance on each signal, once there is one', () => {
    marbles().run(({ hot, expectObservable }) => {
      const credentials = hot<string>('v---w---x', { v: 'v1', w: 'v2', x: 'v3' });
      const states = hot<Desired>('--a---b', { a: state('one', endpoint('e1'), endpoint('e2')), b: state('two', endpoint('e2')) });
      expectObservable(redeployOn(credentials, states, 'credentials').pipe(label)).toBe('----c---d', { c: 'credentials:one:e1,e2', d: 'credentials:two:e2' });
    });
  });
});
