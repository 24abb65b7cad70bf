/** `haprx render --out` writes into a folder the user may share with their own files. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';

const ROOT = new URL('../..', import.meta.url).pathname;
const service = (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\n`;

describe('haprx render --out', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'haprx-render-out-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const templates = join(dir, 'templates');
  const manifests = join(dir, 'manifests');
  const out = join(dir, 'out');
  await mkdir(templates);
  await mkdir(manifests);
  await writeFile(join(templates, 'haprx.yaml'), 'watch:\n  - {name: services, apiVersion: v1, resource: services}\n');
  // One certificate file per Service, so that a Service removed takes its file away.
  await writeFile(join(templates, 'haproxy.cfg'), "global\n<% for (const s of resources.services.list()) { %># <%- h.certFile(`${s.metadata.name}.pem`, 'PEM') %>\n<% } %>");
  const render = () => promisify(execFile)(process.execPath, ['bin/haprx.js', 'render', manifests, '--templates', templates, '--out', out], { cwd: ROOT });

  it('deletes only the files it wrote, never the user\'s own beside them', async () => {
    await mkdir(join(out, 'ssl'), { recursive: true });
    await writeFile(join(out, 'ssl', 'site.key'), 'USER KEY');
    await writeFile(join(out, 'ssl', 'site.pem'), 'USER CERT');
    await writeFile(join(manifests, 'svc.yaml'), [service('web'), service('api')].join('---\n'));
    const first = await render();
    assert.match(first.stdout, /^rendered [0-9a-f]{12} into /);
    assert.deepEqual((await readdir(join(out, 'ssl'))).sort(), ['api.pem', 'site.key', 'site.pem', 'web.pem']);

    await writeFile(join(manifests, 'svc.yaml'), service('web'));
    const second = await render();
    assert.equal(second.stderr, '');
    assert.deepEqual((await readdir(join(out, 'ssl'))).sort(), ['site.key', 'site.pem', 'web.pem']);
    assert.equal(await readFile(join(out, 'ssl', 'site.key'), 'utf8'), 'USER KEY');
    assert.match(await readFile(join(out, 'haproxy.cfg'), 'utf8'), /# ssl\/web\.pem/);
  });
});
