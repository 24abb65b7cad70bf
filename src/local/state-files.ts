import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AUX_DIRS, AUX_KINDS, type RenderedFiles } from '../templating/rendered.ts';

/**
 * Writes a rendered configuration into a haproxy state directory: haproxy.cfg and
 * the maps/, general/ and ssl/ files it references, each replaced atomically
 * (write, then rename), and stale aux files removed. Certificates hold keys: 0600.
 */
export async function writeStateFiles(dir: string, files: RenderedFiles): Promise<void> {
  for (const kind of AUX_KINDS) {
    const sub = join(dir, AUX_DIRS[kind]);
    await mkdir(sub, { recursive: true, mode: 0o700 });
    const wanted = files[kind];
    for (const [name, content] of Object.entries(wanted)) await atomicWrite(join(sub, name), content, kind === 'certs' ? 0o600 : 0o644);
    for (const name of await readdir(sub)) if (!Object.hasOwn(wanted, name)) await rm(join(sub, name), { force: true, recursive: true });
  }
  await atomicWrite(join(dir, 'haproxy.cfg'), files.main, 0o644);
}

async function atomicWrite(path: string, content: string, mode: number): Promise<void> {
  const tmp = `${path}.haprx-tmp`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, path);
}
