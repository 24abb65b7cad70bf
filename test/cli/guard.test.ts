/**
 * In a process of its own, as the commands run: without the guard, either error below
 * ends the process (exit 1); with it, both are reported and the process goes on.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const guard = new URL('../../src/cli/guard.ts', import.meta.url).href;

const script = (guarded: boolean) => `
import { Observable } from 'rxjs';
import { reportStrayErrors } from ${JSON.stringify(guard)};
${guarded ? "reportStrayErrors((where, err) => console.log(`reported from ${where}: ${err.message}`));" : ''}
new Observable((s) => s.next(1)).subscribe(() => { throw new TypeError('a handler broke'); });
void Promise.reject(new Error('nobody awaited this'));
setTimeout(() => console.log('still running'), 200);
`;

async function runScript(guarded: boolean): Promise<{ code: number; stdout: string }> {
  return run(process.execPath, ['--input-type=module', '-e', script(guarded)], { cwd: new URL('../..', import.meta.url).pathname, timeout: 10_000 }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code?: number; stdout?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? '' }),
  );
}

describe('reportStrayErrors', () => {
  it('reports an error thrown in a subscriber and a rejection nobody handled, and the process goes on', async () => {
    const { code, stdout } = await runScript(true);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /reported from a stream subscriber: a handler broke/);
    assert.match(stdout, /reported from a promise: nobody awaited this/);
    assert.match(stdout, /still running/);
  });

  it('is what keeps it running: without it the same errors end the process', async () => {
    const { code, stdout } = await runScript(false);
    assert.notEqual(code, 0);
    assert.doesNotMatch(stdout, /still running/);
  });
});
