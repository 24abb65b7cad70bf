import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { printable } from '../printable.ts';
import { statusLines } from '../status/print.ts';
import { parseSets, shippedTemplates } from './args.ts';
import type { Command } from './main.ts';
import { renderOnce } from './render-once.ts';

export const statusCommand: Command = {
  summary: 'print the status haprx would write for each object of a folder of manifests',
  usage: `Usage: haprx status DIR [--templates DIR] [--set key=value ...] [--json]

Renders the templates once with the Kubernetes objects in DIR, without any cluster,
and prints what haprx would write into each object's status: its conditions (type,
status, reason and message), whether it is served (an Ingress then shows the load
balancer's address), and the entries of its status lists (a Gateway's listeners, a
route's parents), one fact per line:

  HTTPRoute shop/web: parent edge#http: Accepted=False NoMatchingParent: ...

Conditions that hold once the configuration is deployed (Programmed) say
"(once deployed)". Then the warnings of the render: the objects skipped or partly
applied, and why. Control characters in cluster values are printed escaped.
Exits 0, or 1 when the configuration cannot be loaded or the render fails.

Options:
  --templates DIR    template folder (default: the shipped templates)
  --set key=value    a template value (repeatable)
  --json             the statuses and warnings as JSON
`,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { templates: { type: 'string' }, set: { type: 'string', multiple: true, default: [] }, json: { type: 'boolean', default: false } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) {
      process.stderr.write(`haprx: expected one folder of manifests\n\n${this.usage}`);
      return 2;
    }
    const sets = parseSets(values.set as string[]);
    if (!sets.ok) {
      process.stderr.write(`haprx: ${sets.message}\n`);
      return 2;
    }
    const result = await renderOnce(resolve(positionals[0]!), resolve(values.templates ?? shippedTemplates()), sets.values);
    if (!result.ok) {
      for (const problem of result.problems) process.stderr.write(`haprx: warning: ${printable(problem)}\n`);
      process.stderr.write(`haprx: ${result.stage} error: ${printable(result.message)}\n`);
      return 1;
    }
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ status: result.statuses, warnings: result.warnings }, null, 2)}\n`);
      return 0;
    }
    for (const line of statusLines(result.statuses, { pendingNote: true })) process.stdout.write(`${line}\n`);
    for (const problem of result.problems) process.stdout.write(`warning: ${printable(problem)}\n`);
    return 0;
  },
};
