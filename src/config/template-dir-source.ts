import { watch as watchFs } from 'node:fs';
import { Observable } from 'rxjs';
import { type RawConfig, readTemplateDir } from './template-dir.ts';

/**
 * A template folder as a stream of raw controller configurations: one at start,
 * then one after each burst of edits settles, so a saved template rebuilds the graph.
 */
export function templateDirSource(dir: string, settleMs = 100): Observable<RawConfig> {
  return new Observable<RawConfig>((subscriber) => {
    let closed = false;
    let timer: NodeJS.Timeout | undefined;
    let queue = Promise.resolve();
    const read = () => {
      queue = queue
        .then(() => readTemplateDir(dir))
        .then(
          (raw) => {
            if (!closed) subscriber.next(raw);
          },
          (err: unknown) => {
            if (!closed) subscriber.next({ ok: false, source: dir, path: '(templates)', message: (err as Error).message });
          },
        );
    };
    read();
    let watcher: ReturnType<typeof watchFs> | undefined;
    try {
      watcher = watchFs(dir, { recursive: true }, () => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(read, settleMs);
      });
      watcher.on('error', () => undefined);
    } catch {
      // A folder that cannot be watched is still read once; the first read reports why.
    }
    return () => {
      closed = true;
      watcher?.close();
      if (timer) clearTimeout(timer);
    };
  });
}
