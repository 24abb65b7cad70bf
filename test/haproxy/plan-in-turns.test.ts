/**
 * A deployment plan run in turns (as haprx local runs it): the same plan as run at once,
 * with the event loop turning between its parts once they take their budget.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planDeployment, planDeploymentSteps } from '../../src/haproxy/plan.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import { runInTurns } from '../../src/turns.ts';
import { turnCounter } from '../support/turn-counter.ts';

const hosts = (n: number, extra: string[] = []) => [...Array.from({ length: n }, (_, i) => `h${i}.example be_web`), ...extra].join('\n') + '\n';
function config(map: string, server = '10.0.0.1') {
  const main = `global\n  stats socket /var/run/haproxy.sock\ndefaults\n  mode http\nfrontend http\n  bind :80\n  use_backend %[req.hdr(host),map(/etc/haproxy/maps/hosts.map)]\nbackend be_web\n  server s1 ${server}:80\n`;
  return sealRendered({ main, maps: { 'hosts.map': map }, files: {}, certs: {} });
}

describe('a deployment plan run in turns', () => {
  it('gives the plan it gives at once, and lets the event loop turn between its parts', async () => {
    const before = config(hosts(2_000));
    const after = config(hosts(2_000, ['new.example be_web']), '10.0.0.2');
    const whole = planDeployment(before, after);
    assert.equal(whole.kind, 'runtime');
    const counter = turnCounter();
    const inTurns = await runInTurns(planDeploymentSteps(before, after), 0);
    const turns = counter.stop();
    assert.deepEqual(inTurns, whole);
    assert.ok(turns >= 4, `${turns} turns: the configurations, the sections and each map file read apart`);
  });

  it('parses and pairs the sections of a large configuration in parts: a new backend among 8,000', async () => {
    const backends = (names: string[]) => names.map((n) => `backend ${n}\n  server s1 10.0.${n.length % 250}.1:80\n`).join('');
    const names = Array.from({ length: 8_000 }, (_, i) => `be_${String(i).padStart(5, '0')}`);
    const large = (list: string[]) => sealRendered({ main: `global\ndefaults\n  mode http\nfrontend http\n  bind :80\n  use_backend %[req.hdr(host),lower]\n${backends(list)}`, maps: {}, files: {}, certs: {} });
    const before = large(names);
    const after = large([...names.slice(0, 4_000), 'be_new', ...names.slice(4_000)]);
    const whole = planDeployment(before, after);
    assert.deepEqual(whole.kind === 'reload' && whole.reasons, ['backend be_new is new']);
    const counter = turnCounter();
    const inTurns = await runInTurns(planDeploymentSteps(large(names), large([...names.slice(0, 4_000), 'be_new', ...names.slice(4_000)])), 0);
    const turns = counter.stop();
    assert.deepEqual(inTurns, whole);
    // 16k lines of each configuration parsed in parts, the sections keyed and paired in parts of 2,000: no backend changed.
    assert.ok(turns >= 12, `${turns} turns`);
  });

  it('compares a large map file in parts: its entries read, checked for duplicates, indexed and compared apart', async () => {
    const before = config(hosts(20_000));
    const after = config(hosts(20_000, ['new.example be_web']));
    const whole = planDeployment(before, after);
    assert.deepEqual(whole.kind === 'runtime' && whole.ops.map((op) => op.kind), ['map-add']);
    const counter = turnCounter();
    const inTurns = await runInTurns(planDeploymentSteps(before, config(hosts(20_000, ['new.example be_web']))), 0);
    const turns = counter.stop();
    assert.deepEqual(inTurns, whole);
    // The configurations and sections, each file read (2), then each pass over 20k entries apart (3 for a map in which order decides nothing).
    assert.ok(turns >= 10, `${turns} turns`);
  });

  it('takes no turn while the work fits its budget', async () => {
    const counter = turnCounter();
    const plan = await runInTurns(planDeploymentSteps(config(hosts(3)), config(hosts(3), '10.0.0.2')), 60_000);
    assert.equal(counter.stop(), 0);
    assert.equal(plan.kind, 'runtime');
  });
});
