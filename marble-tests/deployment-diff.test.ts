import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { ControllerEvent, Deployment, DeployRequest } from '../src/events.ts';
import type { ConfigDiff } from '../src/haproxy/config-diff.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { type Describe, deploymentDiffs } from '../streams/deployment-diff.ts';
import { configNamed, endpoint, marbles, reconcileNo } from './helpers.ts';

const name = (config: RenderedConfig | undefined) => (config ? config.main.split('\n')[0]!.slice(2) : '∅');
/** A fake diff that says what it was asked: from → to. */
const describeFake: Describe = (from, to) => ({ ...(from && { from: from.hash }), to: to.hash, files: [], text: `${name(from)}→${name(to)}`, truncated: false });

let nextId = 1;
function deployment(config: string, ids: string[], reason: DeployRequest['reason'] = 'change'): Deployment {
  return { reconcile: reconcileNo(1), config: configNamed(config), endpoints: ids.map(endpoint), reason, queuedAt: 0, id: nextId++, startedAt: 0 };
}
/** The events of one deployment: started, each instance (ok or not), completed. */
function run(d: Deployment, failed: string[] = []): ControllerEvent[] {
  const results = d.endpoints.map((e) => ({ endpoint: e, ok: !failed.includes(e.id), reloaded: true, runtimeOps: 0, durationMs: 5 }));
  return [
    { type: 'DeploymentStarted', deployment: d },
    ...results.map((result): ControllerEvent => ({ type: result.ok ? 'InstanceDeployed' : 'InstanceDeployFailed', deployment: d, result })),
    { type: 'DeploymentCompleted', deployment: d, results, durationMs: 5 },
  ];
}
const diffs = map((e: ControllerEvent) => (e.type === 'DeploymentCompleted' ? `#${e.deployment.id} ${e.diff?.text ?? 'none'}` : e.type));

/** One frame per event; the expected labels are the event types, and each completed deployment's diff in order. */
function frames(events: ControllerEvent[], texts: string[]) {
  const letter = (i: number) => String.fromCharCode(97 + i);
  const marble = events.map((_, i) => letter(i)).join('');
  const values = Object.fromEntries(events.map((e, i) => [letter(i), e]));
  let k = 0;
  const expected = Object.fromEntries(events.map((e, i) => [letter(i), e.type === 'DeploymentCompleted' ? texts[k++]! : e.type]));
  return { marble, values, expected };
}

describe('deploymentDiffs', () => {
  it('diffs each deployment against what its own instances ran: a retry of one instance, a redeploy of the same configuration', () => {
    nextId = 1;
    marbles().run(({ cold, expectObservable }) => {
      const events = [
        ...run(deployment('A', ['e1', 'e2'])),
        ...run(deployment('B', ['e1', 'e2']), ['e2']),
        ...run(deployment('B', ['e2'], 'retry')),
        ...run(deployment('B', ['e1', 'e2'], 'drift')),
      ];
      // e2's deployment of B failed: what it runs is unknown, so its retry has nothing to compare with.
      const { marble, values, expected } = frames(events, ['#1 ∅→A', '#2 A→B', '#3 ∅→B', '#4 B→B']);
      expectObservable(deploymentDiffs(cold(marble, values), describeFake).pipe(diffs)).toBe(marble, expected);
    });
  });

  it('diffs a deployment to one instance, and one back, against what that instance ran, and the next against what most ran', () => {
    nextId = 1;
    marbles().run(({ cold, expectObservable }) => {
      const events = [
        ...run(deployment('L', ['e1', 'e2', 'e3'])),
        ...run(deployment('X', ['e1'])),
        ...run(deployment('L', ['e1'])),
        ...run(deployment('X', ['e1'])),
        ...run(deployment('Y', ['e1', 'e2', 'e3'])),
      ];
      const { marble, values, expected } = frames(events, ['#1 ∅→L', '#2 L→X', '#3 X→L', '#4 L→X', '#5 L→Y']);
      expectObservable(deploymentDiffs(cold(marble, values), describeFake).pipe(diffs)).toBe(marble, expected);
    });
  });

  it('reports a diff that cannot be made on the deployment, which goes on', () => {
    nextId = 1;
    marbles().run(({ cold, expectObservable }) => {
      const broken: Describe = () => {
        throw new Error('out of memory');
      };
      const { marble, values, expected } = frames(run(deployment('A', ['e1'])), ['#1 (the diff could not be made: out of memory)\n']);
      expectObservable(deploymentDiffs(cold(marble, values), broken).pipe(diffs)).toBe(marble, expected);
    });
  });

  it('waits for a diff made elsewhere, and passes the events after it on in their order once it is there', () => {
    nextId = 1;
    marbles().run(({ cold, expectObservable }) => {
      const first = run(deployment('A', ['e1']));
      const second = run(deployment('B', ['e1']));
      const values = Object.fromEntries([...first, ...second].map((e, i) => [String.fromCharCode(97 + i), e]));
      // A diff takes 5 ms to come back: the next deployment's events wait behind it, and its own diff 5 ms more.
      const later: Describe = (from, to) => cold('5ms (d|)', { d: describeFake(from, to) as ConfigDiff });
      const source = cold('abcdef', values);
      expectObservable(deploymentDiffs(source, later).pipe(diffs)).toBe('ab 5ms (xyz) w', {
        a: 'DeploymentStarted',
        b: 'InstanceDeployed',
        x: '#1 ∅→A',
        y: 'DeploymentStarted',
        z: 'InstanceDeployed',
        w: '#2 A→B',
      });
    });
  });

  it('says so on the deployment when a diff made elsewhere fails or never comes, and goes on', () => {
    nextId = 1;
    marbles().run(({ cold, expectObservable }) => {
      const events = [...run(deployment('A', ['e1'])), ...run(deployment('B', ['e1']))];
      let calls = 0;
      const flaky: Describe = () => (++calls === 1 ? cold<ConfigDiff>('2ms #', undefined, new Error('the helper died')) : cold<ConfigDiff>('6ms |'));
      const { values } = frames(events, []);
      expectObservable(deploymentDiffs(cold('abcdef', values), flaky).pipe(diffs)).toBe('ab 2ms (xde) 2ms y', {
        a: 'DeploymentStarted',
        b: 'InstanceDeployed',
        x: '#1 (the diff could not be made: the helper died)\n',
        d: 'DeploymentStarted',
        e: 'InstanceDeployed',
        y: '#2 (the diff could not be made: no diff came)\n',
      });
    });
  });
});
