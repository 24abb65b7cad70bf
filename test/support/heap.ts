/**
 * The V8 heap in use after a full collection, for tests that show what a structure
 * keeps alive. Garbage collection is exposed to this process once, on first use.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

export function heapAfterGc(): number {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
  return process.memoryUsage().heapUsed;
}
