import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Observable } from 'rxjs';
import type { KubeObject, ResourceChange } from '../k8s/resource.ts';
import { objectKey, refOf } from '../k8s/resource.ts';
import { FileVersions, type ScannedFile, folderHints, oneAtATime, scanFolder } from './folder-scan.ts';
import { type CompiledWatch, MAX_OBJECT_BYTES, type ParsedDocuments, type ParsedManifests, mib, parseManifestsInSlices } from './manifests.ts';
import type { ManifestParser } from './parse-worker.ts';
import { nextTurn } from '../turns.ts';

export interface FolderSourceOptions {
  dir: string;
  watches: readonly CompiledWatch[];
  /** Keep watching the folder after the initial load (the default). */
  follow?: boolean;
  /** Coalesces the burst of file-system events that one save produces. */
  settleMs?: number;
  /** A rescan this often even without file-system events; 0 turns it off. */
  rescanMs?: number;
  /** A larger file is not read (its objects stay as they were). */
  maxFileBytes?: number;
  /** A larger document is skipped (the object keeps its previous version). */
  maxObjectBytes?: number;
  /**
   * Parses large files read for the first time off the main thread (parse-worker.ts);
   * without it, or when it fails, they are parsed here in slices. The source closes it.
   */
  parser?: ManifestParser;
}

const MANIFEST = /\.(ya?ml|json)$/i;
export const MAX_FILE_BYTES = 256 * 1024 * 1024;
/** The longest the source holds the event loop at a time while it parses or passes on a large file. */
const SLICE_MS = 10;
/**
 * The objects of one file that always go on in one turn, however long the receivers
 * take: a new Service written with its EndpointSlice and its Ingress reaches the
 * trigger together and is rendered once, instead of its last objects missing the
 * first render and waiting for the debounce when a slow turn (garbage collection, a
 * busy core) passes the slice. Each costs the receivers a few microseconds.
 */
const TURN_OBJECTS = 100;
/** Files read and parsed ahead of the one being passed on, and how large they may be together. */
const READ_AHEAD = 4;
const READ_AHEAD_BYTES = 32 * 1024 * 1024;
/** A file this large (in characters), read for the first time, is parsed in the parse thread. */
const OFF_THREAD_CHARS = 64 * 1024;

/** What one file contributed: set name → object key → object. */
type Contribution = Map<string, Map<string, KubeObject>>;

/**
 * A folder of Kubernetes manifests as a resource source: every object in every
 * `*.yaml`, `*.yml` or `*.json` file below `dir` that a watch matches (names starting
 * with a dot are skipped). After the initial load each set reports `synced`; then each
 * file whose content changed becomes the upserts and deletes that turn the old contents
 * into the new. Files are found by rescanning the folder when the file system hints at
 * a change, and periodically: an edit saved by rename, a `git checkout`, or a swapped
 * ConfigMap mount is seen like any other. A file that fails to parse is reported as a
 * problem and what it held before stays; so does everything while the folder itself is
 * missing.
 */
export function folderSource(options: FolderSourceOptions): Observable<ResourceChange> {
  const { dir, watches, follow = true, settleMs = 20, rescanMs = 2_000, maxFileBytes = MAX_FILE_BYTES, maxObjectBytes = MAX_OBJECT_BYTES, parser } = options;
  return new Observable<ResourceChange>((subscriber) => {
    const contributions = new Map<string, Contribution>();
    /** What each file's documents gave when it was last read: unchanged documents are not parsed again. */
    const documents = new Map<string, ParsedDocuments>();
    /**
     * Which file an object came from, by set and key (the key strings the contributions
     * hold), so two files cannot fight over one object.
     */
    const owners = new Map<string, Map<string, string>>();
    const ownersOf = (name: string) => {
      let set = owners.get(name);
      if (!set) owners.set(name, (set = new Map()));
      return set;
    };
    const versions = new FileVersions();
    let closed = false;
    let folderProblem: string | undefined;
    let stopHints: (() => Promise<void>) | undefined;

    const emit = (change: ResourceChange) => {
      if (!closed) subscriber.next(change);
    };

    /**
     * Replaces what `file` contributed with `next`. A file of thousands of objects is
     * passed on in slices, with a turn of the event loop between them; a small one in one turn.
     */
    const replace = async (file: string, next: Contribution) => {
      const previous = contributions.get(file) ?? new Map();
      let since = performance.now();
      let passed = 0;
      const pace = async () => {
        if (++passed < TURN_OBJECTS || performance.now() - since < SLICE_MS) return;
        await nextTurn();
        since = performance.now();
        passed = 0;
      };
      for (const [name, objects] of previous) {
        for (const [key, object] of objects) {
          if (next.get(name)?.has(key)) continue;
          owners.get(name)?.delete(key);
          emit({ type: 'delete', resource: name, object });
          await pace();
        }
      }
      for (const [name, objects] of next) {
        for (const [key, object] of objects) {
          if (previous.get(name)?.get(key) === object) continue;
          ownersOf(name).set(key, file);
          emit({ type: 'upsert', resource: name, object });
          await pace();
        }
      }
      if (next.size > 0) contributions.set(file, next);
      else contributions.delete(file);
    };

    /**
     * Reads and parses a file: what its objects now are, or undefined when there is
     * nothing to pass on (too large, unreadable, unchanged, or it fails to parse: each
     * reported). Never rejects: files are read ahead of the one being passed on.
     */
    const read = async (file: ScannedFile): Promise<ParsedManifests | undefined> => {
      if (file.size > maxFileBytes) {
        if (versions.record(file, `too large:${file.signature}`))
          emit({ type: 'problem', source: file.path, message: `the file is ${mib(file.size)}, more than the ${mib(maxFileBytes)} a manifest file may be; not read, its objects stay as they were` });
        return;
      }
      let text: string;
      try {
        text = await readFile(join(dir, file.path), 'utf8');
      } catch (err) {
        // Gone since the scan: the next scan reports it removed. Otherwise reported once per version.
        const message = `cannot read: ${(err as Error).message}`;
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && versions.record(file, `unreadable:${file.signature}:${message}`)) emit({ type: 'problem', source: file.path, message });
        return;
      }
      if (!versions.record(file, text)) return;
      const known = documents.get(file.path);
      // A large file read for the first time (a start) is parsed in the parse thread; the
      // main thread meanwhile passes on the files before it. One read before is parsed
      // here, only its changed documents.
      const parsed =
        parser && known === undefined && text.length >= OFF_THREAD_CHARS
          ? await parser.parse(file.path, text, maxObjectBytes).catch(() => parseManifestsInSlices(file.path, text, maxObjectBytes, SLICE_MS))
          : await parseManifestsInSlices(file.path, text, maxObjectBytes, SLICE_MS, known);
      if (!parsed.ok) {
        emit({ type: 'problem', source: parsed.problem.file, ...(parsed.problem.line !== undefined && { line: parsed.problem.line }), message: parsed.problem.message });
        return;
      }
      return parsed;
    };

    /** Passes on what a file's objects now are: the upserts and deletes from what it held before. */
    const apply = async (file: ScannedFile, parsed: Extract<ParsedManifests, { ok: true }>) => {
      documents.set(file.path, parsed.documents);
      const previous = contributions.get(file.path);
      const next: Contribution = new Map();
      const add = (name: string, key: string, object: KubeObject) => {
        let set = next.get(name);
        if (!set) next.set(name, (set = new Map()));
        set.set(key, object);
      };
      for (const object of parsed.objects) {
        for (const w of watches) {
          const verdict = w.test(object);
          if (verdict.problem !== undefined) emit({ type: 'problem', resource: w.name, source: file.path, object: refOf(object), message: `${object.kind} ${objectKey(object)}: ${verdict.problem}` });
          if (!verdict.match) continue;
          const key = objectKey(object);
          const owner = owners.get(w.name)?.get(key);
          if (owner !== undefined && owner !== file.path) {
            emit({ type: 'problem', resource: w.name, source: file.path, message: `${object.kind} ${key} is also defined in ${owner}; keeping that one` });
            continue;
          }
          // An object whose version did not change stays the object it was: nothing to
          // pass on, and no second copy of it beside the one the stores hold.
          const before = previous?.get(w.name)?.get(key);
          add(w.name, key, before !== undefined && before.metadata.resourceVersion === object.metadata.resourceVersion ? before : object);
        }
      }
      for (const skip of parsed.skipped) {
        emit({ type: 'problem', source: file.path, line: skip.line, message: skip.message });
        // The object keeps the version it had before it grew too large.
        const { kind, namespace, name } = skip.object;
        if (!name || !previous) continue;
        const key = namespace ? `${namespace}/${name}` : name;
        for (const [set, objects] of previous) {
          const kept = objects.get(key);
          if (kept && kept.kind === kind && !next.get(set)?.has(key)) add(set, key, kept);
        }
      }
      await replace(file.path, next);
    };

    const scan = async () => {
      const result = await scanFolder(dir, { accept: (path) => MANIFEST.test(path) });
      if (!result.ok) {
        const message = `cannot list the folder: ${result.message}; its objects stay as they were`;
        if (message !== folderProblem) emit({ type: 'problem', source: dir, message });
        folderProblem = message;
        return;
      }
      folderProblem = undefined;
      const { changed, removed } = versions.candidates(result.files);
      for (const path of removed) {
        versions.forget(path);
        documents.delete(path);
        await replace(path, new Map());
      }
      // In path order; while one file is passed on, the next few are read and parsed.
      const ordered = changed.sort((a, b) => a.path.localeCompare(b.path));
      const ahead = new Map<number, Promise<ParsedManifests | undefined>>();
      let next = 0;
      let aheadBytes = 0;
      for (let i = 0; i < ordered.length; i++) {
        while (next < ordered.length && (next === i || (next - i <= READ_AHEAD && aheadBytes + ordered[next]!.size <= READ_AHEAD_BYTES))) {
          const file = ordered[next]!;
          aheadBytes += file.size;
          ahead.set(
            next++,
            read(file).catch((err: unknown) => {
              emit({ type: 'problem', source: file.path, message: `cannot read: ${(err as Error).message}` });
              return undefined;
            }),
          );
        }
        const parsed = await ahead.get(i)!;
        ahead.delete(i);
        aheadBytes -= ordered[i]!.size;
        if (parsed?.ok) await apply(ordered[i]!, parsed);
      }
    };

    const rescan = oneAtATime(() => scan().catch((err: unknown) => emit({ type: 'problem', source: dir, message: String(err) })));
    void rescan.request().then(() => {
      for (const w of watches) emit({ type: 'synced', resource: w.name });
    });

    if (follow) {
      stopHints = folderHints(dir, {
        onHint: () => void rescan.request(),
        onError: (message) => emit({ type: 'problem', source: dir, message: `watching: ${message}; the periodic rescan goes on` }),
        rescanMs,
        settleMs,
      });
    }

    return () => {
      closed = true;
      rescan.stop();
      void stopHints?.();
      void parser?.close();
    };
  });
}
