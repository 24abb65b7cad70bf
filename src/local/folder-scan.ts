import { createHash } from 'node:crypto';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { watch as watchTree } from 'chokidar';

/** One file found by a scan: where it is, and what identifies this version of it. */
export interface ScannedFile {
  /** Relative to the scanned folder, with `/` separators. */
  path: string;
  /** Device, inode, size and change times: a write or a rename over the file changes it. */
  signature: string;
  size: number;
  mtimeMs: number;
}

export type FolderScan = { ok: true; files: Map<string, ScannedFile> } | { ok: false; message: string };

export interface ScanOptions {
  /** Which files count, by relative path; directories are always entered. */
  accept(path: string): boolean;
  /** How deep symlinked or nested folders are followed. */
  maxDepth?: number;
}

/** Entries of a folder looked at together: enough to fill the I/O threads, bounded for a huge folder. */
const STAT_BATCH = 256;

/**
 * Lists the files below `dir`, following symlinks (a Kubernetes ConfigMap mount is
 * links into a `..data` folder that is swapped as a whole), and skipping every name
 * that starts with a dot: editors' swap and temp files, `..data` and its timestamped
 * folders, `.git`. A folder reached twice through links is read once.
 */
export async function scanFolder(dir: string, options: ScanOptions): Promise<FolderScan> {
  const files = new Map<string, ScannedFile>();
  const maxDepth = options.maxDepth ?? 16;
  const seen = new Set<string>();
  const walk = async (abs: string, rel: string, depth: number): Promise<void> => {
    const real = await realpath(abs).catch(() => abs);
    if (seen.has(real) || depth > maxDepth) return;
    seen.add(real);
    // A folder removed meanwhile is empty; one that cannot be read fails the scan, so
    // that nothing it holds is taken for deleted.
    const entries = await readdir(abs, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
      throw new Error(`${rel || '.'}: ${err.message}`, { cause: err });
    });
    // Every entry of a folder is looked at together, so that a scan waits a few turns of
    // the event loop, not one per file: a turn may hold a slice of other work.
    const visible = entries.filter((entry) => !entry.name.startsWith('.'));
    for (let i = 0; i < visible.length; i += STAT_BATCH) {
      await Promise.all(
        visible.slice(i, i + STAT_BATCH).map(async (entry) => {
          const childAbs = join(abs, entry.name);
          const childRel = rel ? `${rel}/${entry.name}` : entry.name;
          // A vanished entry (deleted between readdir and stat) is simply not there.
          const info = await stat(childAbs, { bigint: true }).catch(() => undefined);
          if (!info) return;
          if (info.isDirectory()) await walk(childAbs, childRel, depth + 1);
          else if (info.isFile() && options.accept(childRel)) {
            files.set(childRel, {
              path: childRel,
              signature: `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`,
              size: Number(info.size),
              mtimeMs: Number(info.mtimeMs),
            });
          }
        }),
      );
    }
  };
  try {
    const root = await stat(dir);
    if (!root.isDirectory()) return { ok: false, message: 'not a folder' };
    await walk(dir, '', 0);
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  return { ok: true, files };
}

/**
 * A file modified this recently may be written again within the same timestamp tick
 * (kernel timestamps are coarse), leaving its signature unchanged: its content is
 * compared again on the next scan, as git does with "racily clean" index entries.
 */
const RACY_MS = 2_000;

interface Known {
  signature: string;
  /** Content hash, or a marker for a version that was not read (e.g. too large). */
  hash: string;
  racy: boolean;
}

/**
 * What a folder held at the last scan, so that the next scan reads only files whose
 * signature moved (or that were racy), and reports a file as changed only when its
 * content did.
 */
export class FileVersions {
  private readonly known = new Map<string, Known>();

  /** Files to read again, and files that are gone, since the last scan. */
  candidates(files: ReadonlyMap<string, ScannedFile>): { changed: ScannedFile[]; removed: string[] } {
    const changed: ScannedFile[] = [];
    for (const file of files.values()) {
      const known = this.known.get(file.path);
      if (!known || known.signature !== file.signature || known.racy) changed.push(file);
    }
    const removed = [...this.known.keys()].filter((path) => !files.has(path));
    return { changed, removed };
  }

  /**
   * Records what was read for `file` (its content, or a marker standing for it), and
   * says whether it differs from the version known before.
   */
  record(file: ScannedFile, content: string | Buffer, now = Date.now()): boolean {
    const hash = createHash('sha256').update(content).digest('hex');
    const before = this.known.get(file.path);
    this.known.set(file.path, { signature: file.signature, hash, racy: now - file.mtimeMs < RACY_MS });
    return before?.hash !== hash;
  }

  forget(path: string): void {
    this.known.delete(path);
  }

  get size(): number {
    return this.known.size;
  }
}

export interface FolderHintsOptions {
  /** Called, coalesced, when something below the folder may have changed. */
  onHint(): void;
  /** Called when the watcher reports an error; the periodic rescan goes on. */
  onError?(message: string): void;
  /** Safety net: a rescan this often even without events (0 turns it off). */
  rescanMs: number;
  /** Coalesces the burst of events that one save or checkout produces. */
  settleMs: number;
}

/**
 * When to rescan a folder. File-system events (chokidar, which watches each folder
 * and survives renames, deletes and re-creates) are only hints: the scan that follows
 * decides what changed, by content. A periodic rescan catches anything the events
 * missed. Returns the function that stops it.
 */
export function folderHints(dir: string, options: FolderHintsOptions): () => Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hint = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      options.onHint();
    }, options.settleMs);
  };
  const watcher = watchTree(dir, { ignoreInitial: true, atomic: false, followSymlinks: true, depth: 16, ignorePermissionErrors: true });
  watcher.on('all', hint);
  watcher.on('error', (err) => options.onError?.((err as Error).message ?? String(err)));
  const periodic = options.rescanMs > 0 ? setInterval(options.onHint, options.rescanMs) : undefined;
  periodic?.unref();
  return async () => {
    if (timer) clearTimeout(timer);
    if (periodic) clearInterval(periodic);
    await watcher.close();
  };
}

/**
 * Runs `work` one at a time: a request while it runs asks for exactly one more run
 * after it (however many requests came), so the last request is always followed by
 * a complete run. `request` resolves when that run is done.
 */
export function oneAtATime(work: () => Promise<void>): { request(): Promise<void>; stop(): void } {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let stopped = false;
  const start = (): Promise<void> => {
    running = work().finally(() => {
      running = undefined;
    });
    return running;
  };
  return {
    request() {
      if (stopped) return Promise.resolve();
      if (!running) return start();
      next ??= running.then(() => {
        next = undefined;
        return stopped ? undefined : start();
      });
      return next;
    },
    stop() {
      stopped = true;
    },
  };
}
