import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ChildRunner, runChild } from '../../src/haproxy/child-run.ts';

/** A runner for the Validator that records the haproxy.cfg of every check it runs with the real haproxy. */
export function recordedChecks(): { mains: string[]; runner: ChildRunner } {
  const mains: string[] = [];
  const runner: ChildRunner = async (request, signal) => {
    mains.push(await readFile(join(request.cwd!, 'haproxy.cfg'), 'utf8'));
    return runChild(request, signal);
  };
  return { mains, runner };
}
