/**
 * Faults of the inputs, against `haprx local` with the shipped templates and a real
 * haproxy: an object of the wrong shape, a template typo that throws for every object,
 * and a JSONPath typo in the controller configuration. Each time the process stays up, the last good configuration keeps
 * serving real HTTP, every other change still goes live, the log names the cause, and
 * fixing the cause is enough to recover.
 */
import assert from 'node:assert/strict';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalHaprx, manifest } from '../support/local-haprx.ts';

/** Writes as editors do: a temporary file renamed over the target. */
async function save(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

describe('faults: one bad object, one bad configuration path (haprx local)', () => {
  const haprx = new LocalHaprx();

  before(async () => {
    await haprx.start({
      echoes: ['web', 'api', 'docs'],
      settings: { debounce: '100ms', debounceMaxWait: '500ms', minDeployInterval: '200ms' },
      manifests: {
        'services.yaml': [manifest.service('web'), manifest.service('api'), manifest.service('docs')].join('---\n'),
        'shop.yaml': manifest.ingress('shop', 'shop.test', 'web'),
      },
    });
  });

  after(() => haprx.stop());

  it('serves every other change while an object of the wrong shape is skipped with a warning naming it, and serves the object once it is fixed', async (t) => {
    // The echo backends' ports are known once haprx runs: their EndpointSlices come now.
    await save(join(haprx.manifests, 'slices.yaml'), [manifest.slice('web-1', 'web', haprx.echo.web!.port), manifest.slice('api-1', 'api', haprx.echo.api!.port), manifest.slice('docs-1', 'docs', haprx.echo.docs!.port)].join('---\n'));
    await haprx.served('shop.test', 'web');
    const traffic = haprx.traffic('shop.test', 'web');
    t.after(() => traffic.stop());

    const mark = haprx.logs.length;
    const broken = Date.now();
    await save(join(haprx.manifests, 'bad.yaml'), manifest.ingress('bad', 'bad.test', 'docs').replace(/rules:\n[\s\S]*$/, 'rules: "oops"\n'));
    const warned = await haprx.until('a warning naming the bad Ingress', () => haprx.logged(mark, /Ingress shop\/bad: skipped: spec\.rules must be a list/));
    assert.equal(warned.level, 40, 'logged as a warning');
    t.diagnostic(`warning logged ${Date.now() - broken} ms after the bad object was saved: ${warned.msg}`);
    assert.equal(await haprx.body('bad.test'), 'status 404', 'nothing of the bad Ingress is served');

    // While it is there, other changes go live: a new Ingress in a file of its own, and one beside an existing one.
    const added = Date.now();
    await save(join(haprx.manifests, 'api.yaml'), manifest.ingress('api', 'api.test', 'api'));
    await haprx.served('api.test', 'api');
    t.diagnostic(`a new Ingress beside the bad object served after ${Date.now() - added} ms`);
    await save(join(haprx.manifests, 'shop.yaml'), `${manifest.ingress('shop', 'shop.test', 'web')}---\n${manifest.ingress('shop-docs', 'docs.test', 'docs')}`);
    await haprx.served('docs.test', 'docs');

    // Fixed, it is served, with no warning left about it.
    const fixedAt = Date.now();
    const beforeFix = haprx.logs.length;
    await save(join(haprx.manifests, 'bad.yaml'), manifest.ingress('bad', 'bad.test', 'docs'));
    await haprx.served('bad.test', 'docs');
    const recovery = Date.now() - fixedAt;
    t.diagnostic(`time to recover: the fixed object served ${recovery} ms after it was saved`);
    assert.ok(recovery < 10_000, `${recovery} ms`);
    assert.equal(haprx.logged(beforeFix, /skipping what is invalid: .*Ingress shop\/bad/), undefined, 'no warning about it any more');

    // A second slice of the api Service with endpoints of the wrong shape: named, and api keeps its servers.
    const sliceMark = haprx.logs.length;
    await save(join(haprx.manifests, 'api-2.yaml'), manifest.slice('api-2', 'api', haprx.echo.api!.port).replace(/endpoints:\n[\s\S]*$/, 'endpoints: {a: 1}\n'));
    await haprx.until('a warning naming the bad slice', () => haprx.logged(sliceMark, /EndpointSlice shop\/api-2: skipped: endpoints must be a list/));
    assert.equal(await haprx.body('api.test'), 'api');

    const { sent, failed, failures } = await traffic.stop();
    t.diagnostic(`${sent} requests to an unrelated host meanwhile, ${failed} failed`);
    assert.deepEqual(failures, [], 'the unrelated host never failed');
    assert.ok(sent > 20);
    assert.ok(haprx.alive);
  });

  it('fails the render on a template typo that throws for every Ingress, rather than deploying a configuration without them, and takes the fix', async (t) => {
    const file = join(haprx.templates, 'snippets', 'ingress-routes');
    const good = await readFile(file, 'utf8');
    const typo = good.replace("h.list(ing.spec?.rules, 'spec.rules')", "h.list(ing.spce.rules, 'spec.rules')");
    assert.notEqual(typo, good, 'the shipped ingress model reads spec.rules through h.list');
    const line = typo.slice(0, typo.indexOf('ing.spce.rules')).split('\n').length;
    const traffic = haprx.traffic('shop.test', 'web');
    t.after(() => traffic.stop());

    const mark = haprx.logs.length;
    const savedAt = Date.now();
    await save(file, typo);
    const failed = await haprx.until('the render to fail', () => haprx.logged(mark, /^render failed at /));
    t.diagnostic(`render failed ${Date.now() - savedAt} ms after the typo was saved: ${failed.msg}`);
    assert.match(failed.msg, new RegExp(`^render failed at snippets/ingress-routes:${line}: TypeError: Cannot read properties of undefined \\(reading 'rules'\\), thrown for every Ingress read there \\(\\d+ of \\d+: shop/api, shop/bad, shop/shop, …\\): a fault of the template`));
    assert.equal(haprx.logged(mark, /^deployed to local/), undefined, 'nothing deployed');
    assert.equal(haprx.logged(mark, /skipping what is invalid/), undefined, 'no Ingress reported as skipped');

    // The last good configuration serves every host; a change waits for the templates to work again.
    await save(join(haprx.manifests, 'later.yaml'), manifest.ingress('later', 'later.test', 'api'));
    await haprx.until('the change to be rendered and fail too', () => haprx.logs.slice(mark).filter((l) => /^render failed at /.test(l.msg)).length >= 2 ? true : undefined);
    assert.equal(await haprx.body('later.test'), 'status 404');
    for (const [host, backend] of [['shop.test', 'web'], ['api.test', 'api'], ['docs.test', 'docs'], ['bad.test', 'docs']] as const) assert.equal(await haprx.body(host), backend, host);
    t.diagnostic(`/readyz while the templates are broken: ${(await haprx.health('/readyz')).status}`);

    const fixedAt = Date.now();
    await save(file, good);
    await haprx.served('later.test', 'api');
    t.diagnostic(`time to recover: the change waiting served ${Date.now() - fixedAt} ms after the fix`);
    const { sent, failures } = await traffic.stop();
    t.diagnostic(`${sent} requests meanwhile, ${failures.length} failed`);
    assert.deepEqual(failures, []);
    assert.ok(sent > 20);
    assert.ok(haprx.alive);
    await rm(join(haprx.manifests, 'later.yaml'));
  });

  it('rejects a JSONPath typo in indexBy naming the field, stays up, keeps serving and taking changes, and recovers once it is fixed', async (t) => {
    const file = join(haprx.templates, 'haprx.yaml');
    const good = await readFile(file, 'utf8');
    const typo = good.replace(`'$.metadata.labels["kubernetes.io/service-name"]'`, `'$.metadata.labels["kubernetes.io/service-name"'`);
    assert.notEqual(typo, good, 'the shipped haprx.yaml indexes slices by their Service');
    const traffic = haprx.traffic('shop.test', 'web');
    t.after(() => traffic.stop());

    const mark = haprx.logs.length;
    const savedAt = Date.now();
    await save(file, typo);
    const rejected = await haprx.until('the configuration to be rejected', () => haprx.logged(mark, /controller configuration rejected/));
    t.diagnostic(`rejected ${Date.now() - savedAt} ms after the save: ${rejected.msg}`);
    assert.match(rejected.msg, /the previous one keeps running: watch\[\d+\]\.indexBy\[1\]: .* is not a JSONPath/);
    assert.equal(rejected['path'], 'watch[3].indexBy[1]');
    assert.equal(haprx.logged(mark, /controller configuration loaded/), undefined, 'no new graph');

    // The running configuration goes on: it still serves, and still takes changes.
    assert.equal(await haprx.body('shop.test'), 'web');
    await save(join(haprx.manifests, 'more.yaml'), manifest.ingress('more', 'more.test', 'api'));
    const changed = Date.now();
    await haprx.served('more.test', 'api');
    t.diagnostic(`a change while the configuration is rejected served after ${Date.now() - changed} ms`);
    assert.ok(haprx.alive, 'the process stays up');

    // Fixed: loaded again, and serving.
    const fixMark = haprx.logs.length;
    const fixedAt = Date.now();
    await save(file, good);
    await haprx.until('the configuration to load again', () => haprx.logged(fixMark, /controller configuration loaded/));
    await haprx.until('a deployment of the new graph', () => haprx.logged(fixMark, /^deployed to local/));
    t.diagnostic(`time to recover: configuration loaded and deployed ${Date.now() - fixedAt} ms after the fix`);
    assert.equal(await haprx.body('more.test'), 'api');
    assert.equal(await haprx.body('shop.test'), 'web');

    const { sent, failures } = await traffic.stop();
    t.diagnostic(`${sent} requests meanwhile, ${failures.length} failed`);
    assert.deepEqual(failures, []);
    assert.ok(haprx.alive);
    await rm(join(haprx.manifests, 'more.yaml'));
  });
});
