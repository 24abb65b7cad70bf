import { type Observable, filter } from 'rxjs';
import type { ResourceChange } from '../src/k8s/resource.ts';
import type { Store } from '../src/k8s/store.ts';

/**
 * Folds resource changes into their keyed stores and passes on only the changes
 * that altered something (a re-sent object with the same resourceVersion does not).
 * A change for a set that is not watched is dropped: it cannot affect a render.
 * Source problems are not changes: the graph reports them apart.
 */
export function applyToStores(changes$: Observable<ResourceChange>, stores: ReadonlyMap<string, Store>): Observable<ResourceChange> {
  return changes$.pipe(filter((change) => change.type !== 'problem' && (stores.get(change.resource)?.apply(change) ?? false)));
}
