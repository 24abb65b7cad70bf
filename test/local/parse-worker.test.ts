import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseManifests } from '../../src/local/manifests.ts';
import { ParseWorker } from '../../src/local/parse-worker.ts';
import { until } from '../support/until.ts';

const service = (i: number) => `apiVersion: v1\nkind: Service\nmetadata: {name: svc-${i}, namespace: demo}\nspec: {ports: [{port: ${80 + (i % 100)}}]}\n`;
const file = (n: number) => Array.from({ length: n }, (_, i) => service(i)).join('---\n');

describe('ParseWorker', () => {
  it('parses a file in its thread as parseManifests does: the objects, their documents, a skipped document, a file that fails', async () => {
    const parser = new ParseWorker();
    try {
      const text = `${file(300)}---\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: ${'x'.repeat(2_000)}}\n`;
      const parsed = await parser.parse('a.yaml', text, 1_000);
      assert.deepEqual(parsed, parseManifests('a.yaml', text, 1_000));
      assert.ok(parsed.ok);
      assert.equal(parsed.objects.length, 300);
      assert.equal(parsed.skipped.length, 1);
      // Within one reply an object and the document that gave it stay one object, as parsed here.
      assert.equal(parsed.documents.gave[0], parsed.objects[0]);
      const broken = await parser.parse('b.yaml', `${service(1)}---\nkind: [unclosed\n`, 1_000_000);
      assert.deepEqual(broken, parseManifests('b.yaml', `${service(1)}---\nkind: [unclosed\n`, 1_000_000));
      assert.equal(broken.ok, false);
    } finally {
      await parser.close();
    }
  });

  it('answers files sent together each with its own result', async () => {
    const parser = new ParseWorker();
    try {
      const results = await Promise.all([10, 1, 50].map((n) => parser.parse(`${n}.yaml`, file(n), 1_000_000)));
      assert.deepEqual(results.map((r) => (r.ok ? r.objects.length : -1)), [10, 1, 50]);
    } finally {
      await parser.close();
    }
  });

  it('stops its thread when no file came for a while, and starts another for the next file', async () => {
    const parser = new ParseWorker({ idleMs: 50 });
    try {
      assert.equal(parser.running, false);
      await parser.parse('a.yaml', file(2), 1_000_000);
      assert.equal(parser.running, true);
      await until('the idle thread to stop', () => (parser.running ? undefined : true), 5_000);
      const again = await parser.parse('a.yaml', file(3), 1_000_000);
      assert.equal(again.ok && again.objects.length, 3);
      assert.equal(parser.running, true);
    } finally {
      await parser.close();
    }
  });

  it('fails a file whose reply cannot be read, and goes on with the next', { timeout: 10_000 }, async () => {
    const parser = new ParseWorker({ thread: new URL('../support/garbled-parse-thread.ts', import.meta.url) });
    try {
      await assert.rejects(parser.parse('a.yaml', file(2), 1_000_000), /the parse thread's reply could not be read/);
      await assert.rejects(parser.parse('b.yaml', file(3), 1_000_000), /the parse thread's reply could not be read/);
      assert.equal(parser.running, true);
    } finally {
      await parser.close();
    }
  });

  it('fails the files it holds when it is closed, and every file after', async () => {
    const parser = new ParseWorker();
    const held = assert.rejects(parser.parse('big.yaml', file(5_000), 1_000_000), /closed/);
    await parser.close();
    await held;
    await assert.rejects(parser.parse('a.yaml', file(1), 1_000_000), /closed/);
    assert.equal(parser.running, false);
  });
});
