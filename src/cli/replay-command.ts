import { readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { TestScheduler } from 'rxjs/testing';
import { errorMessage } from '../errors.ts';
import { MAX_READ_BYTES, type Recording, parseRecording } from '../replay/format.ts';
import { marbleTest } from '../replay/marble-test.ts';
import { replayDeps } from '../replay/replay-deps.ts';
import type { TimelineEntry } from '../replay/timeline-entry.ts';
import { timelineEvent, timelineLine, timelineText } from '../replay/timeline.ts';
import { graph } from '../../streams/graph.ts';
import type { Command } from './main.ts';

export interface Replayed {
  timeline: TimelineEntry[];
  divergences: string[];
}

/**
 * Runs the graph on a recording in virtual time, until the recording ends: the same
 * graph `haprx run` and `haprx local` run, with the recorded inputs in place of IO.
 */
export function replayRecording(recording: Recording): Replayed {
  // The scheduler's assertions are not used: the timeline is collected, not compared here.
  const scheduler = new TestScheduler(() => undefined);
  const timeline: TimelineEntry[] = [];
  let divergences: string[] = [];
  scheduler.run(() => {
    const replayed = replayDeps(recording, scheduler);
    divergences = replayed.divergences;
    const subscription = graph(recording.header.settings, replayed.deps).subscribe((event) => timeline.push({ at: scheduler.now(), event: timelineEvent(event) }));
    scheduler.schedule(() => subscription.unsubscribe(), recording.endsAt + 1);
  });
  return { timeline, divergences };
}

/** The events the recording run produced, as a timeline. */
export function recordedTimeline(recording: Recording): TimelineEntry[] {
  return recording.entries.flatMap((e) => (e.k === 'event' ? [{ at: e.t, event: { type: e.type, fields: e.fields } }] : []));
}

/** Where two timelines first differ (an event, or its time), or undefined when they agree. */
export function firstDifference(recorded: readonly TimelineEntry[], replayed: readonly TimelineEntry[]): string | undefined {
  const n = Math.max(recorded.length, replayed.length);
  for (let i = 0; i < n; i++) {
    const a = recorded[i];
    const b = replayed[i];
    const ta = a && timelineText(a.event);
    const tb = b && timelineText(b.event);
    if (ta !== tb || a?.at !== b?.at) return `event ${i + 1}: recorded ${a ? `at ${a.at}ms: ${ta}` : 'nothing'}; replayed ${b ? `at ${b.at}ms: ${tb}` : 'nothing'}`;
  }
  return undefined;
}

/** Reads and checks a recording; the error names the file and the line. */
export async function loadRecording(file: string): Promise<{ ok: true; recording: Recording } | { ok: false; message: string }> {
  try {
    const size = (await stat(file)).size;
    if (size > MAX_READ_BYTES) return { ok: false, message: `${file}: ${size} bytes, more than a recording holds (${MAX_READ_BYTES})` };
    const parsed = parseRecording(await readFile(file, 'utf8'), file);
    return parsed.ok ? parsed : { ok: false, message: parsed.error.message };
  } catch (err) {
    return { ok: false, message: `${file}: ${errorMessage(err)}` };
  }
}

/** This project's root, as the generated test imports it. */
function projectRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

export const replayCommand: Command = {
  summary: 'replay a recording of the graph in virtual time and print its event timeline',
  usage: `Usage: haprx replay FILE [--json] [--marble-test OUT.test.ts]

Runs the controller's graph over a recording made by \`haprx run --record FILE\` or
\`haprx local --record FILE\`, in virtual time: the recorded changes, instances and
leadership come in at their recorded times, and renders, haproxy -c checks,
deployments and canary checks give what they gave then. Nothing is rendered,
checked or deployed. Prints one line per event: virtual time, event type, the
fields that identify it. Then compares it with the timeline the recording run
produced, and says where they first differ (docs/replay.md).

Options:
  --json                  one JSON object per event ({"at","type","fields"}) instead
  --marble-test OUT       also write a marble test (node:test, RxJS TestScheduler) that
                          replays this recording and asserts this timeline

Exit status: 0 when the replay's events are the recorded ones, at the same times;
1 when they differ or the replay diverged from the recording (the graph asked for
an input it does not hold, or a timer was due far from when the recorded one ran);
2 on a usage error or a recording that cannot be read (the message names the file
and line).
`,
  async run(argv) {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: { json: { type: 'boolean', default: false }, 'marble-test': { type: 'string' } }, allowPositionals: true, strict: true });
    } catch (err) {
      process.stderr.write(`haprx replay: ${errorMessage(err)}\n\n${this.usage}`);
      return 2;
    }
    const { values, positionals } = parsed;
    if (positionals.length !== 1) {
      process.stderr.write(`haprx replay: expected one recording file\n\n${this.usage}`);
      return 2;
    }
    const file = positionals[0]!;
    const loaded = await loadRecording(file);
    if (!loaded.ok) {
      process.stderr.write(`haprx replay: ${loaded.message}\n`);
      return 2;
    }
    const { recording } = loaded;
    let replayed: Replayed;
    try {
      replayed = replayRecording(recording);
    } catch (err) {
      // A value the graph could not take (a hostile recording) stops the replay, not haprx with a stack.
      process.stderr.write(`haprx replay: ${file}: the replay stopped: ${errorMessage(err)}\n`);
      return 1;
    }
    for (const { at, event } of replayed.timeline) process.stdout.write(`${values.json ? JSON.stringify({ at, ...event }) : timelineLine(at, event)}\n`);

    const recorded = recordedTimeline(recording);
    const difference = firstDifference(recorded, replayed.timeline);
    const notes: string[] = [];
    if (recording.truncated) notes.push(`${file}: no end entry: the recording was cut short; replayed to its last entry (${recording.endsAt}ms)`);
    for (const d of replayed.divergences.slice(0, 20)) notes.push(`diverged at ${d}`);
    if (replayed.divergences.length > 20) notes.push(`… ${replayed.divergences.length - 20} more divergences`);
    notes.push(difference ? `the replay differs from the recorded timeline: ${difference}` : `the replay matches the recorded timeline (${recorded.length} events)`);
    process.stderr.write(notes.map((n) => `haprx replay: ${n}\n`).join(''));

    const out = values['marble-test'];
    if (out) {
      const target = resolve(out);
      const toRoot = relative(dirname(target), projectRoot()).split(sep).join('/');
      const recordingPath = relative(dirname(target), resolve(file)).split(sep).join('/');
      const text = marbleTest(recording, replayed.timeline, {
        root: toRoot === '' ? './' : `${toRoot}/`,
        recordingPath: recordingPath.startsWith('.') ? recordingPath : `./${recordingPath}`,
        name: `recorded incident ${recordingPath.split('/').at(-1)}`,
        command: `haprx replay ${file} --marble-test ${out}`,
        divergences: replayed.divergences,
      });
      try {
        await writeFile(target, text);
      } catch (err) {
        process.stderr.write(`haprx replay: ${out}: ${errorMessage(err)}\n`);
        return 2;
      }
      process.stderr.write(`haprx replay: wrote ${out}\n`);
    }
    return difference || replayed.divergences.length > 0 ? 1 : 0;
  },
};
