import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type RenderedConfig, type ServerSet, sealRendered, serverLines } from '../../src/templating/rendered.ts';
import { heapAfterGc } from '../support/heap.ts';

/** A configuration of `backends` backends, each with its server lines recorded; `filler` pads the text. */
function config(backends: number, tag: string, filler = ''): RenderedConfig {
  let main = `global\n${filler}`;
  const sets: ServerSet[] = [];
  for (let i = 0; i < backends; i++) {
    main += `backend be_${i}\n`;
    const lines = `  server s1 10.0.${i}.1:80 # ${tag}\n  server s2 10.0.${i}.2:80\n`;
    sets.push({ backend: `be_${i}`, snippet: 'servers', args: '{}', start: main.length, end: main.length + lines.length, reads: [] });
    main += lines;
  }
  return sealRendered({ main, maps: {}, files: {}, certs: {} }, { sets, reads: [] });
}

describe('serverLines', () => {
  it('gives the lines of each backend the render recorded, and nothing for others', () => {
    const c = config(3, 'a');
    assert.equal(serverLines(c, 'be_1'), '  server s1 10.0.1.1:80 # a\n  server s2 10.0.1.2:80\n');
    assert.equal(serverLines(c, 'be_2'), '  server s1 10.0.2.1:80 # a\n  server s2 10.0.2.2:80\n');
    assert.equal(serverLines(c, 'be_9'), undefined);
    assert.equal(serverLines(sealRendered({ main: 'global\n', maps: {}, files: {}, certs: {} }), 'be_1'), undefined);
  });

  it('keeps no configuration text alive through the lines it gave', () => {
    const kept: (string | undefined)[] = [];
    const before = heapAfterGc();
    // 40 configurations of 1 MiB of text each; one backend's lines kept from each.
    for (let i = 0; i < 40; i++) kept.push(serverLines(config(2, `c${i}`, `# ${String(i).repeat(512 * 1024)}\n`), 'be_1'));
    const grown = heapAfterGc() - before;
    assert.equal(kept.length, 40);
    assert.ok(kept.every((lines, i) => lines?.includes(`# c${i}\n`)));
    assert.ok(grown < 8 * 1024 * 1024, `the heap grew by ${Math.round(grown / 1024 / 1024)} MiB for 40 kept lines`);
  });
});
