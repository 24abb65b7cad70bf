import { type MonoTypeOperatorFunction, type Observable, defer, tap } from 'rxjs';
import { type ResourceChange, objectKey } from '../k8s/resource.ts';
import type { SecretScrubber } from './redact.ts';

/**
 * Counts the objects of each watched set from the changes the graph receives, keys
 * only (the graph's stores hold the objects), and teaches the scrubber the values of
 * watched Secrets, and makes it forget those of Secrets deleted or no longer watched.
 * Each subscription (each graph) starts from zero.
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
        // A new graph: the Secrets of sets it no longer watches are forgotten at the next one.
        this.scrubber?.retire();
        const owner = (resource: string, key: string) => `${resource}\u0000${key}`;
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
              case 'upsert': {
                const key = objectKey(change.object);
                this.scrubber?.learn(change.object, owner(change.resource, key));
                set(change.resource).add(key);
                return;
              }
              case 'delete': {
                const key = objectKey(change.object);
                this.scrubber?.forget(owner(change.resource, key));
                set(change.resource).delete(key);
                return;
              }
              case 'replace': {
                const keys = set(change.resource);
                keys.clear();
                for (const object of change.objects) {
                  const key = objectKey(object);
                  this.scrubber?.learn(object, owner(change.resource, key));
                  keys.add(key);
                }
                // What the set no longer holds is forgotten.
                for (const held of this.scrubber?.ownersWith(owner(change.resource, '')) ?? []) {
                  if (!keys.has(held.slice(change.resource.length + 1))) this.scrubber?.forget(held);
                }
                return;
              }
            }
          }),
        );
      });
  }
}
