import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstSetOf, firstSetsOf, type MainEdit, type RenderedConfig, type ServerSets, sealEdited, sealRendered, shareFirstSets } from '../../src/templating/rendered.ts';

/** A configuration of `backends` backends (many hash pieces), with maps and a certificate beside it. */
function base(backends: number): RenderedConfig {
  let main = 'global\n  maxconn 100\ndefaults\n  mode http\n';
  for (let i = 0; i < backends; i++) main += `backend be_${i}\n  balance roundrobin\n  server s1 10.0.${i % 250}.1:80\n  server s2 10.0.${i % 250}.2:80\n`;
  return sealRendered({ main, maps: { 'hosts.map': 'a.example be_1\n' }, files: { 'errors.http': 'HTTP/1.0 503\n' }, certs: { 'site.pem': 'PEM' } });
}

/** Where backend i's server lines stand in `main`. */
function serversOf(main: string, i: number): { start: number; end: number } {
  const header = main.indexOf(`backend be_${i}\n`);
  const start = main.indexOf('  balance roundrobin\n', header) + '  balance roundrobin\n'.length;
  const next = main.indexOf('\nbackend ', start - 1);
  return { start, end: next < 0 ? main.length : next + 1 };
}

/** A small deterministic generator, so that a failure can be run again. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

const same = (config: RenderedConfig) => sealRendered({ main: config.main, maps: config.maps, files: config.files, certs: config.certs });

describe('sealEdited', () => {
  it('hashes an edited configuration as sealRendered hashes the same files, for 200 random edits of server lines', () => {
    const next = random(7);
    let config = base(500);
    for (let round = 0; round < 200; round++) {
      const count = 1 + Math.floor(next() * 3);
      const chosen = [...new Set(Array.from({ length: count }, () => Math.floor(next() * 500)))].sort((a, b) => a - b);
      const edits: MainEdit[] = chosen.map((i) => {
        const at = serversOf(config.main, i);
        const kind = next();
        // Replace the servers, remove them all, or insert one before them.
        if (kind < 0.5) return { ...at, text: `  server s${round} 10.1.${round % 250}.${i % 250}:80\n` };
        if (kind < 0.7) return { ...at, text: '' };
        return { start: at.start, end: at.start, text: `  server extra${round} 10.2.0.1:80 weight 5\n` };
      });
      const edited = sealEdited(config, edits);
      assert.equal(edited.hash, same(edited).hash, `round ${round}`);
      // Removing the servers of a backend that has none changes nothing.
      assert.equal(edited.hash === config.hash, edited.main === config.main, `round ${round}: equal hashes for equal texts only`);
      config = edited;
    }
  });

  it('hashes insertions just before a piece boundary and at the very start alike', () => {
    const config = base(300);
    // Every backend's header: some of them start a hash piece; insert before each of them.
    const edits: MainEdit[] = [];
    for (let at = config.main.indexOf('\nbackend '); at >= 0; at = config.main.indexOf('\nbackend ', at + 1)) edits.push({ start: at + 1, end: at + 1, text: '  # moved\n' });
    const edited = sealEdited(config, [{ start: 0, end: 0, text: '# head\n' }, ...edits]);
    assert.equal(edited.hash, same(edited).hash);
  });

  it('still hashes correctly an edit that moves a piece boundary (a line starting with a letter, part of a line)', () => {
    const config = base(300);
    const at = serversOf(config.main, 150);
    for (const edit of [
      { ...at, text: 'server flush 10.0.0.9:80\n' },
      { start: at.start + 2, end: at.end - 1, text: 'server s1 10.9.9.9:80' },
      { ...at, text: '  server s1 10.0.0.9:80' },
      { start: at.start, end: serversOf(config.main, 152).end, text: '  server s1 10.0.0.9:80\n' },
    ]) {
      const edited = sealEdited(config, [edit]);
      assert.equal(edited.hash, same(edited).hash, JSON.stringify(edit.text));
    }
  });

  it('works from a configuration sealed in another thread (a structured clone)', () => {
    const config = structuredClone(base(200));
    const edited = sealEdited(config, [{ ...serversOf(config.main, 199), text: '  server s9 10.0.0.9:80\n' }]);
    assert.equal(edited.hash, same(edited).hash);
    assert.equal(edited.main, config.main.replace(/ {2}server s1 10\.0\.199\.1:80\n {2}server s2 10\.0\.199\.2:80\n$/, '  server s9 10.0.0.9:80\n'));
  });

  it('tells apart files that differ only in the auxiliary files, or in where text stands between them', () => {
    const a = sealRendered({ main: 'global\n', maps: { x: 'a' }, files: {}, certs: {} });
    assert.notEqual(a.hash, sealRendered({ main: 'global\n', maps: { x: 'b' }, files: {}, certs: {} }).hash);
    assert.notEqual(a.hash, sealRendered({ main: 'global\n', maps: {}, files: { x: 'a' }, certs: {} }).hash);
    assert.notEqual(a.hash, sealRendered({ main: 'global\na', maps: { x: '' }, files: {}, certs: {} }).hash);
    assert.equal(a.hash, sealRendered({ main: 'global\n', maps: { x: 'a' }, files: {}, certs: {} }).hash);
  });
});

describe('firstSetsOf', () => {
  it("names each backend's first server set, is found once per recorded sets, and is passed on to sets moved in place", () => {
    const set = (backend: string, start: number) => ({ backend, snippet: 'servers', args: '{}', start, end: start + 1, reads: [] });
    const sets: ServerSets = { sets: [set('be_a', 0), set('be_b', 10), set('be_a', 20), set('be_c', 30)], reads: [] };
    const found = firstSetsOf(sets);
    assert.deepEqual([...found], [['be_a', 0], ['be_b', 1], ['be_c', 3]]);
    assert.equal(firstSetsOf(sets), found);
    assert.equal(firstSetOf(sets, 'be_c'), 3);
    assert.equal(firstSetOf(sets, 'be_x'), undefined);
    const moved: ServerSets = { sets: sets.sets.map((s) => ({ ...s, start: s.start + 5, end: s.end + 5 })), reads: [] };
    shareFirstSets(sets, moved);
    assert.equal(firstSetsOf(moved), found);
  });
});
