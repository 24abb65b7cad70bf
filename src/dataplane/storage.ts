/**
 * Where the auxiliary files of a render live on a Data Plane API instance.
 *
 * The API stores uploads under a sanitised name: every run of characters other
 * than letters, digits, `_` and `-` becomes `_`, in the name and in its
 * extension separately, and map files always end in `.map`. haprx prefixes
 * every name it stores (default `haprx-`), so that it can tell its own files
 * from anyone else's when it removes the ones nothing references any more.
 * Certificates go to ssl_certificates storage, which refuses a file without a
 * private key: CA bundles and CRLs go to general storage instead.
 */
import { AUX_KINDS, type AuxKind, type RenderedFiles } from '../templating/rendered.ts';

export type StorageKind = 'maps' | 'general' | 'ssl_certificates';
export const STORAGE_KINDS: readonly StorageKind[] = ['maps', 'general', 'ssl_certificates'];

export interface Placement {
  kind: AuxKind;
  /** The name in RenderedConfig. */
  name: string;
  storage: StorageKind;
  /** The name the API stores it under (and takes in URLs). */
  stored: string;
}

/** The API's sanitised file name. */
export function sanitizeFileName(name: string): string {
  const clean = (s: string) => s.replace(/[^a-zA-Z0-9_\\-]+/g, '_');
  const dot = name.lastIndexOf('.');
  if (dot < 0) return clean(name);
  const stem = name.slice(0, dot);
  const ext = clean(name.slice(dot + 1));
  return stem === '' ? `_${ext}` : `${clean(stem)}.${ext}`;
}

export function storedName(storage: StorageKind, name: string, prefix: string): string {
  const stored = sanitizeFileName(`${prefix}${name}`);
  return storage === 'maps' && !stored.endsWith('.map') ? `${stored}.map` : stored;
}

const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

export function storageFor(kind: AuxKind, content: string): StorageKind {
  if (kind === 'maps') return 'maps';
  if (kind === 'certs' && PRIVATE_KEY.test(content)) return 'ssl_certificates';
  return 'general';
}

export const placementKey = (kind: AuxKind, name: string) => `${kind}/${name}`;

/** Every auxiliary file's place, or why two files would land on one stored name. */
export function placeFiles(files: RenderedFiles, prefix: string): { placements: Map<string, Placement> } | { error: string } {
  const placements = new Map<string, Placement>();
  const taken = new Map<string, string>();
  for (const kind of AUX_KINDS) {
    for (const [name, content] of Object.entries(files[kind])) {
      const storage = storageFor(kind, content);
      const stored = storedName(storage, name, prefix);
      const slot = `${storage}/${stored}`;
      const other = taken.get(slot);
      if (other !== undefined) {
        return { error: `${other} and ${placementKey(kind, name)} would both be stored as ${stored} in ${storage} storage (the API keeps only letters, digits, _ and - in file names): rename one` };
      }
      taken.set(slot, placementKey(kind, name));
      placements.set(placementKey(kind, name), { kind, name, storage, stored });
    }
  }
  return { placements };
}

/** Directory paths go into haproxy.cfg unquoted. */
export const SAFE_DIR = /^\/[A-Za-z0-9._/@+-]*$/;

export function joinPath(dir: string, name: string): string {
  return `${dir.replace(/\/+$/, '')}/${name}`;
}
