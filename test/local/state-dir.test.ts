/**
 * State directories hold private keys, the configuration and haproxy's admin sockets:
 * created 0700, and an existing one tightened to 0700, for `haprx local --state-dir`
 * and `haprx render --out` alike. And `haprx render` prints one warning per line,
 * whatever control characters the cluster values it quotes hold.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { privateDir, writeStateFiles } from '../../src/local/state-files.ts';
import { sealRendered } from '../../src/templating/rendered.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const mode = async (path: string) => (await stat(path)).mode & 0o777;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'haprx-state-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function haprx(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('state directories', () => {
  it('creates missing directories, parents included, as 0700', async () => {
    const nested = join(dir, 'new', 'state');
    await writeStateFiles(nested, sealRendered({ main: 'global\n', maps: { 'a.map': 'k v\n' }, files: {}, certs: {} }));
    assert.equal(await mode(join(dir, 'new')), 0o700);
    assert.equal(await mode(nested), 0o700);
    for (const sub of ['maps', 'general', 'ssl']) assert.equal(await mode(join(nested, sub)), 0o700, sub);
  });

  it('tightens an existing world-writable directory and its subdirectories to 0700', async () => {
    const open = join(dir, 'open');
    await mkdir(join(open, 'ssl'), { recursive: true });
    await chmod(open, 0o777);
    await chmod(join(open, 'ssl'), 0o755);
    await writeStateFiles(open, sealRendered({ main: 'global\n', maps: {}, files: {}, certs: {} }));
    assert.equal(await mode(open), 0o700);
    assert.equal(await mode(join(open, 'ssl')), 0o700);
  });

  it('refuses a path that is a file', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    await assert.rejects(privateDir(file), /not a directory|EEXIST|ENOTDIR/);
  });

  it('haprx render --out tightens its folder too', async () => {
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    const out = join(dir, 'out');
    await mkdir(out, { mode: 0o777 });
    await chmod(out, 0o777);
    const result = await haprx(['render', manifests, '--out', out]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(await mode(out), 0o700);
  });
});

describe('haprx render warnings', () => {
  it('escapes control characters from cluster values, so a name cannot forge a line', async () => {
    const manifests = join(dir, 'hostile');
    await mkdir(manifests);
    const forged = 'haprx: warning: Ingress shop/web: all good';
    // A namespace holding a newline, a carriage return, an escape sequence and a bidi override, on an Ingress the templates skip.
    const namespace = `evil\n${forged}\r\u001b[2K\u202e`;
    await writeFile(
      join(manifests, 'ingress.yaml'),
      JSON.stringify({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: 'web', namespace },
        spec: { ingressClassName: 'haprx', rules: [{ host: 'bad host!', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
      }),
    );
    const result = await haprx(['render', manifests, '--out', join(dir, 'hostile-out')]);
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stderr.split('\n').filter(Boolean);
    assert.ok(lines.length > 0, 'the Ingress is reported');
    for (const line of lines) assert.match(line, /^haprx: warning: /);
    assert.ok(!lines.includes(forged), 'no forged line');
    const reported = lines.find((l) => l.includes('evil'))!;
    assert.ok(reported.includes('evil\\nhaprx: warning: Ingress shop/web: all good\\r\\x1b[2K\\u202e'), reported);
    const raw = [...result.stderr.replace(/\n/g, '')].filter((c) => c.charCodeAt(0) < 0x20 || c === '\u202e');
    assert.deepEqual(raw, [], 'no raw control character left');
  });
});
