import { lastValueFrom, takeWhile, toArray } from 'rxjs';
import { readTemplateDir } from '../config/template-dir.ts';
import type { RenderError, RenderWarning } from '../events.ts';
import type { ObjectStatus } from '../status/types.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import { Store } from '../k8s/store.ts';
import { folderSource } from '../local/folder-source.ts';
import { compileWatches } from '../local/manifests.ts';
import { renderTemplates } from '../templating/engine.ts';
import type { RenderedConfig } from '../templating/rendered.ts';
import { loadControllerConfig } from './load-config.ts';

export type RenderOnce =
  | { ok: true; config: RenderedConfig; problems: string[]; warnings: RenderWarning[]; statuses: readonly ObjectStatus[] }
  | { ok: false; stage: 'config' | 'render'; message: string; problems: string[] };

/** Loads templates and manifests once and renders them: the `render` and `validate` commands. */
export async function renderOnce(manifests: string, templates: string, values: Record<string, unknown>): Promise<RenderOnce> {
  const raw = await readTemplateDir(templates);
  if (!raw.ok) return { ok: false, stage: 'config', message: `${raw.path}: ${raw.message}`, problems: [] };
  const loaded = loadControllerConfig(raw.raw);
  if (!loaded.ok) return { ok: false, stage: 'config', message: `${loaded.path}: ${loaded.message}`, problems: [] };
  const { config, templates: compiled } = loaded.config;
  const watches = compileWatches(config.watch);
  if (!watches.ok) return { ok: false, stage: 'config', message: watches.message, problems: [] };

  const stores = new Map(config.watch.map((w) => [w.name, new Store(w.name, w)]));
  let unsynced = stores.size;
  const changes: ResourceChange[] = unsynced === 0 ? [] : await lastValueFrom(
    folderSource({ dir: manifests, watches: watches.watches, follow: false }).pipe(
      takeWhile((c) => !(c.type === 'synced' && --unsynced === 0)),
      toArray(),
    ),
  );
  const problems: string[] = [];
  for (const change of changes) {
    if (change.type === 'problem') problems.push(`${change.source}${change.line !== undefined ? `:${change.line}` : ''}: ${change.message}`);
    else stores.get(change.resource)?.apply(change);
  }
  const result = renderTemplates(compiled, { resources: Object.fromEntries(stores), values: { ...config.values, ...values } });
  if (!result.ok) return { ok: false, stage: 'render', message: describeRenderError(result.error), problems };
  for (const w of result.warnings) problems.push(w.object ? `${w.object}: ${w.message}` : w.message);
  return { ok: true, config: result.config, problems, warnings: result.warnings, statuses: result.statuses };
}

export function describeRenderError(error: RenderError): string {
  return `${error.template}${error.line !== undefined ? `:${error.line}` : ''}: ${error.message}`;
}
