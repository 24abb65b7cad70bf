import type { TimelineEvent } from './format.ts';

/** An event of a timeline, at its time (ms since the graph started). */
export interface TimelineEntry {
  at: number;
  event: TimelineEvent;
}
