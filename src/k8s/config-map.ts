import { parse, stringify } from 'yaml';
import type { RawConfig } from '../config/template-dir.ts';
import type { KubeObject } from './resource.ts';

/**
 * The controller configuration in a ConfigMap. Keys cannot hold `/`, so the
 * template folder's layout is flattened with a dot:
 *
 *   config.yaml          watch, settings and values (haprx.yaml in a template folder)
 *   haproxy.cfg          the main template
 *   maps.<name>          maps/<name>      e.g. maps.hosts.map
 *   general.<name>       general/<name>
 *   ssl.<name>           ssl/<name>
 *   snippets.<name>      snippets/<name>
 *
 * Any other key is an error, so that a typo (`map.hosts.map`) is not silently ignored.
 */
export const CONFIG_KEY = 'config.yaml';
export const MAIN_KEY = 'haproxy.cfg';
export const PREFIXES = { maps: 'maps', general: 'files', ssl: 'certs', snippets: 'snippets' } as const;

/** The raw controller configuration a ConfigMap holds, or what is wrong with it (with the key as path). */
export function configMapToRaw(configMap: KubeObject | undefined, source: string): RawConfig {
  if (!configMap) return { ok: false, source, path: '(ConfigMap)', message: `the ConfigMap ${source} does not exist` };
  const data = (configMap.data ?? {}) as Record<string, unknown>;
  if (configMap.binaryData && Object.keys(configMap.binaryData as object).length > 0) {
    return { ok: false, source, path: `binaryData[${JSON.stringify(Object.keys(configMap.binaryData as object)[0])}]`, message: 'binaryData is not read; put templates in data' };
  }
  let settings: unknown = {};
  const text = data[CONFIG_KEY];
  if (text !== undefined) {
    try {
      settings = parse(String(text)) ?? {};
    } catch (err) {
      return { ok: false, source, path: `data["${CONFIG_KEY}"]`, message: (err as Error).message.split('\n')[0]! };
    }
    if (typeof settings !== 'object' || Array.isArray(settings)) return { ok: false, source, path: `data["${CONFIG_KEY}"]`, message: 'must be a mapping of watch, settings and values' };
    if ('templates' in (settings as object)) return { ok: false, source, path: `data["${CONFIG_KEY}"].templates`, message: `templates are keys of the ConfigMap (${MAIN_KEY}, maps.<name>, …), not part of ${CONFIG_KEY}` };
  }
  const main = data[MAIN_KEY];
  if (main === undefined) return { ok: false, source, path: `data["${MAIN_KEY}"]`, message: `the ConfigMap has no ${MAIN_KEY} key` };
  const templates: Record<string, unknown> = { [MAIN_KEY]: main };
  for (const [k, value] of Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (k === CONFIG_KEY || k === MAIN_KEY) continue;
    const dot = k.indexOf('.');
    const kind = dot > 0 ? PREFIXES[k.slice(0, dot) as keyof typeof PREFIXES] : undefined;
    const name = k.slice(dot + 1);
    if (!kind || !name) {
      return { ok: false, source, path: `data[${JSON.stringify(k)}]`, message: `unknown key: expected ${CONFIG_KEY}, ${MAIN_KEY}, or maps.<name>, general.<name>, ssl.<name>, snippets.<name>` };
    }
    ((templates[kind] ??= {}) as Record<string, unknown>)[name] = value;
  }
  return { ok: true, source, raw: { ...(settings as object), templates } };
}

/**
 * The ConfigMap data for a raw controller configuration, e.g. one read from a
 * template folder: the inverse of configMapToRaw, for `kubectl apply` and tests.
 */
export function rawToConfigMapData(raw: Record<string, unknown>): Record<string, string> {
  const { templates, ...rest } = raw as { templates?: Record<string, unknown> };
  const data: Record<string, string> = {};
  if (Object.keys(rest).length > 0) data[CONFIG_KEY] = stringify(rest);
  for (const [kind, content] of Object.entries(templates ?? {})) {
    if (kind === MAIN_KEY) {
      data[MAIN_KEY] = String(content);
      continue;
    }
    const prefix = Object.entries(PREFIXES).find(([, k]) => k === kind)?.[0];
    if (!prefix) throw new Error(`unknown template kind ${kind}`);
    for (const [name, text] of Object.entries(content as Record<string, unknown>)) data[`${prefix}.${name}`] = String(text);
  }
  return data;
}
