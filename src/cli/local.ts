import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { from, of } from 'rxjs';
import { templateDirSource } from '../config/template-dir-source.ts';
import type { RawConfig } from '../config/template-dir.ts';
import { Validator } from '../haproxy/validate.ts';
import { folderSource } from '../local/folder-source.ts';
import { compileWatches } from '../local/manifests.ts';
import { LocalTarget } from '../local/target.ts';
import { logLine } from '../observability/event-log.ts';
import { createLogger } from '../observability/logger.ts';
import { controller } from '../../streams/controller.ts';
import { parseSets, shippedTemplates } from './args.ts';
import { loadControllerConfig } from './load-config.ts';
import type { Command } from './main.ts';
import { controllerGraph } from './wiring.ts';

export const localCommand: Command = {
  summary: 'run the controller on a folder of manifests, driving a local haproxy',
  usage: `Usage: haprx local DIR [--templates DIR] [--state-dir DIR] [--haproxy-bin PATH] [--set key=value ...]

Runs the controller until interrupted. Kubernetes objects come from the YAML files
in DIR, which is watched: edit a file and haprx reconciles. haprx starts haproxy in
master-worker mode and deploys to it, through the runtime API where it can and by
reloading where it must. The haproxy stops when haprx exits.

Options:
  --templates DIR     template folder, watched too (default: the shipped templates)
  --state-dir DIR     haproxy.cfg, maps and sockets (default: .haprx/state)
  --haproxy-bin PATH  the haproxy binary (default: haproxy on the PATH)
  --set key=value     a template value, e.g. --set httpPort=18080 (repeatable)
`,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        templates: { type: 'string' },
        'state-dir': { type: 'string', default: '.haprx/state' },
        'haproxy-bin': { type: 'string', default: 'haproxy' },
        set: { type: 'string', multiple: true, default: [] },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) {
      process.stderr.write(`haprx: expected one folder of manifests\n\n${this.usage}`);
      return 2;
    }
    const sets = parseSets(values.set);
    if (!sets.ok) {
      process.stderr.write(`haprx: ${sets.message}\n`);
      return 2;
    }
    const manifests = resolve(positionals[0]!);
    const templates = resolve(values.templates ?? shippedTemplates());
    const stateDir = resolve(values['state-dir']);
    const log = createLogger();
    const target = new LocalTarget({
      bin: values['haproxy-bin'],
      stateDir,
      onStep: (s) => log.debug({ step: s.kind }, s.detail),
      onOutput: (line) => log.debug({ source: 'haproxy' }, line),
    });
    const validator = new Validator({ haproxyBin: values['haproxy-bin'] });
    log.info({ manifests, templates, stateDir }, `watching ${manifests}`);

    const events = controller(templateDirSource(templates), {
      decode: (raw: RawConfig) => (raw.ok ? loadControllerConfig(raw.raw) : { ok: false, path: raw.path, message: raw.message }),
      graph: (loaded) =>
        controllerGraph(loaded, {
          changes: (watch) => {
            const compiled = compileWatches(watch);
            return compiled.ok ? folderSource({ dir: manifests, watches: compiled.watches }) : of({ type: 'problem' as const, source: manifests, message: compiled.message });
          },
          endpoints$: of([{ id: 'local', address: stateDir }]),
          validator,
          deployTo: (_endpoint, deployment) => from(target.deploy(deployment.config)),
          values: sets.values,
        }),
    });

    const subscription = events.subscribe((event) => {
      const line = logLine(event);
      log[line.level](line.fields, line.msg);
    });
    const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
      process.once('SIGINT', () => resolveSignal('SIGINT'));
      process.once('SIGTERM', () => resolveSignal('SIGTERM'));
    });
    log.info(`${signal}: stopping`);
    subscription.unsubscribe();
    await target.stop();
    return 0;
  },
};
