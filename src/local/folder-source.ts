import { type FSWatcher, watch as watchFs } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { Observable } from 'rxjs';
import type { KubeObject, ResourceChange } from '../k8s/resource.ts';
import { objectKey } from '../k8s/resource.ts';
import { type CompiledWatch, parseManifests } from './manifests.ts';

export interface FolderSourceOptions {
  dir: string;
  watches: readonly CompiledWatch[];
  /** Keep watching the folder after the initial load (the default). */
  follow?: boolean;
  /** Coalesces the burst of file-system events that one save produces. */
  settleMs?: number;
}

const MANIFEST = /\.(ya?ml|json)$/i;

/** What one file contributed: set name → object key → object. */
type Contribution = Map<string, Map<string, KubeObject>>;

/**
 * A folder of Kubernetes manifests as a resource source: every object in every
 * `*.yaml`, `*.yml` or `*.json` file below `dir` that a watch matches. After the
 * initial load each set reports `synced`; then each saved, added or removed file
 * becomes the upserts and deletes that turn the old contents into the new. A file
 * that fails to parse is reported as a problem and what it held before stays.
 */
export function folderSource(options: FolderSourceOptions): Observable<ResourceChange> {
  const { dir, watches, follow = true, settleMs = 20 } = options;
  return new Observable<ResourceChange>((subscriber) => {
    const contributions = new Map<string, Contribution>();
    /** Which file an object (set + key) came from, so two files cannot fight over one object. */
    const owners = new Map<string, string>();
    let closed = false;
    let watcher: FSWatcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    const pending = new Set<string>();
    let queue = Promise.resolve();

    const emit = (change: ResourceChange) => {
      if (!closed) subscriber.next(change);
    };

    const load = async (file: string) => {
      let text: string | undefined;
      try {
        text = await readFile(join(dir, file), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'EISDIR') {
          emit({ type: 'problem', source: file, message: `cannot read: ${(err as Error).message}` });
          return;
        }
      }
      const next: Contribution = new Map();
      if (text !== undefined) {
        const parsed = parseManifests(file, text);
        if (!parsed.ok) {
          emit({ type: 'problem', source: parsed.problem.file, ...(parsed.problem.line !== undefined && { line: parsed.problem.line }), message: parsed.problem.message });
          return;
        }
        for (const object of parsed.objects) {
          for (const w of watches) {
            if (!w.matches(object)) continue;
            const key = objectKey(object);
            const owner = owners.get(`${w.name}/${key}`);
            if (owner !== undefined && owner !== file) {
              emit({ type: 'problem', resource: w.name, source: file, message: `${object.kind} ${key} is also defined in ${owner}; keeping that one` });
              continue;
            }
            let set = next.get(w.name);
            if (!set) next.set(w.name, (set = new Map()));
            set.set(key, object);
          }
        }
      }
      const previous = contributions.get(file) ?? new Map();
      for (const [name, objects] of previous) {
        for (const [key, object] of objects) {
          if (next.get(name)?.has(key)) continue;
          owners.delete(`${name}/${key}`);
          emit({ type: 'delete', resource: name, object });
        }
      }
      for (const [name, objects] of next) {
        for (const [key, object] of objects) {
          owners.set(`${name}/${key}`, file);
          emit({ type: 'upsert', resource: name, object });
        }
      }
      if (next.size > 0) contributions.set(file, next);
      else contributions.delete(file);
    };

    const enqueue = (work: () => Promise<void>) => {
      queue = queue.then(work).catch((err: unknown) => emit({ type: 'problem', source: dir, message: String(err) }));
    };

    const flush = () => {
      timer = undefined;
      const files = [...pending].sort();
      pending.clear();
      enqueue(async () => {
        for (const file of files) await load(file);
      });
    };

    enqueue(async () => {
      let files: string[];
      try {
        files = (await readdir(dir, { recursive: true })).filter((f) => MANIFEST.test(f)).map((f) => f.split(sep).join('/')).sort();
      } catch (err) {
        emit({ type: 'problem', source: dir, message: `cannot list the folder: ${(err as Error).message}` });
        files = [];
      }
      for (const file of files) await load(file);
      for (const w of watches) emit({ type: 'synced', resource: w.name });
    });

    if (follow) {
      try {
        watcher = watchFs(dir, { recursive: true }, (_event, filename) => {
          if (filename === null) return;
          const file = relative(dir, join(dir, filename.toString())).split(sep).join('/');
          if (!MANIFEST.test(file)) return;
          pending.add(file);
          if (timer) clearTimeout(timer);
          timer = setTimeout(flush, settleMs);
        });
        watcher.on('error', (err) => emit({ type: 'problem', source: dir, message: `watching stopped: ${err.message}` }));
      } catch (err) {
        emit({ type: 'problem', source: dir, message: `cannot watch the folder: ${(err as Error).message}` });
      }
    }

    return () => {
      closed = true;
      watcher?.close();
      if (timer) clearTimeout(timer);
    };
  });
}
