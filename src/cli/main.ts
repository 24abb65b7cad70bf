import { localCommand } from './local.ts';
import { renderCommand, validateCommand } from './oneshot.ts';

export interface Command {
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

const commands: Record<string, Command> = { local: localCommand, render: renderCommand, validate: validateCommand };
commands.test = (await import('./test-command.ts')).testCommand;
commands.run = (await import('./run.ts')).runCommand;

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
  const command = commands[name];
  if (!command) {
    process.stderr.write(`haprx: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.usage);
    return 0;
  }
  return command.run(rest);
}

process.exitCode = await main(process.argv.slice(2));
