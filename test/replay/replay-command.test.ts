/** `haprx replay` as a user runs it: the timeline, JSON, a marble test, and recordings that are wrong. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadRecording, recordedTimeline } from '../../src/cli/replay-command.ts';
import type { TimelineEntry } from '../../src/replay/timeline-entry.ts';
import { timelineLine } from '../../src/replay/timeline.ts';

const BIN = fileURLToPath(new URL('../../bin/haprx.js', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../../marble-tests/fixtures/incident.jsonl', import.meta.url));

function haprxCommand(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function haprx(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return haprxCommand(['replay', ...args]);
}

let dir: string;
let lines: string[];
let recorded: TimelineEntry[];
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'haprx-replay-'));
  lines = (await readFile(FIXTURE, 'utf8')).trimEnd().split('\n');
  const loaded = await loadRecording(FIXTURE);
  assert.ok(loaded.ok);
  recorded = recordedTimeline(loaded.recording);
});
after(() => rm(dir, { recursive: true, force: true }));

const noStack = (text: string) => assert.doesNotMatch(text, /^\s+at /m, 'no stack trace');

describe('haprx replay', () => {
  it('prints one line per event, virtual time first, and says the replay matches the recording', async () => {
    const { code, stdout, stderr } = await haprx(FIXTURE);
    assert.equal(code, 0, stderr);
    const out = stdout.trimEnd().split('\n');
    assert.equal(out.length, recorded.length);
    assert.deepEqual(out, recorded.map((e) => timelineLine(e.at, e.event)));
    assert.match(out[0]!, /^\s+\d+ms {2}ReconcileTriggered {2}seq=1 reason=config changes=0$/);
    assert.ok(out.some((l) => /InstanceDeployFailed {2}id=1 endpoint=haproxy-1 error="reload failed: haproxy exited with status 1"$/.test(l)));
    assert.match(stderr, /the replay matches the recorded timeline \(34 events\)/);
  });

  it('prints JSON with --json, and writes a marble test with --marble-test', async () => {
    const out = join(dir, 'incident.test.ts');
    const { code, stdout, stderr } = await haprx(FIXTURE, '--json', '--marble-test', out);
    assert.equal(code, 0, stderr);
    const events = stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { at: number; type: string; fields: Record<string, unknown> });
    assert.equal(events.length, 34);
    assert.deepEqual(events[0], { at: recorded[0]!.at, type: 'ReconcileTriggered', fields: { seq: 1, reason: 'config', changes: 0 } });
    const test = await readFile(out, 'utf8');
    // The committed marble test is what this writes for the committed recording, up to where it lives.
    const committed = await readFile(new URL('../../marble-tests/recorded-incident.test.ts', import.meta.url), 'utf8');
    const body = (t: string) => t.slice(t.indexOf('/** One frame'));
    assert.equal(body(test), body(committed));
  });

  it('names the file and line of a recording cut in the middle of an entry, without a stack trace', async () => {
    const file = join(dir, 'cut.jsonl');
    await writeFile(file, `${lines.slice(0, 30).join('\n')}\n${lines[30]!.slice(0, 20)}`);
    const { code, stdout, stderr } = await haprx(file);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, new RegExp(`^haprx replay: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:31: not JSON .*the file may be cut short\\n$`));
    noStack(stderr);
  });

  it('replays a recording that stopped without its end (the process died) as far as it goes, and says so', async () => {
    const file = join(dir, 'no-end.jsonl');
    await writeFile(file, `${lines.slice(0, -1).join('\n')}\n`);
    const { code, stderr } = await haprx(file);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /no end entry: the recording was cut short; replayed to its last entry/);
  });

  it('names what the graph asked for that an edited recording does not hold, and exits 1', async () => {
    const file = join(dir, 'edited.jsonl');
    // Instance haproxy-1's answers to the first deployment are taken out.
    const firstDeploy = lines.findIndex((l) => l.includes('"k":"subscribe","dep":"deploy"') && l.includes('"key":"haproxy-1'));
    const n = (JSON.parse(lines[firstDeploy]!) as { n: number }).n;
    await writeFile(file, `${lines.filter((l, i) => i === firstDeploy || !(l.includes('"dep":"deploy"') && l.includes(`"n":${n},`))).join('\n')}\n`);
    const { code, stderr } = await haprx(file);
    assert.equal(code, 1);
    assert.match(stderr, /the replay differs from the recorded timeline: event \d+: recorded at \d+ms: InstanceDeployFailed {2}id=1 endpoint=haproxy-1/);
    noStack(stderr);
  });

  it('says in --help what it does and takes, and run and local say how to record', async () => {
    const help = await haprxCommand(['replay', '--help']);
    assert.equal(help.code, 0);
    for (const text of ['Usage: haprx replay FILE [--json] [--marble-test OUT.test.ts]', 'virtual time', '--json', '--marble-test OUT', 'Exit status: 0']) assert.ok(help.stdout.includes(text), text);
    for (const command of ['run', 'local']) {
      const usage = await haprxCommand([command, '--help']);
      assert.match(usage.stdout, /--record FILE {11}record the graph's inputs and events to FILE/);
      assert.match(usage.stdout, /SIGUSR2 stops the recording/);
      assert.match(usage.stdout, /--record-max-bytes N/);
    }
    const list = await haprxCommand(['--help']);
    assert.match(list.stdout, /replay {5}replay a recording of the graph in virtual time/);
  });

  it('ends, naming where it diverged, a recording whose settings were edited to run timers every millisecond for a day', async () => {
    const file = join(dir, 'forever.jsonl');
    const header = lines[0]!.replace('"driftIntervalMs":0', '"driftIntervalMs":1');
    const end = lines.at(-1)!.replace(/"t":\d+/, '"t":86400000');
    await writeFile(file, `${[header, ...lines.slice(1, -1), end].join('\n')}\n`);
    const t0 = Date.now();
    const { code, stderr } = await haprx(file);
    assert.equal(code, 1);
    assert.ok(Date.now() - t0 < 30_000);
    // The timers the recording never saw run do not run: the drift's timers are new ones.
    assert.match(stderr, /haprx replay: diverged at \d+ms: timer #\d+ is due at \d+ms, the recorded one ran at \d+ms\n/);
    assert.match(stderr, /the replay differs from the recorded timeline/);
    noStack(stderr);
  });

  it('refuses a file that is not a recording, a missing file and a missing argument', async () => {
    const other = join(dir, 'other.json');
    await writeFile(other, '{"kind":"ConfigMap"}\n');
    const notRecording = await haprx(other);
    assert.equal(notRecording.code, 2);
    assert.match(notRecording.stderr, /other\.json:1: not a haprx recording/);
    const missing = await haprx(join(dir, 'missing.jsonl'));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing\.jsonl: ENOENT/);
    noStack(missing.stderr);
    const none = await haprx();
    assert.equal(none.code, 2);
    assert.match(none.stderr, /expected one recording file/);
  });
});
