/**
 * Reads through the master CLI. haproxy 2.6's master, in interactive mode, was seen
 * to send the whole of a 1.2 MB `@1 show map` answer, ending with its empty line, and
 * then no prompt, several times in a run of 30 changes at 10k Ingresses; the session
 * waited for the prompt until its 5 s timeout. The double below does that for every
 * `show` in interactive mode, answers everything else with a prompt (after 50 ms, so
 * that a read overtaking a write would show), and in non-interactive mode answers one
 * command and closes, as haproxy does. It is a double of that framing only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { HaproxyProcess } from '../../src/local/haproxy-process.ts';

const BIG = Array.from({ length: 20_000 }, (_, i) => `0x${i.toString(16)} app-${i}.example.com/ be_${i}`).join('\n');

function masterDouble(path: string): Promise<{ server: Server; log: string[] }> {
  const log: string[] = [];
  const server = createServer((socket: Socket) => {
    let interactive = false;
    let partial = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'prompt') {
          interactive = true;
          socket.write('master> ');
          continue;
        }
        log.push(`${interactive ? 'session' : 'own connection'}: ${line}`);
        const read = line.startsWith('@1 show ');
        const answer = read ? `${BIG}\n\n` : '\n';
        if (!interactive) {
          socket.end(answer);
          return;
        }
        if (read) socket.write(answer);
        else setTimeout(() => socket.write(`${answer}master> `), 50);
      }
    });
    socket.on('error', () => undefined);
  });
  return new Promise((resolve) => server.listen(path, () => resolve({ server, log })));
}

describe('runtime reads through the master CLI', () => {
  let dir: string;
  let double: Awaited<ReturnType<typeof masterDouble>>;
  let haproxy: HaproxyProcess;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-reads-'));
    haproxy = new HaproxyProcess({ bin: 'haproxy', stateDir: dir });
    double = await masterDouble(haproxy.masterSocket);
  });
  after(async () => {
    await haproxy.stop();
    await new Promise((resolve) => double.server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a large answer whole, however the master ends it, after the writes sent before it are answered', async () => {
    const started = performance.now();
    const wrote = haproxy.runtime('add map maps/hosts.map a.test be_a');
    const read = await haproxy.runtime('show map maps/hosts.map');
    assert.equal(read, `${BIG}\n\n`);
    assert.ok(performance.now() - started < 2_000, `read in ${Math.round(performance.now() - started)} ms`);
    assert.equal(await wrote, '\n');
    assert.deepEqual(double.log, ['session: @1 add map maps/hosts.map a.test be_a', 'own connection: @1 show map maps/hosts.map']);
    // Writes go on in the session as before.
    assert.equal(await haproxy.runtime('del map maps/hosts.map a.test'), '\n');
    assert.equal(double.log.at(-1), 'session: @1 del map maps/hosts.map a.test');
  });
});
