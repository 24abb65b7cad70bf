import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileVersions, type ScannedFile, folderHints, oneAtATime, scanFolder } from '../../src/local/folder-scan.ts';

const file = (path: string, signature: string, mtimeMs: number): ScannedFile => ({ path, signature, size: 1, mtimeMs });

describe('scanFolder', async () => {
  const root = await mkdtemp(join(tmpdir(), 'haprx-scan-'));
  after(() => rm(root, { recursive: true, force: true }));

  it('lists accepted files below the folder, follows links, skips dot names and reads a looped folder once', async () => {
    const dir = join(root, 'tree');
    await mkdir(join(dir, 'sub', 'deeper'), { recursive: true });
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, 'a.yaml'), 'a');
    await writeFile(join(dir, 'sub', 'deeper', 'b.yaml'), 'b');
    await writeFile(join(dir, 'notes.txt'), 'n');
    await writeFile(join(dir, '.a.yaml.swp'), 's');
    await writeFile(join(dir, '.git', 'c.yaml'), 'c');
    await symlink('a.yaml', join(dir, 'link.yaml'));
    await symlink('..', join(dir, 'sub', 'loop'));
    const scan = await scanFolder(dir, { accept: (p) => p.endsWith('.yaml') });
    assert.ok(scan.ok);
    assert.deepEqual([...scan.files.keys()].sort(), ['a.yaml', 'link.yaml', 'sub/deeper/b.yaml']);
  });

  it('takes a few turns of the event loop for a folder of hundreds of files, not one per file', async () => {
    // Each turn may hold a slice of other work (a render taken in, a plan), so a scan
    // that waited a turn per file would keep a change waiting for as many slices.
    const dir = join(root, 'many');
    await mkdir(join(dir, 'sub'), { recursive: true });
    for (let i = 0; i < 300; i++) await writeFile(join(dir, i % 3 === 0 ? 'sub' : '.', `f-${i}.yaml`), 'x');
    // Other work: a slice of 2 ms each turn, so turns count the scan's waits, not the clock.
    let turns = 0;
    let scanning = true;
    const count = () => {
      if (!scanning) return;
      turns++;
      for (const until = performance.now() + 2; performance.now() < until; );
      setImmediate(count);
    };
    setImmediate(count);
    const scan = await scanFolder(dir, { accept: (p) => p.endsWith('.yaml') });
    scanning = false;
    assert.ok(scan.ok);
    assert.equal(scan.files.size, 300);
    assert.ok(turns <= 60, `${turns} turns of the event loop for 300 files`);
  });

  it('fails for a folder that is missing or is a file', async () => {
    assert.equal((await scanFolder(join(root, 'none'), { accept: () => true })).ok, false);
    await writeFile(join(root, 'plain'), 'x');
    assert.deepEqual(await scanFolder(join(root, 'plain'), { accept: () => true }), { ok: false, message: 'not a folder' });
  });
});

describe('FileVersions', () => {
  it('offers new and moved files, reports removed ones, and calls a file changed only when its content did', () => {
    const versions = new FileVersions();
    const old = Date.now() - 60_000;
    const a1 = file('a', 'sig1', old);
    assert.deepEqual(versions.candidates(new Map([['a', a1]])), { changed: [a1], removed: [] });
    assert.equal(versions.record(a1, 'one', Date.now()), true);
    assert.deepEqual(versions.candidates(new Map([['a', a1]])), { changed: [], removed: [] });
    const a2 = file('a', 'sig2', old);
    assert.deepEqual(versions.candidates(new Map([['a', a2]])).changed, [a2]);
    assert.equal(versions.record(a2, 'one'), false, 'same content under a new signature');
    assert.deepEqual(versions.candidates(new Map()), { changed: [], removed: ['a'] });
  });

  it('reads a recently written file again even when its signature did not move', () => {
    const versions = new FileVersions();
    const now = Date.now();
    const fresh = file('a', 'sig', now - 5);
    versions.record(fresh, 'one', now);
    // Written again within the same timestamp tick: same signature, other content.
    assert.deepEqual(versions.candidates(new Map([['a', fresh]])).changed, [fresh], 'racy: compared again');
    assert.equal(versions.record(fresh, 'two', now + 3_000), true);
    assert.deepEqual(versions.candidates(new Map([['a', fresh]])).changed, [], 'settled once old enough');
  });
});

describe('oneAtATime', () => {
  it('never overlaps runs, and follows any number of requests during a run with exactly one more', async () => {
    let running = 0;
    let runs = 0;
    let release: (() => void) | undefined;
    const runner = oneAtATime(async () => {
      running++;
      assert.equal(running, 1);
      runs++;
      await new Promise<void>((r) => (release = r));
      running--;
    });
    const first = runner.request();
    const more = [runner.request(), runner.request(), runner.request()];
    release!();
    await first;
    await new Promise((r) => setImmediate(r));
    release!();
    await Promise.all(more);
    assert.equal(runs, 2);
    runner.stop();
    await runner.request();
    assert.equal(runs, 2, 'stopped');
  });
});

describe('folderHints', async () => {
  const root = await mkdtemp(join(tmpdir(), 'haprx-hints-'));
  after(() => rm(root, { recursive: true, force: true }));

  it('hints once per burst of events, and periodically without any', async () => {
    let hints = 0;
    const stop = folderHints(root, { onHint: () => hints++, rescanMs: 0, settleMs: 50 });
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 10; i++) await writeFile(join(root, `f${i}`), 'x');
    await new Promise((r) => setTimeout(r, 400));
    await stop();
    assert.equal(hints, 1);

    let ticks = 0;
    const stopPeriodic = folderHints(root, { onHint: () => ticks++, rescanMs: 100, settleMs: 50 });
    await new Promise((r) => setTimeout(r, 550));
    await stopPeriodic();
    assert.ok(ticks >= 3 && ticks <= 6, `${ticks} periodic hints in 550 ms`);
  });
});
