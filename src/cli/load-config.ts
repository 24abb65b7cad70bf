import { type ControllerConfig, decodeControllerConfig } from '../config/controller-config.ts';
import { compileTemplates, type CompiledTemplates } from '../templating/engine.ts';
import type { Decoded } from '../../streams/controller.ts';

/** A controller configuration that decoded and whose templates compiled: ready to run. */
export interface LoadedConfig {
  config: ControllerConfig;
  templates: CompiledTemplates;
}

/**
 * Decodes a raw controller configuration and compiles its templates, once. Either
 * step's first error is reported with the path of the field it concerns, e.g.
 * `templates["haproxy.cfg"]` with the template line in the message.
 */
export function loadControllerConfig(raw: unknown): Decoded<LoadedConfig> {
  const decoded = decodeControllerConfig(raw);
  if (!decoded.ok) {
    const [first, ...rest] = decoded.errors;
    return { ok: false, path: first!.path, message: first!.message + (rest.length ? ` (and ${rest.length} more: ${rest.map((e) => e.path).join(', ')})` : '') };
  }
  const { 'haproxy.cfg': main, ...aux } = decoded.value.templates;
  const compiled = compileTemplates({ main, ...aux });
  if (!compiled.ok) {
    const [first] = compiled.errors;
    return { ok: false, path: templatePath(first!.template), message: `${first!.line !== undefined ? `line ${first!.line}: ` : ''}${first!.message}` };
  }
  return { ok: true, config: { config: decoded.value, templates: compiled.templates } };
}

/** `maps/hosts.map` → `templates.maps["hosts.map"]`, as it appears in the configuration. */
function templatePath(label: string): string {
  const [dir, name] = label.split('/', 2);
  const kind = { maps: 'maps', general: 'files', ssl: 'certs', snippets: 'snippets' }[dir ?? ''];
  return kind && name ? `templates.${kind}[${JSON.stringify(name)}]` : `templates[${JSON.stringify(label)}]`;
}
