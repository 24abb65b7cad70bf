import { EMPTY, type Observable, defer, from, merge, mergeMap } from 'rxjs';
import type { ControllerEvent, RenderWarning } from '../src/events.ts';
import { type ClusterEvent, clampNote } from '../src/k8s/cluster-events.ts';

/** A Warning Event about the object a warning names. */
export type ObjectWarningEvent = ClusterEvent & { regarding: NonNullable<ClusterEvent['regarding']> };

/** A warning that leaves the object, or a part of it, out of the configuration. */
const isSkip = (w: RenderWarning) => w.skipped === true || /(^|\s)skipped\b/.test(w.message);

/**
 * The Event a warning becomes on the object it names (kubectl describe shows it):
 * its reason is the template's (h.skip/h.warn, e.g. UnsupportedValue), else
 * Skipped (left out whole), PartlySkipped (a part left out) or RenderWarning; its
 * note is the message, naming the field.
 */
export function warningEvent(w: RenderWarning): ObjectWarningEvent | undefined {
  const ref = w.ref;
  if (!ref?.kind) return undefined;
  const reason = w.reason ?? (w.skipped ? 'Skipped' : isSkip(w) ? 'PartlySkipped' : 'RenderWarning');
  const field = w.field && !w.message.includes(w.field) ? ` (field ${w.field})` : '';
  return {
    type: 'Warning',
    reason,
    action: 'Render',
    note: clampNote(`${w.message}${field}`),
    regarding: { ...(ref.apiVersion && { apiVersion: ref.apiVersion }), kind: ref.kind, ...(ref.namespace && { namespace: ref.namespace }), name: ref.name, ...(ref.uid && { uid: ref.uid }) },
  };
}

const keyOf = (e: ObjectWarningEvent) => `${e.regarding.kind}\u0000${e.regarding.namespace ?? ''}\u0000${e.regarding.name}\u0000${e.reason}\u0000${e.note}`;

/**
 * Warning Events for the objects the render skipped or applied in part, as a
 * consumer of the controller's events: one when a warning first appears on an
 * object, and again when it comes back after it was gone (the recorder counts such
 * repeats into the first Event's series and rate-limits the rest). Warnings that
 * stay render after render make no new Event. Only the leader reports; a replica
 * that becomes the leader reports the warnings standing then, which no Event of
 * its own covers yet. What is kept is the current warnings, nothing more.
 */
export function objectWarnings(events$: Observable<ControllerEvent>, leader$: Observable<boolean>): Observable<ObjectWarningEvent> {
  return defer(() => {
    let current = new Map<string, ObjectWarningEvent>();
    let leader = false;
    const renders$ = events$.pipe(
      mergeMap((event) => {
        const warnings = event.type === 'Rendered' ? (event.warnings ?? []) : event.type === 'RenderUnchanged' ? event.warnings : undefined;
        if (warnings === undefined) return EMPTY;
        const next = new Map<string, ObjectWarningEvent>();
        for (const w of warnings) {
          const e = warningEvent(w);
          if (e) next.set(keyOf(e), e);
        }
        const fresh = [...next].filter(([key]) => !current.has(key)).map(([, e]) => e);
        current = next;
        return leader ? from(fresh) : EMPTY;
      }),
    );
    const leadership$ = leader$.pipe(
      mergeMap((next) => {
        const gained = next && !leader;
        leader = next;
        return gained ? from([...current.values()]) : EMPTY;
      }),
    );
    return merge(leadership$, renders$);
  });
}
