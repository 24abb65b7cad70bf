import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { DeployRequest, Endpoint, ValidatedEvent } from '../src/events.ts';
import { deployRequests } from '../streams/endpoints.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const validated = (name: string): ValidatedEvent => ({ type: 'Validated', reconcile: reconcileNo(1), config: configNamed(name), durationMs: 0 });
const label = map((r: DeployRequest) => `${r.reason}:${r.config.main.split('\n')[0]!.slice(2)}:${r.endpoints.map((e) => e.id).join(',')}`);

describe('deployRequests', () => {
  it('sends a new configuration to every instance, and the current one to an instance that joins', () => {
    marbles().run(({ hot, expectObservable }) => {
      const configs = hot<ValidatedEvent>('a-----b----', { a: validated('one'), b: validated('two') });
      const endpoints = hot<readonly Endpoint[]>('x--y------z', {
        x: [endpoint('e1')],
        y: [endpoint('e1'), endpoint('e2')],
        z: [endpoint('e2')], // e1 left: nothing to deploy
      });
      expectObservable(deployRequests(configs, endpoints).pipe(label)).toBe('a--j--b', {
        a: 'change:one:e1',
        j: 'endpoints:one:e1,e2',
        b: 'change:two:e1,e2',
      });
    });
  });

  it('waits for the first instance, then deploys the current configuration to it', () => {
    marbles().run(({ hot, expectObservable }) => {
      const configs = hot<ValidatedEvent>('a-b', { a: validated('one'), b: validated('two') });
      const endpoints = hot<readonly Endpoint[]>('x---y', { x: [], y: [endpoint('e1')] });
      expectObservable(deployRequests(configs, endpoints).pipe(label)).toBe('----c', { c: 'change:two:e1' });
    });
  });
});
