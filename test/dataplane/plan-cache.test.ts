/**
 * The plans a fleet's targets share: each pair of configurations planned once, in turns
 * of the event loop (at 10k backends a plan held it for 67–126 ms at once), and a plan
 * that failed planned again on the next ask.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PlanCache } from '../../src/dataplane/plan-cache.ts';
import { planDeployment } from '../../src/haproxy/plan.ts';
import { runSteps } from '../../src/steps.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import { turnCounter } from '../support/turn-counter.ts';

const hosts = (n: number, extra: string[] = []) => [...Array.from({ length: n }, (_, i) => `h${i}.example be_web`), ...extra].join('\n') + '\n';
const main = (server: string) => `global\n  stats socket /var/run/haproxy.sock\ndefaults\n  mode http\nfrontend http\n  bind :80\n  use_backend %[req.hdr(host),map(/etc/haproxy/maps/hosts.map)]\nbackend be_web\n  server s1 ${server}:80\n`;
const config = (map: string, server = '10.0.0.1') => sealRendered({ main: main(server), maps: { 'hosts.map': map }, files: {}, certs: {} });

describe('the plans a fleet shares', () => {
  it('plans in turns of the event loop, to the plan made at once', async () => {
    const before = config(hosts(20_000));
    const after = config(hosts(20_000, ['new.example be_web']));
    const whole = planDeployment(config(hosts(20_000)), config(hosts(20_000, ['new.example be_web'])));
    const counter = turnCounter();
    const plan = await new PlanCache({ budgetMs: 0 }).plan(before, after);
    const turns = counter.stop();
    assert.deepEqual(plan, whole);
    assert.ok(turns >= 10, `${turns} turns while a map of 20k entries was compared`);
  });

  it('plans each pair once, however many instances ask at the same time', async () => {
    const cache = new PlanCache({ budgetMs: 0 });
    const before = config(hosts(5_000));
    const after = config(hosts(5_000, ['new.example be_web']));
    const asked = [cache.plan(before, after), cache.plan(before, after), cache.plan(before, after)];
    const [first, ...others] = await Promise.all(asked);
    for (const other of others) assert.equal(other, first, 'the same plan object');
    assert.equal(cache.planned, 1);
    // Another pair is planned apart.
    await cache.plan(after, before);
    assert.equal(cache.planned, 2);
  });

  it('keeps a bounded number of plans, the oldest going first', async () => {
    const cache = new PlanCache({ budgetMs: 10, keep: 2 });
    const configs = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].map((s) => config(hosts(3), s));
    for (let i = 1; i < configs.length; i++) await cache.plan(configs[i - 1]!, configs[i]!);
    assert.equal(cache.planned, 3);
    await cache.plan(configs[2]!, configs[3]!);
    assert.equal(cache.planned, 3, 'the newest pair is kept');
    await cache.plan(configs[0]!, configs[1]!);
    assert.equal(cache.planned, 4, 'the oldest pair was let go');
  });

  it('plans a first deployment (nothing known) without keeping it', async () => {
    const cache = new PlanCache({ budgetMs: 10 });
    const plan = await cache.plan(undefined, config(hosts(3)));
    assert.equal(plan.kind, 'reload');
    await cache.plan(undefined, config(hosts(3)));
    assert.equal(cache.planned, 2);
  });

  it('plans again a pair whose plan failed', async () => {
    let fail = true;
    const cache = new PlanCache({
      budgetMs: 10,
      planSteps: function* (previous, next) {
        yield;
        if (fail) throw new Error('cannot plan');
        return planDeployment(previous, next);
      },
    });
    const before = config(hosts(3));
    const after = config(hosts(3), '10.0.0.2');
    await assert.rejects(cache.plan(before, after), /cannot plan/);
    fail = false;
    const plan = await cache.plan(before, after);
    assert.equal(plan.kind, 'runtime');
    assert.equal(cache.planned, 2);
  });

  it("gives the canary's steps a plan the targets made, without a step, and the targets one the steps made", async () => {
    const cache = new PlanCache({ budgetMs: 0 });
    const before = config(hosts(5_000));
    const after = config(hosts(5_000, ['new.example be_web']));
    // The canary's verdict first, in its own slices: planned once, then kept for the targets.
    const steps = cache.steps(before, after);
    let yields = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) yields++;
    assert.ok(yields > 0, 'planned in steps');
    assert.deepEqual(step.value, planDeployment(before, after));
    assert.equal(await cache.plan(before, after), step.value, 'the targets take the same plan');
    assert.equal(cache.planned, 1);
    // The targets first: the steps end at once with their plan.
    const back = await cache.plan(after, before);
    const again = cache.steps(after, before).next();
    assert.deepEqual({ done: again.done, same: again.value === back }, { done: true, same: true });
    assert.equal(cache.planned, 2);
    // A first deployment is planned each time, as plan() does.
    runSteps(cache.steps(undefined, after));
    runSteps(cache.steps(undefined, after));
    assert.equal(cache.planned, 4);
  });

  it('keeps what the steps planned within the bound', () => {
    const cache = new PlanCache({ budgetMs: 10, keep: 2 });
    const configs = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].map((s) => config(hosts(3), s));
    for (let i = 1; i < configs.length; i++) runSteps(cache.steps(configs[i - 1]!, configs[i]!));
    runSteps(cache.steps(configs[2]!, configs[3]!));
    assert.equal(cache.planned, 3, 'the newest pair is kept');
    runSteps(cache.steps(configs[0]!, configs[1]!));
    assert.equal(cache.planned, 4, 'the oldest pair was let go');
  });
});
