import assert from 'node:assert/strict';
import { link, mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type Observable, filter, firstValueFrom, take, toArray, timeout } from 'rxjs';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { folderSource } from '../../src/local/folder-source.ts';
import { compileWatches } from '../../src/local/manifests.ts';
import { type ManifestParser, ParseWorker } from '../../src/local/parse-worker.ts';
import { until } from '../support/until.ts';

const compiled = compileWatches([
  { name: 'services', apiVersion: 'v1', resource: 'services' },
  { name: 'ingresses', apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' },
]);
assert.ok(compiled.ok);
const watches = compiled.watches;

const service = (name: string, port = 80) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: demo}\nspec: {ports: [{port: ${port}}]}\n`;
const label = (c: ResourceChange) =>
  c.type === 'upsert' || c.type === 'delete' ? `${c.type} ${c.resource} ${c.object.metadata.name}` : c.type === 'problem' ? `problem ${c.source}:${c.line ?? ''} ${c.message}` : `${c.type} ${c.resource}`;

/** Collects changes as they come, so a test can wait for the next few. */
function recorder(source: Observable<ResourceChange>) {
  const seen: ResourceChange[] = [];
  const waiters: (() => void)[] = [];
  const subscription = source.subscribe((c) => {
    seen.push(c);
    waiters.splice(0).forEach((w) => w());
  });
  return {
    subscription,
    async next(count: number, ms = 5000): Promise<string[]> {
      const deadline = Date.now() + ms;
      while (seen.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} changes, got: ${seen.map(label).join(' | ')}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return seen.splice(0, count).map(label);
    },
    async quiet(ms = 300): Promise<string[]> {
      await new Promise((r) => setTimeout(r, ms));
      return seen.splice(0).map(label);
    },
  };
}

describe('folderSource', async () => {
  const root = await mkdtemp(join(tmpdir(), 'haprx-folder-'));
  after(() => rm(root, { recursive: true, force: true }));

  it('loads every manifest below the folder, then reports each set synced', async () => {
    const dir = join(root, 'initial');
    await mkdir(join(dir, 'nested'), { recursive: true });
    await writeFile(join(dir, 'a.yaml'), service('web') + '---\n' + service('api'));
    await writeFile(join(dir, 'nested', 'b.yml'), 'apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: site, namespace: demo}\n');
    await writeFile(join(dir, 'notes.txt'), 'not a manifest');
    const changes = await firstValueFrom(folderSource({ dir, watches, follow: false }).pipe(take(5), toArray(), timeout(5000)));
    assert.deepEqual(changes.map(label), ['upsert services web', 'upsert services api', 'upsert ingresses site', 'synced services', 'synced ingresses']);
  });

  it('turns edits, additions and removals of files into upserts and deletes', async () => {
    const dir = join(root, 'edits');
    await mkdir(dir);
    await writeFile(join(dir, 'svc.yaml'), service('web') + '---\n' + service('api'));
    const r = recorder(folderSource({ dir, watches }));
    after(() => r.subscription.unsubscribe());
    assert.deepEqual(await r.next(4), ['upsert services web', 'upsert services api', 'synced services', 'synced ingresses']);

    await writeFile(join(dir, 'svc.yaml'), service('web', 8080));
    // api is gone from the file; web changed.
    assert.deepEqual((await r.next(2)).sort(), ['delete services api', 'upsert services web']);

    await writeFile(join(dir, 'more.yaml'), service('db'));
    assert.deepEqual(await r.next(1), ['upsert services db']);

    await unlink(join(dir, 'more.yaml'));
    assert.deepEqual(await r.next(1), ['delete services db']);
  });

  it('reports a file that does not parse with its line, keeps what it held, and recovers when fixed', async () => {
    const dir = join(root, 'broken');
    await mkdir(dir);
    await writeFile(join(dir, 'svc.yaml'), service('web'));
    const r = recorder(folderSource({ dir, watches }));
    after(() => r.subscription.unsubscribe());
    await r.next(3);

    await writeFile(join(dir, 'svc.yaml'), 'apiVersion: v1\nkind: Service\nmetadata:\n  name: [web\n');
    const [problem] = await r.next(1);
    assert.match(problem!, /^problem svc\.yaml:\d+ /);
    assert.deepEqual(await r.quiet(), [], 'no delete: the objects stay as they were');

    await writeFile(join(dir, 'svc.yaml'), service('web', 9090));
    assert.deepEqual(await r.next(1), ['upsert services web']);
  });

  it('does not let a second file take over an object another file defines', async () => {
    const dir = join(root, 'dupes');
    await mkdir(dir);
    await writeFile(join(dir, 'a.yaml'), service('web'));
    await writeFile(join(dir, 'b.yaml'), service('web', 81));
    const changes = await firstValueFrom(
      folderSource({ dir, watches, follow: false }).pipe(
        filter((c) => c.type !== 'synced'),
        take(2),
        toArray(),
        timeout(5000),
      ),
    );
    assert.deepEqual(changes.map(label), ['upsert services web', 'problem b.yaml: Service demo/web is also defined in a.yaml; keeping that one']);
  });

  it('reports a folder that does not exist, and still syncs so the graph can go on', async () => {
    const changes = await firstValueFrom(folderSource({ dir: join(root, 'missing'), watches, follow: false }).pipe(take(3), toArray(), timeout(5000)));
    assert.match(label(changes[0]!), /^problem .*missing: cannot list the folder/);
    assert.deepEqual(changes.slice(1).map(label), ['synced services', 'synced ingresses']);
  });
});

describe('folderSource never loses an edit', async () => {
  const root = await mkdtemp(join(tmpdir(), 'haprx-folder-edits-'));
  after(() => rm(root, { recursive: true, force: true }));
  /** The port each Service has now, from the changes seen so far. */
  function ports(source: Observable<ResourceChange>) {
    const now = new Map<string, number>();
    const problems: string[] = [];
    const subscription = source.subscribe((c) => {
      if (c.type === 'upsert') now.set(c.object.metadata.name, (c.object as unknown as { spec: { ports: { port: number }[] } }).spec.ports[0]!.port);
      if (c.type === 'delete') now.delete(c.object.metadata.name);
      if (c.type === 'problem') problems.push(label(c));
    });
    after(() => subscription.unsubscribe());
    return {
      problems,
      now,
      until: (what: string, ok: () => boolean, ms = 5_000) =>
        until(what, () => (ok() ? true : undefined), ms, () => `services: ${JSON.stringify([...now])}; problems: ${problems.join(' | ')}`, 10),
    };
  }
  const byRename = async (path: string, text: string) => {
    const tmp = join(dirname(path), `.${basename(path)}.tmp`);
    await writeFile(tmp, text);
    await rename(tmp, path);
  };

  it('sees 50 saves by rename in a row, each one, with file-system events alone', async () => {
    const dir = join(root, 'renames');
    await mkdir(dir);
    await writeFile(join(dir, 'svc.yaml'), service('web', 1));
    const s = ports(folderSource({ dir, watches, rescanMs: 0 }));
    await s.until('the first load', () => s.now.get('web') === 1);
    for (let i = 2; i <= 51; i++) {
      await byRename(join(dir, 'svc.yaml'), service('web', i));
      await s.until(`port ${i} after save #${i - 1}`, () => s.now.get('web') === i);
    }
    assert.deepEqual(s.problems, []);
  });

  it('ends on the last of 50 back-to-back saves by rename, and on each of 30 writes in place that follow', async () => {
    const dir = join(root, 'burst');
    await mkdir(dir);
    await writeFile(join(dir, 'svc.yaml'), service('web', 1000));
    const s = ports(folderSource({ dir, watches, rescanMs: 0 }));
    await s.until('the first load', () => s.now.get('web') === 1000);
    for (let i = 1001; i <= 1050; i++) await byRename(join(dir, 'svc.yaml'), service('web', i));
    await s.until('the last save', () => s.now.get('web') === 1050);
    for (let i = 1051; i <= 1080; i++) {
      await writeFile(join(dir, 'svc.yaml'), service('web', i));
      await s.until(`port ${i}`, () => s.now.get('web') === i);
    }
  });

  it('ignores editors\' swap and backup files, and reads the file they save', async () => {
    const dir = join(root, 'editor');
    await mkdir(dir);
    await writeFile(join(dir, 'svc.yaml'), service('web', 1));
    const s = ports(folderSource({ dir, watches, rescanMs: 0 }));
    await s.until('the first load', () => s.now.get('web') === 1);
    // vim: a swap file while editing, a backup, then the new file in place of the old.
    await writeFile(join(dir, '.svc.yaml.swp'), 'not yaml: [');
    await rename(join(dir, 'svc.yaml'), join(dir, '.svc.yaml~'));
    await writeFile(join(dir, 'svc.yaml'), service('web', 2));
    await unlink(join(dir, '.svc.yaml~'));
    await unlink(join(dir, '.svc.yaml.swp'));
    await s.until('the saved file', () => s.now.get('web') === 2);
    assert.deepEqual(s.problems, []);
  });

  it('follows a checkout that replaces the whole folder, and keeps the objects while the folder is gone', async () => {
    const dir = join(root, 'checkout');
    await mkdir(join(dir, 'apps'), { recursive: true });
    await writeFile(join(dir, 'apps', 'a.yaml'), service('a', 1));
    await writeFile(join(dir, 'b.yaml'), service('b', 1));
    const s = ports(folderSource({ dir, watches, rescanMs: 0 }));
    await s.until('the first load', () => s.now.get('a') === 1 && s.now.get('b') === 1);
    await rm(dir, { recursive: true });
    await s.until('the problem', () => s.problems.some((p) => p.includes('cannot list the folder')));
    assert.deepEqual([...s.now].sort(), [['a', 1], ['b', 1]], 'nothing deleted while the folder is missing');
    await mkdir(join(dir, 'apps'), { recursive: true });
    await writeFile(join(dir, 'apps', 'a.yaml'), service('a', 2));
    await writeFile(join(dir, 'c.yaml'), service('c', 2));
    await s.until('the new folder', () => s.now.get('a') === 2 && s.now.get('c') === 2 && !s.now.has('b'));
    // A sub-folder deleted and re-created.
    await rm(join(dir, 'apps'), { recursive: true });
    await s.until('apps gone', () => !s.now.has('a'));
    await mkdir(join(dir, 'apps'));
    await writeFile(join(dir, 'apps', 'a.yaml'), service('a', 3));
    await s.until('apps back', () => s.now.get('a') === 3);
  });

  it('follows a ConfigMap mount: links into ..data, swapped as a whole', async () => {
    const dir = join(root, 'configmap');
    await mkdir(join(dir, '..v1'), { recursive: true });
    await writeFile(join(dir, '..v1', 'svc.yaml'), service('web', 1));
    await symlink('..v1', join(dir, '..data'));
    await symlink('..data/svc.yaml', join(dir, 'svc.yaml'));
    const s = ports(folderSource({ dir, watches, rescanMs: 0 }));
    await s.until('the first load', () => s.now.get('web') === 1);
    for (let v = 2; v <= 6; v++) {
      // What the kubelet does: a new timestamped folder, a new link renamed over ..data, the old folder removed.
      await mkdir(join(dir, `..v${v}`));
      await writeFile(join(dir, `..v${v}`, 'svc.yaml'), service('web', v));
      await symlink(`..v${v}`, join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await rm(join(dir, `..v${v - 1}`), { recursive: true });
      await s.until(`version ${v}`, () => s.now.get('web') === v);
    }
    assert.deepEqual(s.problems, [], 'the ..data folders are not read twice');
  });

  it('rescans periodically, so a change no event reported still arrives', async () => {
    const dir = join(root, 'periodic');
    await mkdir(dir);
    // A hard link from outside the watched tree: writes through it raise no event on this folder.
    const outside = join(root, 'outside.yaml');
    await writeFile(outside, service('x', 1));
    await link(outside, join(dir, 'x.yaml'));
    const s = ports(folderSource({ dir, watches, rescanMs: 200 }));
    await s.until('the first load', () => s.now.get('x') === 1);
    await writeFile(outside, service('x', 2));
    await s.until('the periodic rescan', () => s.now.get('x') === 2, 3_000);
  });

  /**
   * Loads `count` Services from one file into receivers that take `busyMs` for each; says,
   * for each object, whether a timer of 0 set at the first had fired by then (a later turn).
   */
  async function turnsOfOneFile(name: string, count: number, busyMs: number): Promise<boolean[]> {
    const dir = join(root, name);
    await mkdir(dir);
    await writeFile(join(dir, 'all.yaml'), Array.from({ length: count }, (_, i) => service(`s${i}`)).join('---\n'));
    let later = false;
    const turns: boolean[] = [];
    let synced = 0;
    const subscription = folderSource({ dir, watches, follow: false }).subscribe((c) => {
      if (c.type === 'synced') synced++;
      if (c.type !== 'upsert') return;
      if (turns.length === 0) setTimeout(() => (later = true), 0);
      turns.push(later);
      // A slow receiver: garbage collection or a busy core, as a loaded machine has them.
      const start = performance.now();
      while (performance.now() - start < busyMs);
    });
    await until('the load', () => (synced === 2 ? true : undefined), 10_000);
    subscription.unsubscribe();
    return turns;
  }

  it('passes the objects of a small file on in one turn, however slow the receivers are', async () => {
    // A new Service, its EndpointSlice and its Ingress in one file must reach the trigger together.
    const turns = await turnsOfOneFile('one-turn', 3, 15);
    assert.deepEqual(turns, [false, false, false]);
  });

  it('gives the event loop turns while it passes on a large file', async () => {
    const turns = await turnsOfOneFile('sliced', 400, 0.2);
    assert.equal(turns.length, 400);
    assert.equal(turns[0], false);
    assert.equal(turns.at(-1), true, 'a timer ran before the last object');
  });

  it('skips an object larger than the bound, names it, keeps its last version and loads the rest of the file', async () => {
    const dir = join(root, 'large');
    await mkdir(dir);
    const big = (port: number) => `${service('big', port)}  padding: "${'x'.repeat(4096)}"\n`;
    await writeFile(join(dir, 'svc.yaml'), [service('web', 1), service('big', 1)].join('---\n'));
    const s = ports(folderSource({ dir, watches, rescanMs: 0, maxObjectBytes: 2048 }));
    await s.until('the first load', () => s.now.get('web') === 1 && s.now.get('big') === 1);
    await byRename(join(dir, 'svc.yaml'), [service('web', 2), big(2)].join('---\n'));
    await s.until('web changed', () => s.now.get('web') === 2);
    await s.until('the problem', () => s.problems.length > 0);
    assert.match(s.problems[0]!, /^problem svc\.yaml:\d+ Service demo\/big is 0\.0 MiB, more than the 0\.0 MiB an object may be; skipped$/);
    assert.equal(s.now.get('big'), 1, 'the last version stays');
    await byRename(join(dir, 'svc.yaml'), [service('web', 3), service('big', 3)].join('---\n'));
    await s.until('recovered', () => s.now.get('web') === 3 && s.now.get('big') === 3);
  });

  it('does not read a file larger than the bound, and says so once', async () => {
    const dir = join(root, 'hugefile');
    await mkdir(dir);
    await writeFile(join(dir, 'svc.yaml'), service('web', 1));
    const s = ports(folderSource({ dir, watches, rescanMs: 100, maxFileBytes: 1024 }));
    await s.until('the first load', () => s.now.get('web') === 1);
    await byRename(join(dir, 'svc.yaml'), service('web', 2) + `# ${'x'.repeat(2048)}\n`);
    await s.until('the problem', () => s.problems.length > 0);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(s.problems.length, 1, s.problems.join(' | '));
    assert.match(s.problems[0]!, /^problem svc\.yaml: the file is 0\.0 MiB, more than the 0\.0 MiB a manifest file may be; not read/);
    assert.equal(s.now.get('web'), 1);
  });

  describe('with a parse thread', () => {
    const many = (prefix: string, n: number, port = 80) => Array.from({ length: n }, (_, i) => service(`${prefix}-${i}`, port)).join('---\n');
    /** A parser that records the files it is given, and may hold or fail some. */
    function recordingParser(options: { hold?: (file: string) => number; fail?: boolean } = {}) {
      const inner = new ParseWorker();
      const files: string[] = [];
      /** For each file, the files the parser had been given when it answered. */
      const givenBy = new Map<string, number>();
      const parser: ManifestParser = {
        async parse(file, text, maxObjectBytes) {
          files.push(file);
          if (options.fail) throw new Error('the parse thread failed');
          const parsed = await inner.parse(file, text, maxObjectBytes);
          await new Promise((r) => setTimeout(r, options.hold?.(file) ?? 0));
          givenBy.set(file, files.length);
          return parsed;
        },
        close: () => inner.close(),
      };
      return { parser, files, givenBy };
    }

    it('parses a large file read for the first time in the thread, and a change to it here, document by document', async () => {
      const dir = join(root, 'thread');
      await mkdir(dir);
      await writeFile(join(dir, 'big.yaml'), many('svc', 900));
      await writeFile(join(dir, 'small.yaml'), service('web'));
      const { parser, files } = recordingParser();
      const s = ports(folderSource({ dir, watches, rescanMs: 0, parser }));
      await s.until('the first load', () => s.now.size === 901);
      assert.deepEqual(files, ['big.yaml'], 'the small file is parsed here');
      await byRename(join(dir, 'big.yaml'), many('svc', 900).replace('name: svc-7, namespace: demo}\nspec: {ports: [{port: 80', 'name: svc-7, namespace: demo}\nspec: {ports: [{port: 81'));
      await s.until('the change', () => s.now.get('svc-7') === 81);
      assert.deepEqual(files, ['big.yaml'], 'a file read before is parsed here');
      assert.deepEqual(s.problems, []);
    });

    it('passes files on in path order, whichever the thread finishes first', async () => {
      const dir = join(root, 'thread-order');
      await mkdir(dir);
      for (const name of ['a', 'b', 'c']) await writeFile(join(dir, `${name}.yaml`), many(name, 900));
      // The first file comes back last.
      const { parser, files, givenBy } = recordingParser({ hold: (file) => (file === 'a.yaml' ? 300 : 0) });
      const r = recorder(folderSource({ dir, watches, follow: false, parser }));
      const changes = await r.next(2_702, 20_000);
      r.subscription.unsubscribe();
      // Read together, they reach the thread in whatever order their reads end.
      assert.deepEqual([...files].sort(), ['a.yaml', 'b.yaml', 'c.yaml']);
      assert.equal(givenBy.get('a.yaml'), 3, 'the next files were read ahead while the first was parsed');
      const firsts = ['a', 'b', 'c'].map((name) => changes.indexOf(`upsert services ${name}-0`));
      assert.ok(firsts[0]! >= 0 && firsts[0]! < firsts[1]! && firsts[1]! < firsts[2]!, firsts.join(', '));
      assert.deepEqual(changes.slice(-2), ['synced services', 'synced ingresses']);
    });

    it('parses here when the thread fails, and says nothing about it: the objects arrive all the same', async () => {
      const dir = join(root, 'thread-fails');
      await mkdir(dir);
      await writeFile(join(dir, 'big.yaml'), many('svc', 900));
      const { parser, files } = recordingParser({ fail: true });
      const s = ports(folderSource({ dir, watches, rescanMs: 0, parser }));
      await s.until('the first load', () => s.now.size === 900);
      assert.deepEqual(files, ['big.yaml']);
      assert.deepEqual(s.problems, []);
    });
  });
});
