/**
 * `haprx local --record FILE` as a user runs it (real haproxy): the recording of a
 * run with endpoint churn and basic auth, stopped and started again with SIGUSR2;
 * both files replay to the timelines their runs produced, and neither holds the
 * Secret's values or the password hash rendered into haproxy.cfg.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { firstDifference, loadRecording, recordedTimeline, replayRecording } from '../../src/cli/replay-command.ts';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

const HASH = '$6$s4ltS4lt$ugtO/WKBJCPIcXNUER08V4uk15zppxQTJF8L7I5AWtzF.RsIhfy/L0D1RRFIZNbVdS4eIIQVBqDvpUeFYO5Ja.';
const AUTH = Buffer.from(`alice:${HASH}\n`).toString('base64');
const users = `apiVersion: v1\nkind: Secret\nmetadata: {name: users, namespace: shop}\ndata: {auth: ${AUTH}}\n`;
const guarded = manifest.ingress('shop', 'shop.test', 'a', ', annotations: {haprx.io/auth-type: basic, haprx.io/auth-secret: users}');

describe('haprx local --record (real haproxy)', () => {
  const haprx = new LocalHaprx();
  let dir = '';
  let recordingFile = '';
  const deployments = () => haprx.logs.filter((l) => l.msg.startsWith('deployed to local')).length;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-local-record-'));
    recordingFile = join(dir, 'incident.jsonl');
    await haprx.start({
      manifests: { 'shop.yaml': guarded, 'users.yaml': users },
      echoes: ['e1'],
      settings: { debounce: '20ms', debounceMaxWait: '100ms', minDeployInterval: '50ms', driftInterval: '0s' },
      args: ['--record', recordingFile],
    });
  });
  after(async () => {
    await haprx.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('records, stops and starts again on SIGUSR2, and each recording replays to its run', async () => {
    assert.ok(haprx.logs.some((l) => l.msg.startsWith(`recording the graph's inputs to ${recordingFile}`)), haprx.recentLogs());
    // Endpoint churn: the Service gets its slice, then the slice moves.
    await writeFile(join(haprx.manifests, 'a.yaml'), `${manifest.service('a')}---\n${manifest.slice('a', 'a', haprx.echo.e1!.port)}`);
    await haprx.until('a deployment of the slice', () => (deployments() >= 2 ? true : undefined));
    await writeFile(join(haprx.manifests, 'a.yaml'), `${manifest.service('a')}---\n${manifest.slice('a', 'a', haprx.echo.e1!.port + 1)}`);
    await haprx.until('a deployment of the moved slice', () => (deployments() >= 3 ? true : undefined));

    haprx.signal('SIGUSR2');
    await haprx.until('the recording stopped', () => haprx.logs.find((l) => l.msg === `recording to ${recordingFile} stopped: stopped at runtime`));
    const before = deployments();
    haprx.signal('SIGUSR2');
    const second = recordingFile.replace(/\.jsonl$/, '-2.jsonl');
    await haprx.until('a second recording', () => haprx.logs.find((l) => l.msg.startsWith(`recording the graph's inputs to ${second}`)));
    await haprx.until('the rebuilt graph deployed', () => (deployments() > before ? true : undefined));
    await writeFile(join(haprx.manifests, 'a.yaml'), `${manifest.service('a')}---\n${manifest.slice('a', 'a', haprx.echo.e1!.port)}`);
    await haprx.until('a deployment in the second recording', () => (deployments() > before + 1 ? true : undefined));
    await haprx.stop();

    for (const f of [recordingFile, second]) {
      const text = await readFile(f, 'utf8');
      assert.ok(!text.includes(AUTH), `${f} holds the Secret's value`);
      assert.ok(!text.includes(HASH), `${f} holds the password hash`);
      assert.match(text, /"auth":"\[redacted\]"/);
      const loaded = await loadRecording(f);
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
      const replayed = replayRecording(loaded.recording);
      assert.deepEqual(replayed.divergences, [], f);
      assert.equal(firstDifference(recordedTimeline(loaded.recording), replayed.timeline), undefined, f);
      assert.ok(replayed.timeline.filter((e) => e.event.type === 'DeploymentCompleted').length >= 2, f);
    }
    assert.match(await readFile(second, 'utf8'), /"k":"end","reason":"(haprx stopped|the graph stopped[^"]*)"\}\n$/);
  });
});
