/**
 * What a change of certificates only costs, with a certificate per host (EC P-256, as
 * TLS=1 npm run bench:render makes them), at 1k and 10k certificates:
 *
 * - validation: `haproxy -c` on the whole render, against the certificate check that a
 *   render differing from a passed one only in certificates gets (a new host's
 *   certificate and crt-list line, a renewal, a host removed);
 * - deployment in `haprx local` (LocalTarget, a real haproxy): the same changes at
 *   runtime, against a reload on the same files (the crt-list's first line changed).
 *
 *   npm run bench:certificates   (SIZES=1000,10000 RUNS=3)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '../src/haproxy/validate.ts';
import { LocalTarget } from '../src/local/target.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { freePort } from '../test/support/ports.ts';
import { routingConfig } from '../test/support/routing-config.ts';
import { tlsPairs } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 3);
const root = new URL('..', import.meta.url).pathname;

const file = (i: number) => `c${String(i).padStart(6, '0')}.pem`;
const range = (a: number, b: number) => `${Math.round(a)}–${Math.round(b)}`;

const rows: Record<string, unknown>[] = [];
for (const n of SIZES) {
  // n certificates in the crt-list, and two more: the host that comes and goes, and a renewal.
  const pairs = await tlsPairs(n + 2);
  const pem = (i: number) => pairs[i]!.crt + pairs[i]!.key;
  const [port, tlsPort] = [await freePort(), await freePort()];
  /** The certificates `ids` in one crt-list, host h<i>.bench each; `renewed` gets the spare certificate. */
  const render = (ids: readonly number[], renewed?: number): RenderedConfig => {
    const certs: Record<string, string> = {};
    for (const i of ids) certs[file(i)] = pem(i === renewed ? n + 1 : i);
    certs['https.crtlist'] = ids.map((i) => `ssl/${file(i)} h${i}.bench\n`).join('');
    return routingConfig(port, { be_a: [{ name: 's1', port: 1 }] }, { 'x.test': 'be_a' }, {
      extra: ['frontend fe_tls', `  bind 127.0.0.1:${tlsPort} ssl crt-list ssl/https.crtlist`, '  default_backend be_a'].join('\n'),
      certs,
    });
  };
  const base = Array.from({ length: n }, (_, i) => i);
  const changes = [render([...base, n]), render([...base, n], 5), render(base, 5), render(base)];

  const validator = new Validator({ haproxyBin: 'haproxy', timeoutMs: 120_000, cacheSize: 0 });
  const whole: number[] = [];
  const apart: number[] = [];
  const time = async (config: RenderedConfig, into: number[], expect: boolean) => {
    const t0 = performance.now();
    const result = await validator.validate(config);
    into.push(performance.now() - t0);
    if (!result.ok || (result.partial === 'certificates') !== expect) throw new Error(`validation at ${n}: ${JSON.stringify(result).slice(0, 300)}`);
  };
  await time(render(base), whole, false);
  for (let run = 0; run < RUNS; run++) {
    // Each change differs: no verdict is remembered between runs.
    await time(render([...base, n], run % 2 === 0 ? 5 : undefined), apart, true);
    await time(render(base, run % 2 === 0 ? undefined : 5), apart, true);
  }
  const fresh = new Validator({ haproxyBin: 'haproxy', timeoutMs: 120_000 });
  const t0 = performance.now();
  if (!(await fresh.validate(changes[0]!)).ok) throw new Error('the new host did not pass haproxy -c');
  whole.push(performance.now() - t0);

  const state = await mkdtemp(join(tmpdir(), 'haprx-bench-certs-'));
  const target = new LocalTarget({ bin: 'haproxy', stateDir: state });
  const deploy = async (config: RenderedConfig, reloaded: boolean) => {
    const t = performance.now();
    const outcome = await target.deploy(config);
    if (!outcome.ok || outcome.reloaded !== reloaded) throw new Error(`deployment at ${n}: ${JSON.stringify(outcome)}`);
    return performance.now() - t;
  };
  try {
    const startMs = await deploy(render(base), true);
    const runtime: number[] = [];
    for (let run = 0; run < RUNS; run++) for (const config of changes) runtime.push(await deploy(config, false));
    // The same new host as the crt-list's first line: its certificate becomes the default one, a reload.
    const reloadMs = await deploy(render([n, ...base]), true);
    rows.push({
      certificates: n,
      'haproxy -c, whole render ms': range(Math.min(...whole), Math.max(...whole)),
      'certificate check ms': range(Math.min(...apart), Math.max(...apart)),
      'haproxy start ms': Math.round(startMs),
      'runtime deployment ms': range(Math.min(...runtime), Math.max(...runtime)),
      'reload deployment ms': Math.round(reloadMs),
    });
  } finally {
    await target.stop();
    await rm(state, { recursive: true, force: true });
  }
}
console.table(rows);
await mkdir(`${root}bench/results`, { recursive: true });
await writeFile(`${root}bench/results/certificates.json`, `${JSON.stringify(rows, null, 2)}\n`);
