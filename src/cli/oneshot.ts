import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Validator, couldNotRun } from '../haproxy/validate.ts';
import { writeStateFiles } from '../local/state-files.ts';
import { printable } from '../printable.ts';
import { parseSets, shippedTemplates } from './args.ts';
import type { Command } from './main.ts';
import { renderOnce } from './render-once.ts';

function fail(message: string): number {
  process.stderr.write(`haprx: ${message}\n`);
  return 1;
}

/** One line of output per message, whatever cluster values it quotes. */
const line = (text: string) => printable(text);

/** Parses the options both commands share, plus `extra`, and renders once. */
async function load(argv: string[], extra: 'out' | 'haproxy-bin') {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { templates: { type: 'string' }, set: { type: 'string', multiple: true, default: [] }, [extra]: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) return { error: 'expected one folder of manifests' } as const;
  const sets = parseSets(values.set as string[]);
  if (!sets.ok) return { error: sets.message } as const;
  const templates = resolve((values.templates as string | undefined) ?? shippedTemplates());
  const result = await renderOnce(resolve(positionals[0]!), templates, sets.values);
  for (const problem of result.problems) process.stderr.write(`haprx: warning: ${line(problem)}\n`);
  return { option: values[extra] as string | undefined, result } as const;
}

export const renderCommand: Command = {
  summary: 'render a folder of manifests once, to files',
  usage: `Usage: haprx render DIR --out DIR [--templates DIR] [--set key=value ...]

Renders the templates once with the Kubernetes objects in DIR and writes
haproxy.cfg with its maps/, general/ and ssl/ files into --out. Paths in the
configuration are relative to that folder: run haproxy from it
(cd OUT && haproxy -c -f haproxy.cfg). Exits non-zero on any error. The folder
may hold other files: haprx lists what it wrote in OUT/.haprx-files and, on the
next run, removes only those of its files that are no longer rendered.

Options:
  --out DIR          where to write (created if missing; made private to its
                     owner, mode 0700, since it holds keys)
  --templates DIR    template folder (default: the shipped templates)
  --set key=value    a template value, e.g. --set httpPort=8080 (repeatable)
`,
  async run(argv) {
    const loaded = await load(argv, 'out');
    if ('error' in loaded) return fail(`${loaded.error}\n\n${this.usage}`);
    const out = loaded.option;
    if (typeof out !== 'string') return fail(`--out is required\n\n${this.usage}`);
    if (!loaded.result.ok) return fail(`${loaded.result.stage} error: ${line(loaded.result.message)}`);
    try {
      await writeStateFiles(resolve(out), loaded.result.config);
    } catch (err) {
      return fail(`--out ${out}: ${(err as Error).message}`);
    }
    process.stdout.write(`rendered ${loaded.result.config.hash.slice(0, 12)} into ${resolve(out)}\n`);
    return 0;
  },
};

export const validateCommand: Command = {
  summary: 'render a folder of manifests once and check it with haproxy -c',
  usage: `Usage: haprx validate DIR [--templates DIR] [--haproxy-bin PATH] [--set key=value ...]

Renders the templates once with the Kubernetes objects in DIR, then validates the
result: a structural check, then haproxy -c. Prints haproxy's own messages with
file and line. Exits 0 when valid, 1 otherwise.

Options:
  --templates DIR     template folder (default: the shipped templates)
  --haproxy-bin PATH  the haproxy binary (default: haproxy on the PATH)
  --set key=value     a template value (repeatable)
`,
  async run(argv) {
    const loaded = await load(argv, 'haproxy-bin');
    if ('error' in loaded) return fail(`${loaded.error}\n\n${this.usage}`);
    if (!loaded.result.ok) return fail(`${loaded.result.stage} error: ${line(loaded.result.message)}`);
    const validator = new Validator({ haproxyBin: loaded.option ?? 'haproxy' });
    const result = await validator.validate(loaded.result.config);
    for (const w of result.warnings) process.stderr.write(`warning: ${w.file}${w.line !== undefined ? `:${w.line}` : ''}: ${line(w.message)}\n`);
    if (result.ok) {
      process.stdout.write(`valid (${Math.round(result.durationMs)} ms)\n`);
      return 0;
    }
    for (const p of result.problems) process.stderr.write(`${p.file}${p.line !== undefined ? `:${p.line}` : ''}: ${line(p.message)}
`);
    return fail(couldNotRun(result.phase) ? `could not check: haproxy -c did not give a verdict (${result.phase})` : `invalid (${result.phase})`);
  },
};
