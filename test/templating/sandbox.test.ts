/**
 * Templates run in the template realm: no Node.js modules, no process, no file system,
 * no code made from strings, nothing of the controller's realm reachable from what
 * they are handed, and a time limit. Every escape below ends in a failed render or a
 * harmless value; a probe variable shows that none reached the process.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { afterEach, describe, it } from 'node:test';
import { type RenderResult, renderTemplates } from '../../src/templating/engine.ts';
import { compileErrors, compiled, service, storeOf } from './support.ts';

const PROBE = 'HAPRX_SANDBOX_PROBE';
const services = storeOf('services', [service('shop', 'web', 80)]);
const input = { resources: { services }, values: { port: 80, nested: { list: [1] } } };

function render(main: string, timeoutMs?: number): RenderResult {
  return renderTemplates(compiled({ main, snippets: { s: '<%= 1 %>' } }), input, { ...(timeoutMs !== undefined && { timeoutMs }) });
}

/** The render failed with a message matching `pattern`, and no escape reached the process. */
function blocked(main: string, pattern: RegExp): void {
  const result = render(main);
  assert.equal(process.env[PROBE], undefined, `escaped: ${main}`);
  assert.equal(result.ok, false, `${main} rendered ${result.ok ? JSON.stringify(result.config.main) : ''}`);
  assert.match((result as { error: { message: string } }).error.message, pattern);
}

afterEach(() => {
  delete process.env[PROBE];
});

describe('the template sandbox', () => {
  it('has no require, process, module, timers or console, on the global or anywhere', () => {
    const result = render('<%- [typeof require, typeof process, typeof module, typeof globalThis.process, typeof setTimeout, typeof queueMicrotask, typeof console, typeof Buffer, typeof fetch, typeof WebAssembly, typeof SharedArrayBuffer, typeof Promise, typeof Array.fromAsync].join() %>');
    assert.ok(result.ok);
    assert.equal(result.config.main, Array(13).fill('undefined').join());
    blocked("<% require('node:child_process').execSync('true') %>", /ReferenceError: require is not defined/);
    blocked(`<% process.env.${PROBE} = 'escaped' %>`, /ReferenceError: process is not defined/);
  });

  it('has no gc, even in a process that exposes it (--expose-gc)', () => {
    const engine = new URL('../../src/templating/engine.ts', import.meta.url).href;
    const script = `const { renderTemplates, compileTemplates } = await import(${JSON.stringify(engine)});
      const c = compileTemplates({ main: '<%- [typeof gc, typeof globalThis.gc].join() %>' });
      const r = renderTemplates(c.templates, { resources: {}, values: {} });
      process.stdout.write(typeof gc + ' ' + r.config.main);`;
    const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(out, 'function undefined,undefined');
  });

  it('refuses import() and asynchronous code when it compiles, at the line', () => {
    const [error] = compileErrors({ main: "global\n<% import('node:child_process').then((m) => m.execSync('true')) %>\n" });
    assert.deepEqual([error!.template, error!.line, error!.message], ['haproxy.cfg', 2, 'import() is not available in templates']);
    assert.match(compileErrors({ main: '<% const f = async () => 1 %>' })[0]!.message, /async functions are not available/);
    assert.match(compileErrors({ snippets: { s: 'a\n\n<% (function* () {})(); (async function () { await 1 })() %>' }, main: '' })[0]!.message, /async functions are not available/);
    // A keyword spelt with escapes is no keyword: the checked words cannot be hidden that way.
    for (const hidden of ["<% imp\\u006frt('node:fs') %>", '<% const f = \\u0061sync () => 1 %>', '<% (async () => { aw\\u0061it 1 })() %>'])
      assert.ok(compileErrors({ main: hidden }).length > 0, `${hidden} compiled`);
  });

  it('makes no code from strings, whatever constructor a template reaches', () => {
    const escapes = [
      // The realm's own Function, through the global and through literals.
      "globalThis.constructor.constructor('return process')()",
      "({}).constructor.constructor('return process')()",
      "Function('return process')()",
      "(() => {}).constructor('return process')()",
      "eval('process')",
      // What the controller hands in: helpers, include, data, values, lists, helper results.
      "h.word.constructor('return process')()",
      "include.constructor('return process')()",
      "Object.getPrototypeOf(h.isIP).constructor('return process')()",
      "resources.services.list().constructor.constructor('return process')()",
      "resources.services.first('shop', 'web').metadata.constructor.constructor('return process')()",
      "resources.constructor.constructor('return process')()",
      "resources.services.list.constructor('return process')()",
      "values.nested.list.constructor.constructor('return process')()",
      "h.sortBy([{ a: 1 }], 'a').constructor.constructor('return process')()",
      "h.htpasswd('u:$5$a$b').users.constructor.constructor('return process')()",
      "h.groupBy([{ a: 1 }], 'a')[0].constructor.constructor('return process')()",
      // What the controller throws, and what it hands to a template's callbacks.
      "(() => { try { h.fail('x') } catch (e) { return e.constructor.constructor('return process')() } })()",
      "(() => { try { h.b64decode({}) } catch (e) { return e.constructor.constructor('return process')() } })()",
      "(() => { try { include('nope') } catch (e) { return e.fault.constructor.constructor('return process')() } })()",
      "(() => { try { resources.missing } catch (e) { return e.constructor.constructor('return process')() } })()",
      "h.sortBy([{ a: 1 }, { a: 2 }], (item) => item.constructor.constructor('return process')())",
      "h.once('k', function () { return this.constructor.constructor('return process')() })",
    ];
    for (const expression of escapes) blocked(`<% (${expression}).env.${PROBE} = 'escaped' %>`, /EvalError: Code generation from strings disallowed|TypeError|ReferenceError: eval is not defined|unknown resource set "constructor"/);
    // Strict mode: `this` is undefined in a template, and callers cannot be walked.
    blocked(`<% this.constructor.constructor('return process')().env.${PROBE} = 1 %>`, /TypeError: Cannot read properties of undefined/);
    blocked('<% (function f() { return f.caller })() %>', /TypeError: 'caller'/);
  });

  it('freezes the built-ins, so a render cannot change what the next one, or the controller, runs', () => {
    blocked('<% Object.prototype.polluted = 1 %>', /TypeError: Cannot add property polluted/);
    blocked('<% Array.prototype.map = () => [] %>', /TypeError/);
    blocked('<% Error.prepareStackTrace = (e, frames) => frames %>', /TypeError/);
    blocked('<% JSON.parse = () => 1 %>', /TypeError/);
    const after = render('<%- [({}).polluted, [1].map((x) => x + 1)[0], typeof Error.prepareStackTrace].join() %>');
    assert.ok(after.ok);
    assert.equal(after.config.main, ',2,undefined');
    assert.equal(({} as { polluted?: unknown }).polluted, undefined);
    // Objects a template makes are its own to change, built-in names included.
    const own = render("<% const e = new Error('x'); e.name = 'Mine'; const o = {}; o.toString = () => 'o' %><%- e.name + String(o) %>");
    assert.ok(own.ok, JSON.stringify(!own.ok && own.error));
    assert.equal(own.config.main, 'Mineo');
  });

  it('stops an endless loop at the time limit, naming the template, and the next render runs', () => {
    const started = Date.now();
    const loop = render('global\n<% while (true) {} %>', 200);
    assert.ok(Date.now() - started < 5_000);
    assert.deepEqual(loop, { ok: false, error: { template: 'haproxy.cfg', message: 'stopped after the render time limit of 200 ms (a loop that does not end?)' } });
    const inSnippet = renderTemplates(compiled({ main: "<%- include('spin') %>", snippets: { spin: '<% for (;;) {} %>' } }), input, { timeoutMs: 100 });
    assert.deepEqual(inSnippet.ok ? undefined : inSnippet.error.template, 'snippets/spin');
    // A regular expression that backtracks without end, a loop in a helper's callback.
    for (const main of ["<% /^(a+)+$/.test('a'.repeat(40) + '!') %>", "<% h.sortBy([1, 2], () => { for (;;) {} }) %>"]) {
      const stopped = render(main, 100);
      assert.equal(stopped.ok, false, main);
      assert.match((stopped as { error: { message: string } }).error.message, /time limit of 100 ms/);
    }
    const fine = render('ok <%= values.port %>');
    assert.ok(fine.ok);
    assert.equal(fine.config.main, 'ok 80');
  });
});
