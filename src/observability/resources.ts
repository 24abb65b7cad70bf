import { type MonoTypeOperatorFunction, type Observable, defer, tap } from 'rxjs';
import { type ResourceChange, objectKey } from '../k8s/resource.ts';
import type { SecretScrubber } from './redact.ts';

/**
 * Counts the objects of each watched set from the changes the graph receives, keys
 * only (the graph's stores hold the objects), and teaches the scrubber the values of
 * watched Secrets. Each subscription (each graph) starts from zero.
 */
export class ResourceCounter {
  private sets = new Map<string, Set<string>>();
  private readonly scrubber: SecretScrubber | undefined;

  constructor(scrubber?: SecretScrubber) {
    this.scrubber = scrubber;
  }

  counts(): ReadonlyMap<string, number> {
    return new Map([...this.sets].map(([name, keys]) => [name, keys.size]));
  }

  track(): MonoTypeOperatorFunction<ResourceChange> {
    return (changes$: Observable<ResourceChange>) =>
      defer(() => {
        const sets = new Map<string, Set<string>>();
        this.sets = sets;
        const set = (name: string) => {
          let keys = sets.get(name);
          if (!keys) sets.set(name, (keys = new Set()));
          return keys;
        };
        return changes$.pipe(
          tap((change) => {
            switch (change.type) {
              case 'problem':
                return;
              case 'synced':
                set(change.resource);
                return;
              case 'upsert':
                this.scrubber?.learn(change.object);
                set(change.resource).add(objectKey(change.object));
                return;
              case 'delete':
                set(change.resource).delete(objectKey(change.object));
                return;
              case 'replace': {
                const keys = set(change.resource);
                keys.clear();
                for (const object of change.objects) {
                  this.scrubber?.learn(object);
                  keys.add(objectKey(object));
                }
                return;
              }
            }
          }),
        );
      });
  }
}
