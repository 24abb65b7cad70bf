/**
 * Runtime API command lines for the operations of a deployment plan, in the
 * syntax of haproxy 2.6's CLI (stats socket, level admin).
 *
 * CLI words are separated by spaces or tabs; a backslash makes the next
 * character literal, which is how a word carries a space, a tab, a `;` (that
 * otherwise separates commands) or a backslash. There are no quotes, a word
 * cannot be empty, and a line cannot carry a line break. At most 64 words of
 * a line are read: the rest is dropped without an error, so callers must keep
 * below that (see MAX_CLI_WORDS).
 */
import type { MapReplaceOp, RuntimeOp, ServerAddOp, ServerRef } from './plan-types.ts';

export const MAX_CLI_WORDS = 64;

export function escapeCliWord(word: string): string {
  if (word === '') throw new RangeError('the CLI cannot carry an empty word');
  if (/[\r\n]/.test(word)) throw new RangeError('the CLI cannot carry a line break');
  return word.replace(/[\\; \t]/g, (c) => `\\${c}`);
}

const line = (...words: string[]) => words.map(escapeCliWord).join(' ');
const server = (op: ServerRef) => `${op.backend}/${op.server}`;

/** Words of the `add server` line; the plan keeps their count within MAX_CLI_WORDS. */
export function addServerWords(op: Pick<ServerAddOp, 'backend' | 'server' | 'address' | 'args'>): string[] {
  return ['add', 'server', server(op), op.address, ...op.args];
}

export interface RuntimeCommandContext {
  /** For map-replace: the version `prepare map` answered (see parsePreparedVersion). */
  mapVersion?: number;
  /** For a crt-list-del with an entry: the line's number, as `show ssl crt-list -n` answered (see crtListLineNumber). */
  crtListLine?: number;
}

/**
 * The command lines for one operation, in order. A map-replace needs the
 * version of a `prepare map` sent beforehand (prepareMapCommand), since
 * haproxy allocates it; without one this throws.
 */
export function runtimeCommands(op: RuntimeOp, ctx: RuntimeCommandContext = {}): string[] {
  switch (op.kind) {
    case 'server-add': {
      const commands = [line(...addServerWords(op))];
      if (op.health) commands.push(line('enable', 'health', server(op)));
      // An added server's agent starts out down, a configured one's up: a silent agent would keep it out.
      if (op.agent) commands.push(line('enable', 'agent', server(op)), line('set', 'server', server(op), 'agent', 'up'));
      if (op.state === 'ready') commands.push(line('enable', 'server', server(op)));
      if (op.state === 'drain') commands.push(line('set', 'server', server(op), 'state', 'drain'));
      return commands;
    }
    case 'server-addr':
      return [line('set', 'server', server(op), 'addr', op.host, 'port', String(op.port))];
    case 'server-weight':
      return [line('set', 'server', server(op), 'weight', String(op.weight))];
    case 'server-state':
      return [line('set', 'server', server(op), 'state', op.state)];
    case 'server-del':
      return [
        ...(op.agent ? [line('disable', 'agent', server(op))] : []),
        line('set', 'server', server(op), 'state', 'maint'),
        line('del', 'server', server(op)),
      ];
    case 'map-add':
      return [line('add', 'map', op.ref, op.key, op.value)];
    case 'map-set':
      return [line('set', 'map', op.ref, op.key, op.value)];
    case 'map-del':
      return [line('del', 'map', op.ref, op.key)];
    case 'cert-set':
      // The certificate goes as the command's payload: the lines after `<<`, up to an empty line.
      return [`${line('set', 'ssl', 'cert', op.ref)} <<\n${op.content}`, line('commit', 'ssl', 'cert', op.ref)];
    case 'cert-new':
      // An empty store first: `set ssl cert` only fills one haproxy has.
      return [line('new', 'ssl', 'cert', op.ref), `${line('set', 'ssl', 'cert', op.ref)} <<\n${op.content}`, line('commit', 'ssl', 'cert', op.ref)];
    case 'crt-list-add':
      // The line as the crt-list file holds it, as payload: haproxy reads it with the file's syntax.
      if (/[\r\n]/.test(op.entry)) throw new RangeError('a crt-list line cannot carry a line break');
      return [`${line('add', 'ssl', 'crt-list', op.listRef)} <<\n${op.entry}`];
    case 'crt-list-del': {
      if (op.entry === undefined) return [line('del', 'ssl', 'crt-list', op.listRef, op.certRef)];
      if (ctx.crtListLine === undefined) throw new RangeError(`crt-list-del of a line of ${op.certRef} needs its number from "show ssl crt-list -n"`);
      return [line('del', 'ssl', 'crt-list', op.listRef, `${op.certRef}:${ctx.crtListLine}`)];
    }
    case 'cert-del':
      return [line('del', 'ssl', 'cert', op.ref)];
    case 'map-replace': {
      const version = ctx.mapVersion;
      if (version === undefined) throw new RangeError(`map-replace of ${op.ref} needs the version from "prepare map"`);
      const at = `@${version}`;
      return [...op.entries.map((e) => line('add', 'map', at, op.ref, e.key, e.value)), line('commit', 'map', at, op.ref)];
    }
  }
}

/** Allocates the version a map-replace fills in. */
export function prepareMapCommand(op: Pick<MapReplaceOp, 'ref'>): string {
  return line('prepare', 'map', op.ref);
}

/** Lists a crt-list's lines with the numbers haproxy gives them, for a crt-list-del with an entry. */
export function showCrtListCommand(op: { listRef: string }): string {
  return line('show', 'ssl', 'crt-list', '-n', op.listRef);
}

/**
 * The number of the line `entry` (a certificate path, then SNI filters) in an answer to
 * `show ssl crt-list -n`: "# <list>", then one "<path>:<number> <filters>" per line.
 */
export function crtListLineNumber(reply: string, entry: string): number | undefined {
  const [path, ...filters] = entry.trim().split(/[ \t]+/);
  for (const text of reply.split('\n')) {
    const [first, ...rest] = text.trim().split(/[ \t]+/);
    const m = /^(.*):(\d+)$/.exec(first ?? '');
    if (m && m[1] === path && rest.join(' ') === filters.join(' ')) return Number(m[2]);
  }
  return undefined;
}

/** Reads the version out of the answer to `prepare map` ("New version created: 3"). */
export function parsePreparedVersion(reply: string): number | undefined {
  const m = /^New version created: (\d+)\s*$/.exec(reply.trim());
  return m ? Number(m[1]) : undefined;
}

/**
 * Whether haproxy's answer to a command sent by runtimeCommands means success.
 * Most of these commands answer nothing when they succeed; the others answer
 * with a fixed sentence (`commit ssl cert`: "Committing <file>", progress dots,
 * then "Success!"; `new ssl cert`: "New empty certificate store '<file>'!"; `add ssl
 * crt-list`: "Inserting certificate '<file>' in crt-list '<list>'.", then "Success!";
 * `del ssl crt-list`: "Entry '<file>' deleted in crtlist '<list>'!"; `del ssl cert`:
 * "Certificate '<file>' deleted!"). `del server` answers "Server still has connections
 * attached to it, cannot remove it." while connections remain: the server is
 * already in maintenance then, so the caller may retry later.
 */
export function replySucceeded(command: string, reply: string): boolean {
  const text = replyText(reply);
  if (command.startsWith('set ssl cert ')) return /^Transaction (?:created|updated) for certificate /.test(text);
  if (command.startsWith('commit ssl cert ')) return text.startsWith('Committing ') && text.endsWith('\nSuccess!') && !text.includes("Can't");
  if (command.startsWith('new ssl cert ')) return /^New empty certificate store '[^\n]*'!$/.test(text);
  if (command.startsWith('add ssl crt-list ')) return text.startsWith('Inserting certificate ') && text.endsWith('\nSuccess!') && !text.includes("Can't");
  if (command.startsWith('del ssl crt-list ')) return /^Entry '[^\n]*' deleted in crtlist '[^\n]*'!$/.test(text);
  if (command.startsWith('del ssl cert ')) return /^Certificate '[^\n]*' deleted!$/.test(text);
  if (command.startsWith('add server ')) return text === 'New server registered.';
  if (command.startsWith('del server ')) return text === 'Server deleted.';
  if (command.startsWith('prepare map ')) return parsePreparedVersion(text) !== undefined;
  if (command.startsWith('set server ') && / addr /.test(command)) {
    return /^(IP changed from|no need to change the addr|port changed from)/.test(text);
  }
  return text === '';
}

/** haproxy's answer without the "+ " prompt that answers each payload line first in interactive mode. */
export function replyText(reply: string): string {
  return reply.trim().replace(/^(?:\+ )+/, '');
}
