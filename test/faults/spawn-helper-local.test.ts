/**
 * The spawn helper of `haprx local` (the small process that starts `haproxy -c`) killed
 * while it runs a check, and killed while idle: the check could not run, so it is run
 * again through a new helper; the change goes live and haprx stays up.
 */
import assert from 'node:assert/strict';
import { access, chmod, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

/** The spawn helper among haprx's child processes, read from /proc. */
async function helperPid(parent: number): Promise<number | undefined> {
  for (const task of await readdir(`/proc/${parent}/task`)) {
    const children = (await readFile(`/proc/${parent}/task/${task}/children`, 'utf8').catch(() => '')).split(' ').filter(Boolean);
    for (const child of children) {
      const cmdline = await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes('spawn-helper-process')) return Number(child);
    }
  }
  return undefined;
}

const exists = (path: string) => access(path).then(() => true, () => false);

describe('local mode: the spawn helper killed (real haproxy)', () => {
  const haprx = new LocalHaprx();
  let bin = '';
  /** While this file exists, haproxy -c waits 3 s first (after writing `checking`). */
  let slow = '';
  let checking = '';

  before(async () => {
    bin = await mkdtemp(join(tmpdir(), 'haprx-bin-'));
    slow = join(bin, 'slow');
    checking = join(bin, 'checking');
    const wrapper = join(bin, 'haproxy');
    await writeFile(wrapper, `#!/bin/sh\nif [ "$1" = "-c" ] && [ -e '${slow}' ]; then touch '${checking}'; sleep 3; fi\nexec haproxy "$@"\n`);
    await chmod(wrapper, 0o755);
    const manifests = {
      'services.yaml': [manifest.service('a'), manifest.service('b')].join('---\n'),
      'stable.yaml': manifest.ingress('stable', 'stable.test', 'a'),
    };
    await haprx.start({ manifests, echoes: ['e1', 'e2'], settings: { driftInterval: '0s' }, haproxyBin: wrapper });
    await writeFile(join(haprx.manifests, 'slices.yaml'), [manifest.slice('a', 'a', haprx.echo.e1!.port), manifest.slice('b', 'b', haprx.echo.e2!.port)].join('---\n'));
    await haprx.served('stable.test', 'e1');
  });

  after(async () => {
    await haprx.stop();
    await rm(bin, { recursive: true, force: true });
  });

  it('runs haproxy -c from a helper process of its own', async () => {
    const helper = await haprx.until('the spawn helper', () => helperPid(haprx.pid!));
    assert.notEqual(helper, haprx.pid);
  });

  it('killed during a check: the check runs again through a new helper and the change goes live', async () => {
    const first = await haprx.until('the spawn helper', () => helperPid(haprx.pid!));
    const mark = haprx.logs.length;
    await writeFile(slow, '');
    // A new backend: it can go live only through a configuration that passed haproxy -c.
    await writeFile(join(haprx.manifests, 'shop.yaml'), [manifest.service('c'), manifest.slice('c', 'c', haprx.echo.e2!.port), manifest.ingress('shop', 'shop.test', 'c')].join('---\n'));
    await haprx.until('a check to start', async () => ((await exists(checking)) ? true : undefined));
    process.kill(first, 'SIGKILL');
    await rm(slow);
    await haprx.served('shop.test', 'e2');
    await haprx.until('the log line', () => haprx.logged(mark, /^the spawn helper was killed by SIGKILL; the next check starts another$/), 2_000);
    const second = await haprx.until('a new spawn helper', () => helperPid(haprx.pid!));
    assert.notEqual(second, first);
    assert.equal(await haprx.body('stable.test'), 'e1');
    assert.ok(haprx.alive, 'haprx is still running');
  });

  it('killed while idle: the next change starts another and goes live', async () => {
    const first = await haprx.until('the spawn helper', () => helperPid(haprx.pid!));
    process.kill(first, 'SIGKILL');
    await writeFile(join(haprx.manifests, 'more.yaml'), manifest.ingress('more', 'more.test', 'a'));
    await haprx.served('more.test', 'e1');
    // The new host goes live on the fast path; the check that starts a new helper comes with the
    // full render that confirms it, paced up to 10 s (confirmMaxWait) after it.
    const second = await haprx.until('a new spawn helper', () => helperPid(haprx.pid!), 30_000);
    assert.notEqual(second, first);
    assert.ok(haprx.alive, 'haprx is still running');
  });
});
