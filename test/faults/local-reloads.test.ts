/**
 * Reloads and runtime changes under traffic: keep-alive and new-connection clients keep
 * sending through a real haproxy, driven by the local target with the shipped templates,
 * while it reloads 20 times and takes 20 runtime changes. Not one request may fail.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { renderOnce } from '../../src/cli/render-once.ts';
import { LocalTarget } from '../../src/local/target.ts';
import { startEcho } from '../support/echo-backend.ts';
import { manifest } from '../support/local-haprx.ts';
import { freePort } from '../support/ports.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

const { service, slice, ingress } = manifest;

/** One GET; resolves with a failure description, or undefined when the answer was a 200. */
function probe(port: number, agent: Agent | false): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: 'shop.test' }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? undefined : `status ${res.statusCode}`));
      res.on('error', (err) => resolve(`${(err as NodeJS.ErrnoException).code ?? err.message} in the body`));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
    req.end();
  });
}

describe('zero failed requests across reloads and runtime changes (real haproxy, shipped templates)', () => {
  let dir: string;
  let manifests: string;
  let port: number;
  let target: LocalTarget;
  const echo: Awaited<ReturnType<typeof startEcho>>[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-reloads-'));
    manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await cp(join(ROOT, 'templates'), join(dir, 'templates'), { recursive: true });
    port = await freePort();
    for (const name of ['web1', 'web2', 'web3', 'web4']) echo.push(await startEcho(name));
    target = new LocalTarget({ bin: 'haproxy', stateDir: join(dir, 'state') });
  });

  after(async () => {
    await target.stop();
    await Promise.all(echo.map((e) => e.close()));
    await rm(dir, { recursive: true, force: true });
  });

  const deploy = async () => {
    const rendered = await renderOnce(manifests, join(dir, 'templates'), { httpPort: port, bindAddress: '127.0.0.1' });
    assert.ok(rendered.ok, JSON.stringify(rendered));
    const outcome = await target.deploy(rendered.config);
    assert.ok(outcome.ok, outcome.error);
    return outcome;
  };

  it('keeps keep-alive and new-connection clients free of errors through 20 reloads and 20 runtime changes', async (t) => {
    const slices = (ports: number[]) => ports.map((p, i) => slice(`web-${i}-${p}`, 'web', p)).join('---\n');
    await writeFile(join(manifests, 'web.yaml'), [service('web'), ingress('shop', 'shop.test', 'web')].join('---\n'));
    await writeFile(join(manifests, 'slices.yaml'), slices([echo[0]!.port, echo[1]!.port]));
    assert.equal((await deploy()).reloaded, true, 'started');

    const keepAlive = new Agent({ keepAlive: true, maxSockets: 4 });
    const failures: string[] = [];
    let sent = 0;
    let running = true;
    const client = async (agent: Agent | false) => {
      while (running) {
        sent++;
        const failure = await probe(port, agent);
        if (failure) failures.push(failure);
      }
    };
    const clients = [client(keepAlive), client(keepAlive), client(keepAlive), client(false), client(false)];

    let reloads = 0;
    let runtime = 0;
    const started = Date.now();
    for (let step = 1; step <= 20; step++) {
      // A new Service with its own backend: a reload.
      await writeFile(join(manifests, `extra-${step}.yaml`), [service(`extra-${step}`), slice(`extra-${step}`, `extra-${step}`, echo[3]!.port), ingress(`extra-${step}`, `extra-${step}.test`, `extra-${step}`)].join('---\n'));
      if ((await deploy()).reloaded) reloads++;
      await new Promise((r) => setTimeout(r, 100));
      // web's endpoints change: servers added and removed at runtime.
      await writeFile(join(manifests, 'slices.yaml'), slices([echo[0]!.port, echo[step % 2 === 0 ? 1 : 2]!.port]));
      const outcome = await deploy();
      if (!outcome.reloaded && outcome.runtimeOps > 0) runtime++;
      await new Promise((r) => setTimeout(r, 100));
    }
    running = false;
    await Promise.all(clients);
    keepAlive.destroy();
    const seconds = (Date.now() - started) / 1000;
    const counts = new Map<string, number>();
    for (const f of failures) counts.set(f, (counts.get(f) ?? 0) + 1);
    t.diagnostic(`${sent} requests over ${seconds.toFixed(1)} s, ${reloads} reloads, ${runtime} runtime changes, ${failures.length} failed ${JSON.stringify([...counts])}`);
    assert.equal(reloads, 20);
    assert.equal(runtime, 20);
    assert.ok(sent > 200, `${sent} requests`);
    assert.deepEqual(failures, []);
  });
});
