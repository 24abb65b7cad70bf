import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyPatch, parsePatch } from 'diff';
import { changedRegion, configDiff, diffSummary } from '../../src/haproxy/config-diff.ts';
import { type RenderedFiles, sealRendered } from '../../src/templating/rendered.ts';

const config = (files: Partial<RenderedFiles> & { main: string }) => sealRendered({ maps: {}, files: {}, certs: {}, ...files });

/** Each file of the patch applied to its old text gives its new text (jsdiff reads the patch back). */
function applyAll(text: string, before: Record<string, string>): Record<string, string> {
  const out = { ...before };
  for (const patch of parsePatch(text)) {
    const path = (patch.newFileName === '/dev/null' ? patch.oldFileName : patch.newFileName)!.replace(/^[ab]\//, '');
    const applied = applyPatch(out[path] ?? '', patch);
    assert.notEqual(applied, false, `the hunks of ${path} apply`);
    if (patch.newFileName === '/dev/null') delete out[path];
    else out[path] = applied as string;
  }
  return out;
}

const backends = (n: number, weight = (_i: number) => 10) =>
  `global\n  maxconn 100\ndefaults\n  mode http\n${Array.from({ length: n }, (_, i) => `backend be${i}\n  server s${i} 10.0.0.${i % 250}:80 weight ${weight(i)}\n`).join('')}`;

describe('configDiff', () => {
  it('gives a unified diff of haproxy.cfg and every auxiliary file that reads back to the new configuration', () => {
    const a = config({ main: backends(40), maps: { 'hosts.map': 'a.test be1\nb.test be2\n' }, files: { 'old.lua': 'core.log(1)\n' } });
    const b = config({
      main: backends(40, (i) => (i === 3 || i === 30 ? 20 : 10)),
      maps: { 'hosts.map': 'a.test be1\nb.test be3\nc.test be4\n' },
      files: { 'new.lua': 'core.log(2)' },
    });
    const diff = configDiff(a, b);
    assert.equal(diff.from, a.hash);
    assert.equal(diff.to, b.hash);
    assert.deepEqual(diff.files, [
      { path: 'haproxy.cfg', change: 'modified', added: 2, removed: 2 },
      { path: 'general/new.lua', change: 'added', added: 1, removed: 0 },
      { path: 'general/old.lua', change: 'removed', added: 0, removed: 1 },
      { path: 'maps/hosts.map', change: 'modified', added: 2, removed: 1 },
    ]);
    assert.equal(diff.truncated, false);
    // Two changes 27 backends apart are two hunks, each with three lines of context.
    assert.equal(parsePatch(diff.text)[0]!.hunks.length, 2);
    assert.match(diff.text, /^--- a\/haproxy\.cfg\t[0-9a-f]{12}\n\+\+\+ b\/haproxy\.cfg\t[0-9a-f]{12}\n@@ -9,7 \+9,7 @@\n/m);
    assert.match(diff.text, /^- {2}server s3 10\.0\.0\.3:80 weight 10\n\+ {2}server s3 10\.0\.0\.3:80 weight 20$/m);
    assert.match(diff.text, /^\+core\.log\(2\)\n\\ No newline at end of file$/m);
    const files = { 'haproxy.cfg': a.main, 'maps/hosts.map': a.maps['hosts.map']!, 'general/old.lua': a.files['old.lua']! };
    assert.deepEqual(applyAll(diff.text, files), { 'haproxy.cfg': b.main, 'maps/hosts.map': b.maps['hosts.map'], 'general/new.lua': 'core.log(2)' });
  });

  it('redacts credentials in haproxy.cfg and private keys in files, and scrubs what it is told to', () => {
    const key = (body: string) => `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`;
    const a = config({ main: 'userlist u\n  user admin password $5$oldhash\nbackend b\n  server s 10.0.0.1:80\n', certs: { 'site.pem': key('T0xES0VZ') } });
    const b = config({
      main: 'userlist u\n  user admin password $5$newhash\nbackend b\n  server s 10.0.0.2:80\n  http-request set-header X-Token sekrit-value-42\n  http-request set-header X-Tenant acme-4242-tenant\n',
      certs: { 'site.pem': key('TkVXS0VZ') },
    });
    const diff = configDiff(a, b, { scrub: (t) => t.replaceAll('acme-4242-tenant', '[redacted]') });
    for (const secret of ['oldhash', 'newhash', 'T0xES0VZ', 'TkVXS0VZ', 'sekrit-value-42', 'acme-4242-tenant']) assert.ok(!diff.text.includes(secret), `${secret} is not shown`);
    assert.match(diff.text, /^\+ {2}server s 10\.0\.0\.2:80$/m);
    assert.match(diff.text, /^\+ {2}http-request set-header X-Token \[redacted\]$/m);
    assert.match(diff.text, /^\+ {2}http-request set-header X-Tenant \[redacted\]$/m);
    // The key changed: the file is listed, and what shows of it is the redaction.
    assert.deepEqual(
      diff.files.map((f) => f.path),
      ['haproxy.cfg', 'ssl/site.pem'],
    );
  });

  it('bounds its text at a line boundary and says how much was left out', () => {
    const a = config({ main: backends(400) });
    const b = config({ main: backends(400, () => 5) });
    const diff = configDiff(a, b, { maxBytes: 2048, maxChangedLines: 1000 });
    assert.ok(Buffer.byteLength(diff.text) <= 2048, `${Buffer.byteLength(diff.text)} bytes`);
    assert.equal(diff.truncated, true);
    assert.match(diff.text, /\n… diff cut at 2048 bytes \(\d+ more lines\)\n$/);
    assert.deepEqual(diff.files, [{ path: 'haproxy.cfg', change: 'modified', added: 400, removed: 400 }]);
  });

  it('lists a file whose change is beyond the bound of its work without computing its hunks', () => {
    const a = config({ main: backends(2000) });
    const b = config({ main: backends(2000, () => 7), maps: { 'm.map': 'k v\n' } });
    const started = performance.now();
    const diff = configDiff(a, b, { maxChangedLines: 100 });
    assert.ok(performance.now() - started < 2000);
    assert.deepEqual(diff.files, [
      { path: 'haproxy.cfg', change: 'modified', tooLarge: true },
      { path: 'maps/m.map', change: 'added', added: 1, removed: 0 },
    ]);
    assert.equal(diff.truncated, true);
    assert.ok(!diff.text.includes('haproxy.cfg'));
    assert.equal(diffSummary(diff), 'haproxy.cfg (too many changes to show), maps/m.map (new) +1 -0');
  });

  it('is empty between equal configurations, and lists the files when there is nothing to compare with', () => {
    const a = config({ main: backends(3), maps: { 'hosts.map': 'a b\n' } });
    assert.deepEqual(configDiff(a, a), { from: a.hash, to: a.hash, files: [], text: '', truncated: false });
    assert.equal(diffSummary(configDiff(a, a)), 'no change');
    const first = configDiff(undefined, a);
    assert.equal(first.text, '');
    assert.deepEqual(first.files, [
      { path: 'haproxy.cfg', change: 'added', added: 10, removed: 0 },
      { path: 'maps/hosts.map', change: 'added', added: 1, removed: 0 },
    ]);
  });

  it('diffs changes spread over a large haproxy.cfg section by section, and the hunks read back', () => {
    let seed = 11;
    const random = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    const base = backends(3_000);
    for (let round = 0; round < 8; round++) {
      const sections = base.split(/(?=^backend )/m);
      const edited = [...sections];
      for (let k = 0; k < 12; k++) {
        const at = 1 + random(edited.length - 1);
        const what = (round + k) % 5;
        if (what === 0) edited[at] = edited[at]!.replace('weight 10', 'weight 20');
        else if (what === 1) edited.splice(at, 0, `backend added${round}_${k}\n  server n 10.9.9.9:80\n`);
        else if (what === 2) edited.splice(at, 1);
        else if (what === 3) edited[at] = edited[at]!.replace(/^backend (\S+)/, 'backend $1_renamed');
        else edited[at] = `${edited[at]}  # a comment\n`;
      }
      if (round % 2 === 1) edited.push('backend last\n  server z 10.0.0.1:80');
      const after = edited.join('');
      const diff = configDiff(config({ main: base }), config({ main: after }));
      assert.equal(diff.truncated, false, `round ${round}`);
      assert.equal(applyAll(diff.text, { 'haproxy.cfg': base })['haproxy.cfg'], after, `round ${round}: the hunks read back`);
      const counted = diff.text.split('\n').slice(2);
      assert.deepEqual(diff.files, [
        { path: 'haproxy.cfg', change: 'modified', added: counted.filter((l) => l.startsWith('+')).length, removed: counted.filter((l) => l.startsWith('-')).length },
      ]);
    }
    // One changed line in each of five backends spread over the file: five hunks of one line each.
    const spread = configDiff(config({ main: base }), config({ main: backends(3_000, (i) => (i % 600 === 5 ? 1 : 10)) }));
    assert.deepEqual(spread.files, [{ path: 'haproxy.cfg', change: 'modified', added: 5, removed: 5 }]);
    assert.equal(parsePatch(spread.text)[0]!.hunks.length, 5);
  });

  it('stops at its bound when changes spread over a large haproxy.cfg, without diffing the rest', () => {
    // 10,000 backends with a changed server line in every tenth: far beyond 100 changed lines.
    const a = config({ main: backends(10_000) });
    const b = config({ main: backends(10_000, (i) => (i % 10 === 0 ? 20 : 10)) });
    const regions: number[] = [];
    const diff = configDiff(a, b, { maxChangedLines: 100, onRegion: (lines) => regions.push(lines) });
    assert.deepEqual(diff.files, [{ path: 'haproxy.cfg', change: 'modified', tooLarge: true }]);
    // The diff ends at the region that crossed the bound: about 51 regions of a few lines, not 100,000 lines.
    assert.ok(regions.length > 0 && regions.length <= 60, `${regions.length} regions`);
    assert.ok(regions.every((n) => n < 10), `regions of ${Math.max(...regions)} lines`);
  });

  it('diffs only the region that changed in a large configuration, with the same hunks as a diff of the whole', () => {
    // A deterministic sequence of edits: at the start, in the middle, at the end, with and without a last line break.
    let seed = 7;
    const random = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    const base = backends(3_000);
    for (let round = 0; round < 12; round++) {
      const lines = base.split('\n');
      const at = [0, 1, lines.length - 2, lines.length - 1, random(lines.length)][round % 5]!;
      const edited = [...lines];
      if (round % 3 === 0) edited.splice(at, 1);
      else if (round % 3 === 1) edited.splice(at, 0, `  # inserted ${round}`);
      else edited[at] = `${edited[at]} changed`;
      const after = round % 4 === 3 ? edited.join('\n').replace(/\n$/, '') : edited.join('\n');
      const region = changedRegion(base, after, 3);
      const prefix = base.split('\n').slice(0, region.firstLine).join('\n') + (region.firstLine > 0 ? '\n' : '');
      assert.ok(base.startsWith(prefix) && after.startsWith(prefix), `round ${round}: the common start is whole lines`);
      const suffix = base.slice(prefix.length + region.before.length);
      assert.equal(prefix + region.before + suffix, base);
      assert.equal(prefix + region.after + suffix, after);
      // Two changes (one line, and the last line break) make a region from one to the other.
      if (round % 4 !== 3) assert.ok(region.before.length + region.after.length < 2_000, `round ${round}: a small region (${region.before.length} + ${region.after.length})`);
      const diff = configDiff(config({ main: base }), config({ main: after }));
      assert.equal(applyAll(diff.text, { 'haproxy.cfg': base })['haproxy.cfg'], after, `round ${round}: the hunks read back`);
    }
  });
});
