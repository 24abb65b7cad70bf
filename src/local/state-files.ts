import { chmod, lstat, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
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
 * The list of files haprx wrote into a folder, kept in the folder itself: only these
 * are ever deleted, so a user's own files beside them (a `site.key` in ssl/) stay.
 */
export const OWNED_FILES = '.haprx-files';

/** What an owned path may look like: haproxy.cfg, or one plain file name in an aux folder. */
const OWNABLE = new RegExp(`^(haproxy\\.cfg|(${Object.values(AUX_DIRS).join('|')})/[^/\\\\]+)$`);

/**
 * Writes a rendered configuration into a folder haproxy runs from (created or
 * tightened to 0700 first): haproxy.cfg and the maps/, general/ and ssl/ files it
 * references, each replaced atomically (write, then rename). Files haprx wrote before
 * that the new configuration no longer has are removed; nothing else in the folder is
 * touched. Certificates hold keys: 0600. With `previous`, the files the folder holds
 * now, only the files whose content differs are written (at 10k objects an endpoint
 * change rewrites haproxy.cfg, not megabytes of unchanged maps).
 */
export async function writeStateFiles(dir: string, files: RenderedFiles, previous?: RenderedFiles): Promise<void> {
  await privateDir(dir);
  const before = await ownedFiles(dir);
  const wanted = new Set<string>(['haproxy.cfg']);
  for (const kind of AUX_KINDS) {
    const sub = AUX_DIRS[kind];
    await privateDir(join(dir, sub));
    for (const [name, content] of Object.entries(files[kind])) {
      if (previous?.[kind][name] !== content) await atomicWrite(join(dir, sub, name), content, kind === 'certs' ? 0o600 : 0o644);
      wanted.add(`${sub}/${name}`);
    }
  }
  if (previous?.main !== files.main) await atomicWrite(join(dir, 'haproxy.cfg'), files.main, 0o644);
  const stale = [...before].filter((path) => !wanted.has(path));
  // Listed before they are removed, so an interrupted run still knows they are haprx's.
  if (stale.length > 0) await recordOwned(dir, [...wanted, ...stale]);
  // A path the user turned into a folder is left alone.
  for (const path of stale) await rm(join(dir, path), { force: true }).catch(() => undefined);
  // The list as it stands already says it (most deployments: the same files, new contents).
  if (stale.length > 0 || [...wanted].some((path) => !before.has(path))) await recordOwned(dir, [...wanted]);
}

/** The files haprx wrote into `dir`, as recorded there; entries that could not be haprx's are ignored. */
export async function ownedFiles(dir: string): Promise<Set<string>> {
  const text = await readFile(join(dir, OWNED_FILES), 'utf8').catch(() => '');
  let listed: unknown;
  try {
    listed = JSON.parse(text || '{"files":[]}');
  } catch {
    return new Set();
  }
  const paths = (listed as { files?: unknown }).files;
  return new Set(Array.isArray(paths) ? paths.filter((p): p is string => typeof p === 'string' && OWNABLE.test(p) && !p.includes('/..') && !p.endsWith('/.')) : []);
}

async function recordOwned(dir: string, paths: string[]): Promise<void> {
  await atomicWrite(join(dir, OWNED_FILES), `${JSON.stringify({ files: [...new Set(paths)].sort() }, null, 1)}\n`, 0o644);
}

async function atomicWrite(path: string, content: string, mode: number): Promise<void> {
  const tmp = `${path}.haprx-tmp`;
  await writeFile(tmp, content, { mode });
  await rename(tmp, path);
}
