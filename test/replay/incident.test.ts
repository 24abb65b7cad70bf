/**
 * A recorded incident replays to the same event timeline: the scripted incident run
 * live (in-cluster controller, API server double, haproxy-1 failing while haproxy-2
 * flaps and Services change) and recorded; then the recording, and the committed one,
 * replayed in virtual time.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Replayed, firstDifference, loadRecording, recordedTimeline, replayRecording } from '../../src/cli/replay-command.ts';
import type { Recording } from '../../src/replay/format.ts';
import type { TimelineEntry } from '../../src/replay/timeline-entry.ts';
import { recordIncident } from './incident-scenario.ts';

function assertSameTimeline(recording: Recording, replayed: Replayed): TimelineEntry[] {
  const recorded = recordedTimeline(recording);
  assert.deepEqual(replayed.divergences, []);
  assert.equal(firstDifference(recorded, replayed.timeline), undefined);
  // Every event, at the same virtual millisecond.
  assert.deepEqual(replayed.timeline, recorded);
  return recorded;
}

const story = (timeline: readonly TimelineEntry[]) => ({
  failures: timeline.filter((e) => e.event.type === 'InstanceDeployFailed' && e.event.fields.endpoint === 'haproxy-1').length,
  joined: timeline.filter((e) => e.event.type === 'DeploymentStarted' && e.event.fields.reason === 'endpoints').length,
  recovered: timeline.some((e) => e.event.type === 'InstanceDeployed' && e.event.fields.endpoint === 'haproxy-1'),
});

describe('a recorded incident', () => {
  it('replays to the timeline the live run produced', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'haprx-incident-'));
    try {
      const file = join(dir, 'incident.jsonl');
      await recordIncident(file);
      const loaded = await loadRecording(file);
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
      const recorded = assertSameTimeline(loaded.recording, replayRecording(loaded.recording));
      const s = story(recorded);
      assert.ok(s.failures >= 2, `haproxy-1 failed ${s.failures} times`);
      assert.ok(s.joined >= 1, 'haproxy-2 joined');
      assert.ok(s.recovered, 'haproxy-1 recovered by a retry');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the committed recording replays to the timeline it recorded', async () => {
    const loaded = await loadRecording(fileURLToPath(new URL('../../marble-tests/fixtures/incident.jsonl', import.meta.url)));
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
    const recorded = assertSameTimeline(loaded.recording, replayRecording(loaded.recording));
    assert.deepEqual(story(recorded), { failures: 3, joined: 2, recovered: true });
  });
});
