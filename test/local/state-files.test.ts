import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { OWNED_FILES, ownedFiles, writeStateFiles } from '../../src/local/state-files.ts';
import { sealRendered } from '../../src/templating/rendered.ts';

const rendered = (maps: Record<string, string>, certs: Record<string, string> = {}) => sealRendered({ main: 'global\n', maps, files: {}, certs });
const list = async (dir: string) => (await readdir(dir, { recursive: true })).map(String).sort();

describe('writeStateFiles', async () => {
  const root = await mkdtemp(join(tmpdir(), 'haprx-state-'));
  after(() => rm(root, { recursive: true, force: true }));

  it('removes the files it wrote before and no longer renders, and nothing else', async () => {
    const dir = join(root, 'owned');
    await mkdir(join(dir, 'ssl'), { recursive: true });
    await mkdir(join(dir, 'maps'));
    // The user's own files, there before haprx.
    await writeFile(join(dir, 'ssl', 'site.key'), 'KEY');
    await writeFile(join(dir, 'maps', 'mine.map'), 'x y\n');
    await writeFile(join(dir, 'notes.txt'), 'n');
    await writeStateFiles(dir, rendered({ 'a.map': 'a\n', 'b.map': 'b\n' }, { 'shop.pem': 'PEM' }));
    assert.deepEqual([...(await ownedFiles(dir))].sort(), ['haproxy.cfg', 'maps/a.map', 'maps/b.map', 'ssl/shop.pem']);
    assert.equal((await stat(join(dir, 'ssl', 'shop.pem'))).mode & 0o777, 0o600);

    await writeStateFiles(dir, rendered({ 'b.map': 'b2\n' }));
    assert.deepEqual(await list(dir), [OWNED_FILES, 'general', 'haproxy.cfg', 'maps', 'maps/b.map', 'maps/mine.map', 'notes.txt', 'ssl', 'ssl/site.key']);
    assert.equal(await readFile(join(dir, 'ssl', 'site.key'), 'utf8'), 'KEY');
    assert.equal(await readFile(join(dir, 'maps', 'b.map'), 'utf8'), 'b2\n');
    assert.deepEqual([...(await ownedFiles(dir))].sort(), ['haproxy.cfg', 'maps/b.map']);
  });

  it('given the files the folder holds now, writes only those whose content changed', async () => {
    const dir = join(root, 'changed-only');
    const before = rendered({ 'a.map': 'a\n', 'b.map': 'b\n' });
    await writeStateFiles(dir, before);
    // Each file is replaced by a rename: one written again is another inode.
    const inodes = async () => Object.fromEntries(await Promise.all(['haproxy.cfg', 'maps/a.map', 'maps/b.map'].map(async (f) => [f, (await stat(join(dir, f))).ino] as const)));
    const first = await inodes();
    await writeStateFiles(dir, rendered({ 'a.map': 'a\n', 'b.map': 'b2\n', 'c.map': 'c\n' }), before);
    const second = await inodes();
    assert.equal(second['maps/a.map'], first['maps/a.map'], 'a.map is unchanged: not written again');
    assert.equal(second['haproxy.cfg'], first['haproxy.cfg'], 'haproxy.cfg is unchanged: not written again');
    assert.notEqual(second['maps/b.map'], first['maps/b.map'], 'b.map changed: written');
    assert.equal(await readFile(join(dir, 'maps', 'b.map'), 'utf8'), 'b2\n');
    assert.equal(await readFile(join(dir, 'maps', 'c.map'), 'utf8'), 'c\n');
    assert.deepEqual([...(await ownedFiles(dir))].sort(), ['haproxy.cfg', 'maps/a.map', 'maps/b.map', 'maps/c.map']);
  });

  it('ignores a list of owned files that names anything outside its folders', async () => {
    const dir = join(root, 'hostile');
    await mkdir(dir);
    await writeFile(join(root, 'outside'), 'keep');
    await writeFile(join(dir, OWNED_FILES), JSON.stringify({ files: ['../outside', 'maps/../../outside', 'ssl/..', '/etc/passwd', 'maps/ok.map', 42] }));
    assert.deepEqual([...(await ownedFiles(dir))], ['maps/ok.map']);
    await writeStateFiles(dir, rendered({}));
    assert.equal(await readFile(join(root, 'outside'), 'utf8'), 'keep');
  });

  it('reads a missing or broken list as owning nothing', async () => {
    const dir = join(root, 'broken');
    await mkdir(join(dir, 'maps'), { recursive: true });
    await writeFile(join(dir, 'maps', 'old.map'), 'o\n');
    await writeFile(join(dir, OWNED_FILES), '{not json');
    await writeStateFiles(dir, rendered({}));
    assert.deepEqual(await list(join(dir, 'maps')), ['old.map']);
  });
});
