import { describe, it } from 'node:test';
import { map } from 'rxjs';
import type { ControllerEvent, Deployment, DeployRequest } from '../src/events.ts';
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
});
