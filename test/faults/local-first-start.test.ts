/**
 * The first configuration under `haprx local` is checked by starting haproxy on it
 * (docs/local.md). When that start fails, haprx must say why as it would have without
 * it (a refused configuration with its file and line, a start that failed for another
 * reason as a failed deployment), start nothing that haproxy refused, and start haproxy
 * by itself once the cause is gone.
 */
import assert from 'node:assert/strict';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { freePort } from '../support/ports.ts';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

const manifests = () => ({
  'services.yaml': manifest.service('a'),
  'shop.yaml': manifest.ingress('shop', 'shop.test', 'a'),
});

describe('local mode: the first configuration (real haproxy)', () => {
  let haprx: LocalHaprx;
  afterEach(() => haprx.stop());

  it('reports a first configuration haproxy refuses with its file and line, starts no haproxy, and starts the fix', async (t) => {
    haprx = new LocalHaprx();
    await haprx.start({
      manifests: manifests(),
      echoes: ['e1'],
      editMain: (main) => main.replace(/^defaults$/m, 'defaults\n  timeout client not-a-duration'),
      awaitDeployment: false,
    });
    await writeFile(join(haprx.manifests, 'slices.yaml'), manifest.slice('a', 'a', haprx.echo.e1!.port));
    const refused = await haprx.until('the refusal', () => haprx.logged(0, /^configuration refused by haproxy/));
    // haproxy -c's verdict, naming the line; the state folder keeps the refused files to look at.
    const line = /haproxy\.cfg:(\d+): .*'timeout client'/.exec(refused.msg);
    assert.ok(line, refused.msg);
    const kept = (await readFile(join(haprx.stateDir, 'haproxy.cfg'), 'utf8')).split('\n');
    assert.equal(kept[Number(line[1]) - 1]?.trim(), 'timeout client not-a-duration');
    assert.equal(await haprx.body('shop.test'), undefined, 'no haproxy listens');
    await assert.rejects(haprx.showProc(), 'no haproxy master runs');
    assert.equal(haprx.logged(0, /^deployed to local/), undefined);

    const main = join(haprx.templates, 'haproxy.cfg');
    const fixed = Date.now();
    // Saved by rename, as editors save.
    await writeFile(`${main}.tmp`, (await readFile(main, 'utf8')).replace('  timeout client not-a-duration\n', ''));
    await rename(`${main}.tmp`, main);
    await haprx.served('shop.test', 'e1');
    t.diagnostic(`refused first configuration: served ${Date.now() - fixed} ms after the fix`);
    // The start served before the deployment that reports it ended.
    const deployed = await haprx.until('the deployment', () => haprx.logged(0, /^deployed to local/));
    assert.match(deployed.msg, /reloaded/);
    assert.equal((await haprx.showProc())?.reloads, 0, 'haproxy started once, on the fix, and was not reloaded');
  });

  it('reports a first start that fails for another reason (its port taken) as a failed deployment, and starts haproxy once the port is free', async (t) => {
    const port = await freePort();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    haprx = new LocalHaprx();
    try {
      await haprx.start({ manifests: manifests(), echoes: ['e1'], port, awaitDeployment: false });
      await writeFile(join(haprx.manifests, 'slices.yaml'), manifest.slice('a', 'a', haprx.echo.e1!.port));
      const failed = await haprx.until('the failed start', () => haprx.logged(0, /haproxy did not start/), 30_000);
      assert.match(failed.msg, /cannot bind socket|Address already in use/i);
      assert.equal(haprx.logged(0, /^configuration refused by haproxy/), undefined, 'not reported as a refusal');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    const freed = Date.now();
    await haprx.served('shop.test', 'e1', 30_000);
    t.diagnostic(`first start with its port taken: served ${Date.now() - freed} ms after the port was freed`);
  });
});
