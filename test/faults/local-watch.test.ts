/**
 * Faults in how files change under `haprx local`: saves by rename (manifests and
 * templates, 50 in a row, each one must go live), a manifests folder and a template
 * folder deleted and re-created, and a `git checkout` of the manifests folder. Traffic
 * to a route no fault touches runs throughout and must not see one failure.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

const run = promisify(execFile);
/** A line of the shipped frontends: test edits go right after it. */
const ANCHOR = '  http-request set-var(txn.host) req.hdr(host),field(1,:),lower\n';

/** Writes through a temp file and a rename, as editors, kubectl and git do. */
async function saveByRename(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

describe('local mode: file faults (real haproxy)', () => {
  const haprx = new LocalHaprx();
  const services = () =>
    [manifest.service('a'), manifest.service('b'), manifest.slice('a', 'a', haprx.echo.e1!.port), manifest.slice('b', 'b', haprx.echo.e2!.port)].join('---\n');

  before(async () => {
    // Fast scheduling, so that 50 edits in a row take seconds; drift off, so nothing
    // below can be recovered by the periodic redeploy.
    const manifests = { 'stable.yaml': manifest.ingress('stable', 'stable.test', 'a'), 'shop.yaml': manifest.ingress('shop', 'shop.test', 'a') };
    await haprx.start({ manifests, echoes: ['e1', 'e2'], settings: { debounce: '50ms', debounceMaxWait: '200ms', minDeployInterval: '100ms', driftInterval: '0s' } });
    await writeFile(join(haprx.manifests, 'services.yaml'), services());
    await haprx.served('stable.test', 'e1');
  });

  after(() => haprx.stop());

  it('takes 50 saves by rename of a manifest in a row, each one live', async (t) => {
    const traffic = haprx.traffic('stable.test', 'e1');
    const times: number[] = [];
    for (let i = 1; i <= 50; i++) {
      const path = `/v${i}`;
      await saveByRename(join(haprx.manifests, 'shop.yaml'), manifest.ingress('shop', 'shop.test', i % 2 ? 'b' : 'a').replace('path: /,', `path: ${path},`));
      times.push(await haprx.served('shop.test', i % 2 ? 'e2' : 'e1', 10_000, path));
    }
    const result = await traffic.stop();
    times.sort((a, b) => a - b);
    t.diagnostic(`50 manifest saves by rename: each live after p50 ${times[25]} ms, max ${times[49]} ms; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });

  it('takes 50 saves by rename of a template in a row, each one live', async (t) => {
    const main = join(haprx.templates, 'haproxy.cfg');
    const original = await readFile(main, 'utf8');
    assert.ok(original.includes(ANCHOR));
    const traffic = haprx.traffic('stable.test', 'e1');
    const times: number[] = [];
    for (let i = 1; i <= 50; i++) {
      await saveByRename(main, original.replace(ANCHOR, `${ANCHOR}  http-request return status 200 content-type text/plain string edit-${i} if { path /edit }\n`));
      times.push(await haprx.served('any.test', `edit-${i}`, 10_000, '/edit'));
    }
    await saveByRename(main, original);
    await haprx.served('any.test', 'status 404', 10_000, '/edit');
    const result = await traffic.stop();
    times.sort((a, b) => a - b);
    t.diagnostic(`50 template saves by rename: each live after p50 ${times[25]} ms, max ${times[49]} ms; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });

  it('keeps serving while the manifests folder is gone, and takes it when it is back', async (t) => {
    const traffic = haprx.traffic('stable.test', 'e1');
    const mark = haprx.logs.length;
    await rm(haprx.manifests, { recursive: true });
    const problem = await haprx.until('the log line', () => haprx.logged(mark, /cannot list the folder/));
    assert.match(problem.msg, /manifests: cannot list the folder: .*ENOENT.*its objects stay as they were/);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(await haprx.body('shop.test', '/v50'), 'e1', 'the last configuration still serves');
    const back = Date.now();
    await mkdir(haprx.manifests);
    await writeFile(join(haprx.manifests, 'services.yaml'), services());
    await writeFile(join(haprx.manifests, 'stable.yaml'), manifest.ingress('stable', 'stable.test', 'a'));
    await writeFile(join(haprx.manifests, 'shop.yaml'), manifest.ingress('shop', 'shop.test', 'b'));
    await haprx.served('shop.test', 'e2');
    const recovered = Date.now() - back;
    const result = await traffic.stop();
    t.diagnostic(`manifests folder deleted and re-created: live ${recovered} ms after it was back; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });

  it('keeps serving while the template folder is gone, and takes it when it is back', async (t) => {
    const traffic = haprx.traffic('stable.test', 'e1');
    const saved = `${haprx.templates}.saved`;
    await cp(haprx.templates, saved, { recursive: true });
    const mark = haprx.logs.length;
    await rm(haprx.templates, { recursive: true });
    const rejected = await haprx.until('the log line', () => haprx.logged(mark, /controller configuration rejected/));
    assert.match(rejected.msg, /the previous one keeps running: haproxy\.cfg: .*haproxy\.cfg is missing/);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(await haprx.body('shop.test'), 'e2', 'the last configuration still serves');
    // Back, with a change in it.
    const main = join(saved, 'haproxy.cfg');
    await writeFile(main, (await readFile(main, 'utf8')).replace(ANCHOR, `${ANCHOR}  http-request return status 200 content-type text/plain string back if { path /back }\n`));
    const back = Date.now();
    await rename(saved, haprx.templates);
    await haprx.served('any.test', 'back', 15_000, '/back');
    const recovered = Date.now() - back;
    const result = await traffic.stop();
    t.diagnostic(`template folder deleted and re-created: live ${recovered} ms after it was back; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });

  it('follows a git checkout of the manifests folder, back and forth', async (t) => {
    const git = (...args: string[]) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd: haprx.manifests });
    await git('init', '-q');
    await git('add', '-A');
    await git('commit', '-qm', 'main');
    await git('checkout', '-qb', 'next');
    await writeFile(join(haprx.manifests, 'shop.yaml'), manifest.ingress('shop', 'shop.test', 'a'));
    await writeFile(join(haprx.manifests, 'extra.yaml'), manifest.ingress('extra', 'extra.test', 'b'));
    await git('add', '-A');
    await git('commit', '-qm', 'next');
    await haprx.served('extra.test', 'e2');
    const traffic = haprx.traffic('stable.test', 'e1');
    const times: number[] = [];
    for (let i = 0; i < 6; i++) {
      const started = Date.now();
      await git('checkout', '-q', i % 2 ? 'next' : 'main');
      await haprx.served('shop.test', i % 2 ? 'e1' : 'e2');
      await haprx.served('extra.test', i % 2 ? 'e2' : 'status 404');
      times.push(Date.now() - started);
    }
    const result = await traffic.stop();
    t.diagnostic(`6 git checkouts: each live within ${Math.max(...times)} ms; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
    assert.ok(haprx.alive);
  });
});
