import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CliSession } from '../../src/local/master-cli.ts';

/**
 * A stand-in for the master CLI's interactive mode, only as far as framing goes: after
 * `prompt`, each command line is answered with its text and then "master> ", written a
 * few bytes at a time so that prompts arrive cut in pieces. `hang`, and whatever follows
 * it on that connection, is never answered;
 * `bye` closes the connection.
 */
function framingDouble(path: string): Promise<{ server: Server; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket: Socket) => {
    connections++;
    let partial = '';
    let out = '';
    let hung = false;
    const flush = () => {
      // Three bytes per write, so that "master> " is split across chunks.
      for (let i = 0; i < out.length; i += 3) socket.write(out.slice(i, i + 3));
      out = '';
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (hung) break;
        if (line === 'prompt') out += 'master> ';
        else if (line === 'hang') hung = true;
        else if (line === 'bye') {
          flush();
          socket.end();
          return;
        } else out += `${line === 'empty' ? '' : `answer to ${line}\nmaster of none> still text\n`}\nmaster> `;
      }
      flush();
    });
    socket.on('error', () => undefined);
  });
  return new Promise((resolve) => server.listen(path, () => resolve({ server, connections: () => connections })));
}

describe('CliSession', () => {
  let dir: string;
  let double: Awaited<ReturnType<typeof framingDouble>>;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-cli-'));
    double = await framingDouble(join(dir, 'master.sock'));
  });

  after(async () => {
    await new Promise((resolve) => double.server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('pipelines commands over one connection and hands each its own answer', async () => {
    const session = new CliSession(join(dir, 'master.sock'));
    const before = double.connections();
    const replies = await Promise.all(['a', 'empty', 'b', 'c'].map((c) => session.send(c)));
    assert.deepEqual(replies, ['answer to a\nmaster of none> still text\n\n', '\n', 'answer to b\nmaster of none> still text\n\n', 'answer to c\nmaster of none> still text\n\n']);
    assert.equal(await session.send('d'), 'answer to d\nmaster of none> still text\n\n');
    assert.equal(double.connections() - before, 1);
    session.close();
  });

  it('fails the commands waiting when the connection closes, and connects again for the next', async () => {
    const session = new CliSession(join(dir, 'master.sock'));
    const before = double.connections();
    const results = await Promise.allSettled([session.send('a'), session.send('bye'), session.send('lost')]);
    assert.equal(results[0]!.status, 'fulfilled');
    assert.equal(results[2]!.status, 'rejected');
    assert.match(String((results[2] as PromiseRejectedResult).reason), /closed the CLI connection/);
    assert.equal(await session.send('again'), 'answer to again\nmaster of none> still text\n\n');
    assert.equal(double.connections() - before, 2);
    session.close();
  });

  it('gives up on an answer that does not come, failing what waits behind it', async () => {
    const session = new CliSession(join(dir, 'master.sock'), { timeoutMs: 100 });
    const results = await Promise.allSettled([session.send('hang'), session.send('behind')]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    assert.match(String((results[0] as PromiseRejectedResult).reason), /no answer to "hang" within 100 ms/);
    assert.equal(await session.send('after'), 'answer to after\nmaster of none> still text\n\n');
    session.close();
  });

  it('gives up on an answer that does not come while further commands keep being sent', async () => {
    // Each command sent after it must not give the oldest one a fresh timeout.
    const session = new CliSession(join(dir, 'master.sock'), { timeoutMs: 150 });
    const started = Date.now();
    const hung = session.send('hang').then(
      () => Infinity,
      () => Date.now() - started,
    );
    const behind: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      behind.push(session.send(`behind-${i}`).catch(() => undefined));
      await new Promise((r) => setTimeout(r, 40));
    }
    const failedAfter = await hung;
    await Promise.all(behind);
    assert.ok(failedAfter < 400, `the hung command failed ${failedAfter} ms after it was sent, with commands sent every 40 ms behind it`);
    session.close();
  });

  it('refuses a command with a line break, which would be two commands, and a payload that an empty line would cut short', async () => {
    const session = new CliSession(join(dir, 'master.sock'));
    await assert.rejects(session.send('show info\nshutdown'), /line break/);
    await assert.rejects(session.send('set ssl cert a.pem <<\nfirst\n\nshutdown'), /empty line/);
    await assert.rejects(session.send('set ssl cert a.pem <<\nfirst\r\nsecond'), /carriage return/);
    session.close();
  });
});
