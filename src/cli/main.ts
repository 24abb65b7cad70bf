export interface Command {
  /** One line for `haprx --help`; main.ts lists it without loading the command. */
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/**
 * Commands load on demand: `haprx local` never loads the Kubernetes client, which
 * alone would add tens of MiB to the process.
 */
const commands: Record<string, { summary: string; load: () => Promise<Command> }> = {
  run: { summary: 'run the controller in a Kubernetes cluster, deploying through the Data Plane API', load: async () => (await import('./run.ts')).runCommand },
  local: { summary: 'run the controller on a folder of manifests, driving a local haproxy', load: async () => (await import('./local.ts')).localCommand },
  render: { summary: 'render a folder of manifests once, to files', load: async () => (await import('./oneshot.ts')).renderCommand },
  validate: { summary: 'render a folder of manifests once and check it with haproxy -c', load: async () => (await import('./oneshot.ts')).validateCommand },
  status: { summary: 'print the status haprx would write for each object of a folder of manifests', load: async () => (await import('./status-command.ts')).statusCommand },
  test: { summary: "run a template library's fixture tests", load: async () => (await import('./test-command.ts')).testCommand },
  replay: { summary: 'replay a recording of the graph in virtual time and print its event timeline', load: async () => (await import('./replay-command.ts')).replayCommand },
};

const USAGE = `haprx: keeps HAProxy configured from Kubernetes state

Usage: haprx <command> [options]

Commands:
${Object.entries(commands)
  .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`)
  .join('\n')}

Run "haprx <command> --help" for a command's options.
`;

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return name === undefined ? 2 : 0;
  }
  const entry = commands[name];
  if (!entry) {
    process.stderr.write(`haprx: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const command = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.usage);
    return 0;
  }
  return command.run(rest);
}

process.exitCode = await main(process.argv.slice(2));
