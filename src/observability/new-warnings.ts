import type { ControllerEvent, RenderWarning } from '../events.ts';

/**
 * The warnings of each render that the render before did not have: an object that
 * has just become skipped (or partly applied) is logged once, on its own line, even
 * when the configuration did not change; one that stays so is not logged again.
 */
export class NewWarnings {
  private current = new Set<string>();

  /** The warnings new with this event, if it is a render's. */
  take(event: ControllerEvent): RenderWarning[] {
    const warnings = event.type === 'Rendered' ? (event.warnings ?? []) : event.type === 'RenderUnchanged' ? event.warnings : undefined;
    if (warnings === undefined) return [];
    const next = new Set<string>();
    const fresh: RenderWarning[] = [];
    for (const w of warnings) {
      const key = `${w.object ?? ''}\u0000${w.message}`;
      next.add(key);
      if (!this.current.has(key)) fresh.push(w);
    }
    this.current = next;
    return fresh;
  }
}
