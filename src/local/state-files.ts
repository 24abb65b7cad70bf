import { chmod, lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AUX_DIRS, AUX_KINDS, type RenderedFiles } from '../templating/rendered.ts';

/**
 * Creates a directory that only its owner can enter (0700), or tightens one that
 * exists: a state directory holds private keys, the configuration and haproxy's
 * admin sockets, and a world-writable one would let anyone swap what haproxy loads.
 * Refuses a path that is not a directory, or a directory that belongs to someone else.
 */
export async function privateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stat = await lstat(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) throw new Error(`${dir} belongs to user ${stat.uid}, not to this process (${uid}): refusing to keep haproxy's state there`);
  if ((stat.mode & 0o777) !== 0o700) await chmod(dir, 0o700);
}

/**
 * Writes a rendered configuration into a haproxy state directory (created or
 * tightened to 0700 first): haproxy.cfg and the maps/, general/ and ssl/ files it
 * references, each replaced atomically (write, then rename), and stale aux files
 * removed. Certificates hold keys: 0600.
 */
export async function writeStateFiles(dir: string, files: RenderedFiles): Promise<void> {
  await privateDir(dir);
  for (const kind of AUX_KINDS) {
    const sub = join(dir, AUX_DIRS[kind]);
    await privateDir(sub);
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
