import { createHash } from 'node:crypto';

/**
 * Everything one render produces. Auxiliary files are keyed by file name (no
 * directories); the configuration references them at `maps/<name>`,
 * `general/<name>` and `ssl/<name>` relative to the directory of haproxy.cfg,
 * which is where every target and the validator put them.
 */
export interface RenderedFiles {
  /** haproxy.cfg */
  main: string;
  maps: Readonly<Record<string, string>>;
  files: Readonly<Record<string, string>>;
  certs: Readonly<Record<string, string>>;
}

export interface RenderedConfig extends RenderedFiles {
  /** sha256 over every file, in a fixed order: equal hashes mean byte-identical output. */
  hash: string;
}

export const AUX_DIRS = { maps: 'maps', files: 'general', certs: 'ssl' } as const;
export type AuxKind = keyof typeof AUX_DIRS;
export const AUX_KINDS: readonly AuxKind[] = ['maps', 'files', 'certs'];

/** Name-sorted copy, so that iteration order never depends on insertion order. */
function sortedRecord(record: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function sealRendered(files: RenderedFiles): RenderedConfig {
  const sealed = { main: files.main, maps: sortedRecord(files.maps), files: sortedRecord(files.files), certs: sortedRecord(files.certs) };
  const h = createHash('sha256');
  const part = (label: string, content: string) => {
    // Length-prefixed, so that no two different file sets hash alike.
    h.update(`${label}\u0000${Buffer.byteLength(content)}\u0000`);
    h.update(content);
  };
  part('main', sealed.main);
  for (const kind of AUX_KINDS) for (const [name, content] of Object.entries(sealed[kind])) part(`${kind}/${name}`, content);
  return { ...sealed, hash: h.digest('hex') };
}

/** The path of an auxiliary file relative to the directory that holds haproxy.cfg. */
export function auxPath(kind: AuxKind, name: string): string {
  return `${AUX_DIRS[kind]}/${name}`;
}
