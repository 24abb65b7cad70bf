import { type Observable, mergeMap } from 'rxjs';
import type { ResourceChange } from '../src/k8s/resource.ts';
import type { Store } from '../src/k8s/store.ts';

/**
 * Folds resource changes into their keyed stores and passes on only the changes
 * that altered something (a re-sent object with the same resourceVersion does not).
 * A change for a set that is not watched is dropped: it cannot affect a render.
 * Problems pass on too: the sources' own, and one for each object a store could
 * not take (it names the object; the store keeps what it had). Nothing a change
 * holds can end this stage.
 */
export function applyToStores(changes$: Observable<ResourceChange>, stores: ReadonlyMap<string, Store>): Observable<ResourceChange> {
  return changes$.pipe(
    mergeMap((change): ResourceChange[] => {
      if (change.type === 'problem') return [change];
      const store = stores.get(change.resource);
      if (!store) return [];
      const { changed, problems } = store.update(change);
      return changed ? [...problems, change] : [...problems];
    }),
  );
}
