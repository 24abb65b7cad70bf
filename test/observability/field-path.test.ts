/** The path language of /debug/vars?field=: what it selects, what it refuses, and that no query is slow. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_PATH_LENGTH, parseFieldPath, selectPath } from '../../src/observability/field-path.ts';
import { DebugState } from '../../src/observability/debug-state.ts';
import { ReconcileLifecycle } from '../../src/observability/lifecycle.ts';

const doc = {
  resources: { ingresses: 3, services: 2 },
  rendered: { files: { 'haproxy.cfg': 'global', 'maps/exact.map': 'a b' } },
  events: [
    { type: 'Rendered', level: 'debug' },
    { type: 'ValidationFailed', level: 'error' },
  ],
};

function select(path: string): unknown[] {
  const parsed = parseFieldPath(path);
  if (!parsed.ok) throw new Error(parsed.message);
  return selectPath(doc, parsed.steps);
}

function refusal(path: string): string {
  const parsed = parseFieldPath(path);
  assert.equal(parsed.ok, false, `${path} should be refused`);
  return (parsed as { message: string }).message;
}

describe('field paths', () => {
  it('walks names, quoted keys, indexes and wildcards', () => {
    assert.deepEqual(select('$'), [doc]);
    assert.deepEqual(select('$.resources'), [{ ingresses: 3, services: 2 }]);
    assert.deepEqual(select('resources.services'), [2], 'a leading $. may be left out');
    assert.deepEqual(select("$.rendered.files['haproxy.cfg']"), ['global']);
    assert.deepEqual(select('$.rendered.files["maps/exact.map"]'), ['a b']);
    assert.deepEqual(select("$['rendered']['files']['it\\'s']"), []);
    assert.deepEqual(select('$.events[1].type'), ['ValidationFailed']);
    assert.deepEqual(select('$.events[*].type'), ['Rendered', 'ValidationFailed']);
    assert.deepEqual(select('$.resources.*'), [3, 2]);
    assert.deepEqual(select('$.events[7]'), []);
    assert.deepEqual(select('$.nothing.here'), []);
    assert.deepEqual(select('$.resources.ingresses.deeper'), [], 'a number has no keys');
  });

  it('never reaches inherited properties', () => {
    assert.deepEqual(select('$.constructor'), []);
    assert.deepEqual(select('$.resources.__proto__'), []);
    assert.deepEqual(select('$.events.map'), []);
  });

  it('refuses filters, scripts, regular expressions, slices and recursive descent, saying where', () => {
    assert.match(refusal('$.events[?(@.level=="error")]'), /filters, scripts and slices are not supported at character 10/);
    assert.match(refusal('$..type'), /recursive descent/);
    assert.match(refusal('$.events[(@.length-1)]'), /not supported/);
    assert.match(refusal('$.events[0:1]'), /expected '\]'/);
    assert.match(refusal('$.a.match(/x/)'), /unexpected "\(" at character 10/);
    assert.match(refusal("$['open"), /unterminated string/);
    assert.match(refusal('x'.repeat(MAX_PATH_LENGTH + 1)), /longer than/);
    assert.match(refusal(`$${'.a'.repeat(40)}`), /more than 32 steps/);
  });

  it('answers a query that once held the event loop for seconds in well under 50 ms', () => {
    // The nested-regex filter that made a JSONPath evaluator backtrack exponentially.
    const nested = (depth: number): string => (depth === 0 ? 'a' : `(${nested(depth - 1)})+`);
    const pathological = `$..[?(@.msg && @.msg.match(/^${nested(26)}$/))]`;
    const state = new DebugState({ lifecycle: new ReconcileLifecycle(), resourceCounts: () => new Map([['ingresses', 1]]), now: () => 0, stallAfterMs: 1_000, recentEvents: 10, scrub: (t) => t });
    for (let i = 0; i < 10; i++) state.record({ type: 'ConfigAccepted', generation: i }, { level: 'info', msg: `${'a'.repeat(40)}!`, fields: {} }, 0);
    const t0 = performance.now();
    const answer = state.select(pathological);
    const worstWalk = state.select(`$${'[*]'.repeat(32)}`);
    const took = performance.now() - t0;
    assert.equal(answer.ok, false);
    assert.equal(worstWalk.ok, true);
    assert.ok(took < 50, `took ${took.toFixed(1)} ms`);
    assert.deepEqual(state.select('$.resources'), { ok: true, value: [{ ingresses: 1 }] });
  });
});
