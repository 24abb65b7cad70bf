import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';

/** A raw controller configuration as read from somewhere, or why it could not be read. */
export type RawConfig = { ok: true; raw: unknown; source: string } | { ok: false; path: string; message: string; source: string };

export const SETTINGS_FILE = 'haprx.yaml';
export const MAIN_TEMPLATE = 'haproxy.cfg';
/** Sub-folders of a template folder and the template kinds they hold. */
export const TEMPLATE_FOLDERS = { maps: 'maps', general: 'files', ssl: 'certs', snippets: 'snippets' } as const;

/**
 * Reads a template folder into the controller configuration it stands for:
 *
 *   haprx.yaml     watch, settings and values (everything but the templates)
 *   haproxy.cfg    the main template
 *   maps/…, general/…, ssl/…, snippets/…   the other templates, one file each
 *
 * The result has the shape of the in-cluster ConfigMap, so both decode alike.
 */
export async function readTemplateDir(dir: string): Promise<RawConfig> {
  const source = dir;
  let settings: unknown = {};
  const settingsText = await readFile(join(dir, SETTINGS_FILE), 'utf8').catch(missingAs(undefined));
  if (settingsText !== undefined) {
    try {
      settings = parse(settingsText) ?? {};
    } catch (err) {
      return { ok: false, source, path: SETTINGS_FILE, message: (err as Error).message.split('\n')[0]! };
    }
    if (typeof settings !== 'object' || Array.isArray(settings)) return { ok: false, source, path: SETTINGS_FILE, message: 'must be a mapping' };
  }
  const main = await readFile(join(dir, MAIN_TEMPLATE), 'utf8').catch(missingAs(undefined));
  if (main === undefined) return { ok: false, source, path: MAIN_TEMPLATE, message: `${join(dir, MAIN_TEMPLATE)} is missing` };
  const templates: Record<string, unknown> = { [MAIN_TEMPLATE]: main };
  for (const [folder, kind] of Object.entries(TEMPLATE_FOLDERS)) {
    const names = await templateFiles(join(dir, folder));
    if (names.length === 0) continue;
    const record: Record<string, string> = {};
    for (const name of names) record[name] = await readFile(join(dir, folder, name), 'utf8');
    templates[kind] = record;
  }
  return { ok: true, source, raw: { ...(settings as object), templates } };
}

/**
 * The files of a template sub-folder, symlinks followed (a ConfigMap mount is links);
 * names starting with a dot are editors' or the mount's own.
 */
async function templateFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(missingAs([]));
  const names: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    if (entry.isFile() || (entry.isSymbolicLink() && (await stat(join(folder, entry.name)).catch(() => undefined))?.isFile())) names.push(entry.name);
  }
  return names.sort();
}

function missingAs<T>(fallback: T): (err: NodeJS.ErrnoException) => T {
  return (err) => {
    if (err.code === 'ENOENT') return fallback;
    throw err;
  };
}
