import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type Observable, filter, firstValueFrom, take, toArray, timeout } from 'rxjs';
import type { ResourceChange } from '../../src/k8s/resource.ts';
import { folderSource } from '../../src/local/folder-source.ts';
import { compileWatches } from '../../src/local/manifests.ts';

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
