/**
 * Bad input under `haprx local`: a 10 MB object (with the heap cap the image runs
 * with), a manifest that is not YAML, and a template edit that breaks rendering. haprx
 * must stay up, keep serving the last good configuration, name the file, object or
 * template line in its log, let everything else go on where it can, and take the fix
 * by itself.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

describe('local mode: bad input (real haproxy)', () => {
  const haprx = new LocalHaprx();

  before(async () => {
    const manifests = {
      'services.yaml': [manifest.service('a'), manifest.service('b')].join('---\n'),
      'stable.yaml': manifest.ingress('stable', 'stable.test', 'a'),
    };
    // The shipped scheduling and the image's heap cap; drift off, so that every
    // recovery below comes from the fix itself.
    await haprx.start({ manifests, echoes: ['e1', 'e2'], settings: { driftInterval: '0s' }, nodeOptions: ['--max-old-space-size=320'] });
    await writeFile(join(haprx.manifests, 'slices.yaml'), [manifest.slice('a', 'a', haprx.echo.e1!.port), manifest.slice('b', 'b', haprx.echo.e2!.port)].join('---\n'));
    await haprx.served('stable.test', 'e1');
  });

  after(() => haprx.stop());

  it('skips a 10 MB object, names it, goes on with the rest, and takes it once it is fixed', async (t) => {
    const traffic = haprx.traffic('stable.test', 'e1');
    const mark = haprx.logs.length;
    const huge = 'x'.repeat(10 * 1024 * 1024);
    await writeFile(join(haprx.manifests, 'big.yaml'), [manifest.ingress('big', 'big.test', 'b', `, annotations: {padding: "${huge}"}`), manifest.ingress('beside', 'beside.test', 'b')].join('---\n'));
    // A file this large may be read while it is still being written: wait for the whole of it.
    const problem = await haprx.until('the log line', () => haprx.logged(mark, /^big\.yaml:1: .* 10\.0 MiB/));
    assert.match(problem.msg, /^big\.yaml:1: Ingress shop\/big is 10\.0 MiB, more than the 1\.5 MiB an object may be; skipped$/);
    // The rest of the file, and other files, go on.
    await haprx.served('beside.test', 'e2');
    await writeFile(join(haprx.manifests, 'other.yaml'), manifest.ingress('other', 'other.test', 'b'));
    await haprx.served('other.test', 'e2');
    assert.equal(await haprx.body('big.test'), 'status 404');
    const fixed = Date.now();
    await writeFile(join(haprx.manifests, 'big.yaml'), manifest.ingress('big', 'big.test', 'b'));
    await haprx.served('big.test', 'e2');
    const recovered = Date.now() - fixed;
    const result = await traffic.stop();
    t.diagnostic(`10 MB object: live ${recovered} ms after the fix; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
    assert.ok(haprx.alive, 'haprx is still running');
  });

  it('keeps what a manifest that is not YAML held, names its line, and takes the fix', async (t) => {
    const traffic = haprx.traffic('stable.test', 'e1');
    await writeFile(join(haprx.manifests, 'shop.yaml'), manifest.ingress('shop', 'shop.test', 'a'));
    await haprx.served('shop.test', 'e1');
    const mark = haprx.logs.length;
    await writeFile(join(haprx.manifests, 'shop.yaml'), 'apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: shop, namespace: shop\nspec: [\n');
    const problem = await haprx.until('the log line', () => haprx.logged(mark, /^shop\.yaml:\d+: /));
    assert.match(problem.msg, /^shop\.yaml:[34]: /);
    assert.equal(await haprx.body('shop.test'), 'e1', 'what the file held stays');
    await writeFile(join(haprx.manifests, 'more.yaml'), manifest.ingress('more', 'more.test', 'b'));
    await haprx.served('more.test', 'e2');
    const fixed = Date.now();
    await writeFile(join(haprx.manifests, 'shop.yaml'), manifest.ingress('shop', 'shop.test', 'b'));
    await haprx.served('shop.test', 'e2');
    const recovered = Date.now() - fixed;
    const result = await traffic.stop();
    t.diagnostic(`manifest that is not YAML: live ${recovered} ms after the fix; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
  });

  it('keeps the last configuration while a template edit breaks rendering, names the line, and takes the fix', async (t) => {
    const traffic = haprx.traffic('stable.test', 'e1');
    const main = join(haprx.templates, 'haproxy.cfg');
    const good = await readFile(main, 'utf8');
    const mark = haprx.logs.length;
    await writeFile(main, good.replace(/^defaults$/m, 'defaults\n  # <%= values.missing.deeper %>'));
    const failed = await haprx.until('the log line', () => haprx.logged(mark, /^render failed at /));
    assert.match(failed.msg, /^render failed at haproxy\.cfg:\d+: .*deeper/);
    // A change in the cluster waits for the templates to work again.
    await writeFile(join(haprx.manifests, 'waiting.yaml'), manifest.ingress('waiting', 'waiting.test', 'b'));
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await haprx.body('waiting.test'), 'status 404');
    assert.equal(await haprx.body('shop.test'), 'e2', 'the last configuration serves');
    const fixed = Date.now();
    await writeFile(main, good);
    await haprx.served('waiting.test', 'e2');
    const recovered = Date.now() - fixed;
    const result = await traffic.stop();
    t.diagnostic(`template edit that breaks rendering: live ${recovered} ms after the fix; ${result.failed} of ${result.sent} requests failed`);
    assert.equal(result.failed, 0, result.failures.slice(0, 5).join(', '));
    assert.ok(haprx.alive);
  });
});
