import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { templateDirSource } from '../../src/config/template-dir-source.ts';
import type { RawConfig } from '../../src/config/template-dir.ts';
import { until } from '../support/until.ts';

/** The main template of each configuration read, or the error. */
function record(dir: string, options: Parameters<typeof templateDirSource>[1]) {
  const seen: string[] = [];
  const subscription = templateDirSource(dir, options).subscribe((raw: RawConfig) => {
    seen.push(raw.ok ? String((raw.raw as { templates: Record<string, unknown> }).templates['haproxy.cfg']) : `error ${raw.path}: ${raw.message}`);
  });
  after(() => subscription.unsubscribe());
  return {
    seen,
    until: (what: string, ok: (last: string | undefined) => boolean) => until(what, () => (ok(seen.at(-1)) ? true : undefined), 5_000, () => seen.join(' | '), 10),
  };
}

describe('templateDirSource', async () => {
  const root = await mkdtemp(join(tmpdir(), 'haprx-templates-'));
  after(() => rm(root, { recursive: true, force: true }));

  it('reads 50 saves by rename in a row, each one, and nothing when the content did not change', async () => {
    const dir = join(root, 'renames');
    await mkdir(join(dir, 'maps'), { recursive: true });
    await writeFile(join(dir, 'haproxy.cfg'), '# v0\n');
    const r = record(dir, { rescanMs: 0, settleMs: 20 });
    await r.until('the first read', (last) => last === '# v0\n');
    for (let i = 1; i <= 50; i++) {
      await writeFile(join(dir, '.haproxy.cfg.tmp'), `# v${i}\n`);
      await rename(join(dir, '.haproxy.cfg.tmp'), join(dir, 'haproxy.cfg'));
      await r.until(`save #${i}`, (last) => last === `# v${i}\n`);
    }
    assert.equal(r.seen.length, 51, 'one configuration per save');
    // The same bytes written again, and a file outside the templates' folders: no new configuration.
    await writeFile(join(dir, 'haproxy.cfg'), '# v50\n');
    await writeFile(join(dir, 'README'), 'notes');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(r.seen.length, 51);
  });

  it('sees a map template saved by rename, and a folder replaced as a whole', async () => {
    const dir = join(root, 'checkout');
    await mkdir(join(dir, 'maps'), { recursive: true });
    await writeFile(join(dir, 'haproxy.cfg'), '# a\n');
    await writeFile(join(dir, 'maps', 'hosts.map'), 'a\n');
    const maps: string[] = [];
    const subscription = templateDirSource(dir, { rescanMs: 0, settleMs: 20 }).subscribe((raw) => {
      if (raw.ok) maps.push(String((raw.raw as { templates: { maps?: Record<string, string> } }).templates.maps?.['hosts.map']));
    });
    after(() => subscription.unsubscribe());
    await until('the first read', () => (maps.at(-1) === 'a\n' ? true : undefined));
    await writeFile(join(dir, 'maps', '.hosts.map.tmp'), 'b\n');
    await rename(join(dir, 'maps', '.hosts.map.tmp'), join(dir, 'maps', 'hosts.map'));
    await until('the renamed map', () => (maps.at(-1) === 'b\n' ? true : undefined));
    await rm(join(dir, 'maps'), { recursive: true });
    await mkdir(join(dir, 'maps'));
    await writeFile(join(dir, 'maps', 'hosts.map'), 'c\n');
    await until('the re-created folder', () => (maps.at(-1) === 'c\n' ? true : undefined), 5_000, () => maps.join(' | '));
  });

  it('reports a deleted template folder, and reads it again once it is back', async () => {
    const dir = join(root, 'deleted');
    await mkdir(dir);
    await writeFile(join(dir, 'haproxy.cfg'), '# one\n');
    const r = record(dir, { rescanMs: 0, settleMs: 20 });
    await r.until('the first read', (last) => last === '# one\n');
    await rm(dir, { recursive: true });
    await r.until('the error', (last) => last?.startsWith('error haproxy.cfg: ') === true);
    await mkdir(dir);
    await writeFile(join(dir, 'haproxy.cfg'), '# two\n');
    await r.until('the folder back', (last) => last === '# two\n');
  });

  it('follows a ConfigMap mount whose ..data link is swapped', async () => {
    const dir = join(root, 'configmap');
    await mkdir(join(dir, '..v1'), { recursive: true });
    await writeFile(join(dir, '..v1', 'haproxy.cfg'), '# 1\n');
    await symlink('..v1', join(dir, '..data'));
    await symlink('..data/haproxy.cfg', join(dir, 'haproxy.cfg'));
    const r = record(dir, { rescanMs: 0, settleMs: 20 });
    await r.until('the first read', (last) => last === '# 1\n');
    for (let v = 2; v <= 5; v++) {
      await mkdir(join(dir, `..v${v}`));
      await writeFile(join(dir, `..v${v}`, 'haproxy.cfg'), `# ${v}\n`);
      await symlink(`..v${v}`, join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await rm(join(dir, `..v${v - 1}`), { recursive: true });
      await r.until(`version ${v}`, (last) => last === `# ${v}\n`);
    }
  });
});
