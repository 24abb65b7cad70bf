import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BehaviorSubject, type Observable, distinctUntilChanged, from, map, of } from 'rxjs';
import { templateDirSource } from '../config/template-dir-source.ts';
import type { RawConfig } from '../config/template-dir.ts';
import { errorMessage } from '../errors.ts';
import { SpawnHelper } from '../haproxy/spawn-helper.ts';
import { Validator } from '../haproxy/validate.ts';
import type { ResourceChange } from '../k8s/resource.ts';
import { folderSource } from '../local/folder-source.ts';
import type { Endpoint } from '../events.ts';
import { compileWatches } from '../local/manifests.ts';
import { ParseWorker } from '../local/parse-worker.ts';
import { LocalTarget } from '../local/target.ts';
import { startObservability } from '../observability/index.ts';
import { createLogger } from '../observability/logger.ts';
import { controller } from '../../streams/controller.ts';
import { parsePort, parseSets, shippedTemplates } from './args.ts';
import { loadControllerConfig } from './load-config.ts';
import type { Command } from './main.ts';
import { reportStrayErrors } from './guard.ts';
import { RECORD_OPTIONS, RECORD_USAGE, parseRecordFlags, startRecording } from './recording-flags.ts';
import { controllerGraph } from './wiring.ts';

export const localCommand: Command = {
  summary: 'run the controller on a folder of manifests, driving a local haproxy',
  usage: `Usage: haprx local DIR [--templates DIR] [--state-dir DIR] [--haproxy-bin PATH] [--set key=value ...]
                  [--health-port N] [--metrics-port N] [--listen-address ADDR]
                  [--debug-port N] [--debug-address ADDR] [--record FILE]

Runs the controller until interrupted. Kubernetes objects come from the YAML files
in DIR, which is watched: edit a file and haprx reconciles. haprx starts haproxy in
master-worker mode and deploys to it, through the runtime API where it can and by
reloading where it must. If haproxy stops on its own, haprx starts it again with
the last configuration it took. The haproxy stops when haprx exits (docs/local.md).

Options:
  --templates DIR     template folder, watched too (default: the shipped templates)
  --state-dir DIR     haproxy.cfg, maps and sockets (default: .haprx/state)
  --haproxy-bin PATH  the haproxy binary (default: haproxy on the PATH)
  --set key=value     a template value, e.g. --set httpPort=18080 (repeatable)
  --health-port N     /healthz and /readyz (default 8080; 0 turns it off)
  --metrics-port N    Prometheus /metrics (default 9090; 0 turns it off)
  --listen-address A  where both listen (default 127.0.0.1)
  --debug-port N      /debug/vars (default 8081; 0 turns it off)
  --debug-address A   where /debug/vars listens (default 127.0.0.1)
${RECORD_USAGE}
Traces go to an OTLP/HTTP endpoint when OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, e.g. Jaeger's http://127.0.0.1:4318.
`,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        templates: { type: 'string' },
        'state-dir': { type: 'string', default: '.haprx/state' },
        'haproxy-bin': { type: 'string', default: 'haproxy' },
        set: { type: 'string', multiple: true, default: [] },
        'health-port': { type: 'string', default: '8080' },
        'metrics-port': { type: 'string', default: '9090' },
        'listen-address': { type: 'string', default: '127.0.0.1' },
        'debug-port': { type: 'string', default: '8081' },
        'debug-address': { type: 'string', default: '127.0.0.1' },
        ...RECORD_OPTIONS,
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
    const ports: Record<string, number> = {};
    for (const flag of ['health-port', 'metrics-port', 'debug-port'] as const) {
      const port = parsePort(flag, values[flag]);
      if (!port.ok) {
        process.stderr.write(`haprx: ${port.message}\n`);
        return 2;
      }
      ports[flag] = port.port;
    }
    const record = parseRecordFlags(values);
    if (!record.ok) {
      process.stderr.write(`haprx: ${record.message}\n`);
      return 2;
    }
    const manifests = resolve(positionals[0]!);
    const templates = resolve(values.templates ?? shippedTemplates());
    const stateDir = resolve(values['state-dir']);
    const log = createLogger();
    // Started first, while this process is small: it starts haproxy -c for the validator.
    const spawner = new SpawnHelper({ onExit: (cause) => log.warn(`${cause}; the next check starts another`) });
    spawner.start();
    const unguard = reportStrayErrors((where, err) => log.error({ err: errorMessage(err) }, `an error escaped ${where}, haprx goes on: ${errorMessage(err)}`));
    const host = values['listen-address'];
    // A busy port must not stop a local run: it goes on without that endpoint.
    const obs = await startObservability({
      log,
      health: ports['health-port'] ? { port: ports['health-port'], host } : false,
      metrics: ports['metrics-port'] ? { port: ports['metrics-port'], host } : false,
      debug: ports['debug-port'] ? { port: ports['debug-port'], host: values['debug-address'] } : false,
      onListenError: 'warn',
    });
    const endpoint: Endpoint = { id: 'local', address: stateDir };
    // While haproxy is down and being restarted there is no instance to deploy to; when it
    // is back it joins again, and the graph sends it the current configuration.
    const up$ = new BehaviorSubject(true);
    const target = new LocalTarget({
      bin: values['haproxy-bin'],
      stateDir,
      // haproxy prints a line per backend on a reload: at 10k, 30,000 lines, not worth scrubbing unless written.
      onStep: (s) => log.isLevelEnabled('debug') && log.debug({ step: s.kind }, obs.scrub(s.detail)),
      onOutput: (line) => log.isLevelEnabled('debug') && log.debug({ source: 'haproxy' }, obs.scrub(line)),
      onHealth: (health) => {
        obs.record(
          health.up
            ? { type: 'TargetRestarted', endpoint, cause: obs.scrub(health.cause), downMs: health.downMs }
            : { type: 'TargetDown', endpoint, cause: obs.scrub(health.cause) },
        );
        up$.next(health.up);
      },
    });
    const validator = new Validator({ haproxyBin: values['haproxy-bin'], runner: spawner.run });
    const recording = startRecording(record.flags, log, obs.scrub);
    log.info({ manifests, templates, stateDir }, `watching ${manifests}`);
    if (process.getuid?.() === 0) log.warn('running as root: haproxy runs as root too; run haprx local as an unprivileged user (docs/security.md)');

    const events = controller(templateDirSource(templates), {
      decode: (raw: RawConfig) => (raw.ok ? loadControllerConfig(raw.raw) : { ok: false, path: raw.path, message: raw.message }),
      graph: (loaded) => {
        obs.setControllerConfig(loaded.config);
        return controllerGraph(loaded, {
          changes: (watch) => {
            const compiled = compileWatches(watch);
            const source$: Observable<ResourceChange> = compiled.ok
              ? folderSource({ dir: manifests, watches: compiled.watches, parser: new ParseWorker() })
              : of({ type: 'problem' as const, source: manifests, message: compiled.message });
            return source$.pipe(obs.trackResources());
          },
          endpoints$: up$.pipe(
            distinctUntilChanged(),
            map((up) => (up ? [endpoint] : [])),
          ),
          // The first configuration is checked by starting haproxy on it: no haproxy -c before.
          validator: { validate: (config, signal) => validator.validate(config, signal, { start: (c) => target.checkByStarting(c) }) },
          deployTo: (_endpoint, deployment) => from(target.deploy(deployment.config, deployment.fast)),
          values: sets.values,
          scrub: obs.scrub,
          ...(recording && { recording: recording.control }),
        });
      },
    });

    const subscription = events.subscribe({
      next: (event) => obs.record(event),
      // The graph and the controller restart themselves on errors; this would be a defect.
      error: (err: unknown) => log.error({ err: errorMessage(err) }, `the controller stopped on an error: ${errorMessage(err)}`),
    });
    const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
      process.once('SIGINT', () => resolveSignal('SIGINT'));
      process.once('SIGTERM', () => resolveSignal('SIGTERM'));
    });
    log.info(`${signal}: stopping`);
    // A second signal (a process group stopped together sends two) does not wait for the
    // clean stop, held by a deployment in flight; but haproxy goes with haprx, not left
    // serving the last configuration on its own until the next start.
    const force = () => {
      log.warn('second signal: stopping haproxy and exiting now');
      target.haproxy.kill();
      process.exit(1);
    };
    process.once('SIGINT', force);
    process.once('SIGTERM', force);
    subscription.unsubscribe();
    await recording?.close();
    await target.stop();
    await spawner.stop();
    up$.complete();
    await obs.close();
    unguard();
    return 0;
  },
};
