import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Observable } from 'rxjs';
import { FileVersions, folderHints, oneAtATime, scanFolder } from '../local/folder-scan.ts';
import { type RawConfig, readTemplateDir } from './template-dir.ts';

export interface TemplateDirSourceOptions {
  /** Coalesces the burst of events that one save or checkout produces. */
  settleMs?: number;
  /** A rescan this often even without file-system events; 0 turns it off. */
  rescanMs?: number;
}

/**
 * A template folder as a stream of raw controller configurations: one at start, then
 * one each time the folder's content has changed, so a saved template rebuilds the
 * graph. The folder is rescanned when the file system hints at a change and
 * periodically; a file counts as changed when its content did, so saves by rename,
 * a `git checkout` of the folder, a deleted and re-created folder or a swapped
 * ConfigMap mount all arrive. A read that gives the same configuration as the last
 * one emits nothing.
 */
export function templateDirSource(dir: string, options: TemplateDirSourceOptions = {}): Observable<RawConfig> {
  const { settleMs = 100, rescanMs = 2_000 } = options;
  return new Observable<RawConfig>((subscriber) => {
    let closed = false;
    const versions = new FileVersions();
    let lastHash: string | undefined;

    const emit = (raw: RawConfig) => {
      const hash = createHash('sha256').update(JSON.stringify(raw)).digest('hex');
      if (hash === lastHash || closed) return;
      lastHash = hash;
      subscriber.next(raw);
    };

    /** Whether any file below the folder changed content since the last check. */
    const changed = async (): Promise<boolean> => {
      const scan = await scanFolder(dir, { accept: () => true });
      if (!scan.ok) return true;
      const { changed: candidates, removed } = versions.candidates(scan.files);
      for (const path of removed) versions.forget(path);
      let any = removed.length > 0;
      for (const file of candidates) {
        const content = await readFile(join(dir, file.path)).catch(() => undefined);
        if (content !== undefined && versions.record(file, content)) any = true;
      }
      return any;
    };

    const check = async () => {
      const moved = await changed();
      if (lastHash !== undefined && !moved) return;
      const raw = await readTemplateDir(dir).catch((err: unknown): RawConfig => ({ ok: false, source: dir, path: '(templates)', message: (err as Error).message }));
      emit(raw);
    };

    const rescan = oneAtATime(() => check().catch(() => undefined));
    void rescan.request();
    const stop = folderHints(dir, { onHint: () => void rescan.request(), rescanMs, settleMs });
    return () => {
      closed = true;
      rescan.stop();
      void stop();
    };
  });
}
