import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { heapAfterGc } from '../support/heap.ts';
import { MAX_LINE_WORDS, StructureMemo, checkStructure, fileNameProblem } from '../../src/haproxy/structure.ts';
import { runHaproxyCheck } from '../../src/haproxy/validate.ts';
import type { RenderedFiles } from '../../src/templating/rendered.ts';

const HAPROXY = '/usr/sbin/haproxy';

const HEAD = ['global', 'defaults', '  mode http', '  timeout connect 5s', '  timeout client 5s', '  timeout server 5s'];
const FRONTEND = ['frontend fe', '  bind :8080', '  default_backend be'];
const BACKEND = ['backend be', '  server s1 127.0.0.1:80'];

/** A render whose haproxy.cfg is `global` with `globals`, the defaults of HEAD, then `body`. */
function render(body: string[] = [...FRONTEND, ...BACKEND], aux: Partial<RenderedFiles> = {}, globals: string[] = []): RenderedFiles {
  return { main: [HEAD[0]!, ...globals, ...HEAD.slice(1), ...body, ''].join('\n'), maps: {}, files: {}, certs: {}, ...aux };
}

/** 1-based number of the only line of `text` that contains `marker` (or equals it, when `exact`). */
function lineOf(text: string, marker: string, exact = false): number {
  const lines = text.split('\n');
  const hits = lines.flatMap((l, i) => ((exact ? l === marker : l.includes(marker)) ? [i + 1] : []));
  assert.equal(hits.length, 1, `marker ${JSON.stringify(marker)} must occur on exactly one line`);
  return hits[0]!;
}

const words = (n: number) => `  acl many hdr(host) ${Array.from({ length: n - 3 }, (_, i) => `h${i}`).join(' ')}`;

interface Case {
  name: string;
  files: () => RenderedFiles;
  /** Text on the line phase one must point at. */
  at: string;
  /** The line is exactly `at`. */
  exact?: boolean;
  message: RegExp;
}

// Each rejected example differs from an accepted render by the one mistake the rule is about.
const REJECTED: Case[] = [
  {
    name: 'unterminated double quote',
    files: () => render(['frontend fe', '  bind :8080', '  http-request set-header X "abc', '  default_backend be', ...BACKEND]),
    at: 'set-header X',
    message: /unterminated double quote/,
  },
  {
    name: 'unterminated single quote',
    files: () => render(['frontend fe', '  bind :8080', "  http-request set-header X 'abc", '  default_backend be', ...BACKEND]),
    at: 'set-header X',
    message: /unterminated single quote/,
  },
  {
    name: 'unterminated quote inside a .if block that haproxy skips',
    files: () => render(['.if defined(HAPRX_NEVER_SET)', "  http-request set-header X 'abc", '.endif', ...FRONTEND, ...BACKEND]),
    at: 'set-header X',
    message: /unterminated single quote/,
  },
  {
    name: 'more words on a line than haproxy accepts',
    files: () => render(['frontend fe', '  bind :8080', words(MAX_LINE_WORDS + 1), '  default_backend be', ...BACKEND]),
    at: 'acl many',
    message: /too many words/,
  },
  {
    name: 'line before the first section',
    files: () => ({ ...render(), main: `bind :80\n${render().main}` }),
    at: 'bind :80',
    exact: true,
    message: /'bind' is outside any section/,
  },
  {
    name: 'backend without a name',
    files: () => render([...FRONTEND, ...BACKEND, 'backend']),
    at: 'backend',
    exact: true,
    message: /'backend' section needs a name/,
  },
  {
    name: 'frontend with an empty quoted name',
    files: () => render([...FRONTEND, 'frontend ""', '  bind :8081', ...BACKEND]),
    at: 'frontend ""',
    message: /'frontend' section needs a name/,
  },
  {
    name: 'userlist without a name',
    files: () => render([...FRONTEND, ...BACKEND, 'userlist']),
    at: 'userlist',
    exact: true,
    message: /'userlist' section needs a name/,
  },
  {
    name: 'ring without a name',
    files: () => render([...FRONTEND, ...BACKEND, 'ring', '  size 32764']),
    at: 'ring',
    exact: true,
    message: /'ring' section needs a name/,
  },
  {
    name: 'log-forward without a name (a section the shared parser does not know)',
    files: () => render([...FRONTEND, ...BACKEND, 'log-forward', '  dgram-bind 127.0.0.1:5141', '  log global']),
    at: 'log-forward',
    message: /'log-forward' section needs a name/,
  },
  {
    name: 'character haproxy does not permit in a backend name',
    files: () => render([...FRONTEND, ...BACKEND, 'backend be/x']),
    at: 'backend be/x',
    message: /character '\/' is not permitted in backend name 'be\/x'/,
  },
  {
    name: 'non-ASCII letter in a frontend name',
    files: () => render([...FRONTEND, 'frontend café', '  bind :8081', ...BACKEND]),
    at: 'frontend café',
    message: /character 'é' is not permitted/,
  },
  {
    name: 'two frontends with one name',
    files: () => render([...FRONTEND, 'frontend fe #again', '  bind :8081', ...BACKEND]),
    at: '#again',
    message: /frontend 'fe' has the same name as frontend 'fe'/,
  },
  {
    name: 'two backends with one name',
    files: () => render([...FRONTEND, ...BACKEND, 'backend be #again']),
    at: '#again',
    message: /backend 'be' has the same name as backend 'be'/,
  },
  {
    name: 'listen named like a frontend',
    files: () => render([...FRONTEND, ...BACKEND, 'listen fe', '  bind :8081']),
    at: 'listen fe',
    message: /listen section 'fe' has the same name as frontend 'fe'/,
  },
  {
    name: 'backend named like a listen section',
    files: () => render(['listen li', '  bind :8081', ...FRONTEND, ...BACKEND, 'backend li']),
    at: 'backend li',
    message: /backend 'li' has the same name as listen section 'li'/,
  },
  {
    name: 'default_backend naming no backend',
    files: () => render(['frontend fe', '  bind :8080', '  default_backend nope', ...BACKEND]),
    at: 'default_backend nope',
    message: /default_backend 'nope' names no backend/,
  },
  {
    name: 'default_backend naming a frontend',
    files: () => render(['frontend fe', '  bind :8080', '  default_backend fe', ...BACKEND]),
    at: 'default_backend fe',
    message: /default_backend 'fe' names no backend/,
  },
  {
    name: 'use_backend with a condition naming no backend',
    files: () => render([...FRONTEND, '  use_backend nope if { path_beg /x }', ...BACKEND]),
    at: 'use_backend nope',
    message: /use_backend 'nope' names no backend/,
  },
  {
    name: 'map converter on a map the render lacks',
    files: () => render([...FRONTEND, '  http-request set-var(txn.x) req.hdr(host),map(maps/nope.map)', ...BACKEND]),
    at: 'set-var',
    message: /'maps\/nope\.map' is not among the rendered files/,
  },
  {
    name: 'map_beg with a default value, inside a log-format use_backend',
    files: () => render([...FRONTEND, '  use_backend %[req.hdr(host),lower,map_beg(maps/nope.map,be)]', ...BACKEND]),
    at: 'map_beg',
    message: /'maps\/nope\.map' is not among the rendered files/,
  },
  {
    name: 'quoted map file name in a typed map converter',
    files: () => render([...FRONTEND, '  http-request set-var(txn.x) src,map_ip_int("maps/nope.map",0)', ...BACKEND]),
    at: 'map_ip_int',
    message: /'maps\/nope\.map' is not among the rendered files/,
  },
  {
    name: 'ACL pattern file the render lacks, in an anonymous condition',
    files: () => render([...FRONTEND, '  http-request deny if { req.hdr(host) -f maps/blocked.lst }', ...BACKEND]),
    at: 'blocked.lst',
    message: /'maps\/blocked\.lst' is not among the rendered files/,
  },
  {
    name: 'errorfile the render lacks',
    files: () => render([...FRONTEND, '  errorfile 503 general/503.http', ...BACKEND]),
    at: 'errorfile',
    message: /'general\/503\.http' is not among the rendered files/,
  },
  {
    name: 'http-request return file the render lacks',
    files: () => render([...FRONTEND, '  http-request return status 200 content-type text/plain file general/ok.txt if { path /ok }', ...BACKEND]),
    at: 'general/ok.txt',
    message: /'general\/ok\.txt' is not among the rendered files/,
  },
  {
    name: 'bind certificate the render lacks',
    files: () => render(['frontend fe', '  bind :8443 ssl crt ssl/site.pem', '  default_backend be', ...BACKEND]),
    at: 'crt ssl/site.pem',
    message: /'ssl\/site\.pem' is not among the rendered files/,
  },
  {
    name: 'crt-list the render lacks',
    files: () => render(['frontend fe', '  bind :8443 ssl crt-list ssl/list.txt', '  default_backend be', ...BACKEND]),
    at: 'crt-list',
    message: /'ssl\/list\.txt' is not among the rendered files/,
  },
  {
    name: 'server ca-file the render lacks',
    files: () => render([...FRONTEND, 'backend be', '  server s1 127.0.0.1:443 ssl verify required ca-file ssl/ca.pem']),
    at: 'ca-file',
    message: /'ssl\/ca\.pem' is not among the rendered files/,
  },
  {
    name: 'lua-load of a script the render lacks',
    files: () => render(undefined, {}, ['  lua-load general/x.lua']),
    at: 'lua-load',
    message: /'general\/x\.lua' is not among the rendered files/,
  },
];

// Close calls that haproxy accepts: phase one must stay silent on every one of them.
const ACCEPTED: { name: string; files: () => RenderedFiles }[] = [
  { name: 'the plain base configuration', files: () => render() },
  { name: 'a frontend and a backend sharing a name', files: () => render(['frontend be', '  bind :8080', '  default_backend be', ...BACKEND]) },
  { name: 'default_backend naming a listen section', files: () => render(['frontend fe', '  bind :8080', '  default_backend li', 'listen li', '  bind :8081', '  server s1 127.0.0.1:80']) },
  { name: 'exactly the maximum number of words', files: () => render(['frontend fe', '  bind :8080', words(MAX_LINE_WORDS), '  default_backend be', ...BACKEND]) },
  { name: 'top-level dot directive', files: () => ({ ...render(), main: `.notice "starting"\n${render().main}` }) },
  {
    name: 'orphan line, duplicate and nameless sections inside a .if block haproxy skips',
    files: () => ({
      ...render(),
      main: `.if defined(HAPRX_NEVER_SET)\nbind :80\n.endif\n${render([...FRONTEND, ...BACKEND, '.if defined(HAPRX_NEVER_SET)', 'frontend fe', 'backend', '  errorfile 503 general/none.http', '.endif']).main}`,
    }),
  },
  {
    name: 'default_backend naming a backend defined only inside a .if block that haproxy keeps',
    files: () => render(['frontend fe', '  bind :8080', '  default_backend cond', ...BACKEND, '.if defined(PATH)', 'backend cond', '.endif']),
  },
  {
    name: 'log-forward section first, which the shared parser does not know',
    files: () => ({ ...render(), main: `log-forward lf\n  dgram-bind 127.0.0.1:5141\n  log global\n${render().main}` }),
  },
  { name: 'duplicate names for defaults sections', files: () => ({ ...render(), main: render().main.replace('defaults', 'defaults d\n  mode http\ndefaults d') }) },
  { name: 'a duplicated userlist (haproxy only warns)', files: () => render([...FRONTEND, ...BACKEND, 'userlist u', 'userlist u']) },
  { name: 'dynamic use_backend names', files: () => render([...FRONTEND, '  use_backend %[req.hdr(host),lower]', '  use_backend be_%[src]', ...BACKEND]) },
  {
    name: 'map converters on rendered maps, also in a log-format use_backend',
    files: () =>
      render([...FRONTEND, '  use_backend %[req.hdr(host),lower,map(maps/hosts.map,be)]', '  http-request set-var(txn.x) req.hdr(host),map_beg(maps/hosts.map,be)', ...BACKEND], {
        maps: { 'hosts.map': 'example.com be\n' },
      }),
  },
  { name: 'set-map on a map file that does not exist', files: () => render([...FRONTEND, '  http-request set-map(maps/nope.map) %[src] x', ...BACKEND]) },
  { name: 'a header value that looks like an auxiliary path', files: () => render([...FRONTEND, '  http-request set-header X-Origin general/nope', ...BACKEND]) },
  { name: 'default-server certificate no server uses', files: () => render([...FRONTEND, 'backend be', '  default-server ssl crt ssl/nope.pem verify none']) },
  { name: 'server certificate without ssl', files: () => render([...FRONTEND, 'backend be', '  server s1 127.0.0.1:443 crt ssl/nope.pem']) },
  { name: 'a certificate directory', files: () => render(['frontend fe', '  bind :8443 ssl crt ssl/', '  default_backend be', ...BACKEND], { certs: { 'site.pem': 'CERT' } }) },
  { name: 'a certificate bundle', files: () => render(['frontend fe', '  bind :8443 ssl crt ssl/site.pem', '  default_backend be', ...BACKEND], { certs: { 'site.pem.rsa': 'CERT' } }) },
  {
    name: 'an error file referenced from inside a .if block',
    files: () => render([...FRONTEND, '.if defined(HAPRX_NEVER_SET)', '  errorfile 503 general/nope.http', '.endif', ...BACKEND]),
  },
];

describe('phase one rejects', () => {
  for (const c of REJECTED) {
    test(c.name, () => {
      const files = c.files();
      const problems = checkStructure(files);
      const at = lineOf(files.main, c.at, c.exact);
      assert.ok(
        problems.some((p) => p.file === 'haproxy.cfg' && p.line === at && c.message.test(p.message)),
        `expected a problem at haproxy.cfg:${at} matching ${c.message}, got ${JSON.stringify(problems)}`,
      );
    });
  }
});

describe('phase one accepts', () => {
  for (const c of ACCEPTED) {
    test(c.name, () => {
      assert.deepEqual(checkStructure(c.files()), []);
    });
  }
});

describe('phase one, other rules', () => {
  test('reports every problem, ordered by line', () => {
    const files = render(['frontend fe', '  bind :8080', '  default_backend nope', '  errorfile 503 general/x.http', 'backend']);
    const problems = checkStructure(files);
    assert.deepEqual(
      problems.map((p) => p.line),
      [lineOf(files.main, 'default_backend nope'), lineOf(files.main, 'errorfile'), lineOf(files.main, 'backend', true)],
    );
  });

  test('a crt-base or ca-base directive turns off the checks of the paths it redirects', () => {
    const body = ['frontend fe', '  bind :8443 ssl crt ssl/site.pem ca-file ssl/ca.pem verify required', '  default_backend be', ...BACKEND];
    const crtOnly = render(body, {}, ['  crt-base /etc/haproxy']);
    assert.deepEqual(
      checkStructure(crtOnly).map((p) => p.message),
      ["'ssl/ca.pem' is not among the rendered files"],
    );
    assert.deepEqual(checkStructure(render(body, {}, ['  crt-base /etc/haproxy', '  ca-base /etc/haproxy'])), []);
  });

  test('default-path other than current or config turns off the file checks', () => {
    const body = [...FRONTEND, '  errorfile 503 general/x.http', ...BACKEND];
    assert.equal(checkStructure(render(body, {}, ['  default-path config'])).length, 1);
    assert.deepEqual(checkStructure(render(body, {}, ['  default-path origin /etc/haproxy'])), []);
  });

  test('environment variables in names leave the verdict to haproxy', () => {
    assert.deepEqual(checkStructure(render(['frontend fe', '  bind :8080', '  default_backend "${BACKEND}"', 'backend "${NAME}/x"', ...BACKEND])), []);
  });

  test('rejects auxiliary file names that are not a single plain path component', () => {
    for (const name of ['', '.', '..', '../escape', 'a/b', 'line\nbreak', 'nul\u0000']) {
      const problems = checkStructure(render(undefined, { maps: { [name]: 'x' } }));
      assert.equal(problems.length, 1, JSON.stringify(name));
      assert.equal(problems[0]!.file, `maps/${name}`);
      assert.equal(problems[0]!.message, fileNameProblem(name));
    }
  });

  test('accepts ordinary auxiliary file names', () => {
    for (const name of ['hosts.map', 'a b.map', '.hidden', 'UPPER_case-1.pem', 'ünïcode.txt']) assert.equal(fileNameProblem(name), undefined, name);
  });

});

// Phase one must never reject what haproxy accepts: every example above goes through the real binary too.
describe('phase one with a memo of the last configuration it checked', () => {
  test('gives what a check without one gives, whatever configurations the memo saw before', () => {
    const all = [...REJECTED, ...ACCEPTED].map((c) => c.files());
    const memo = new StructureMemo();
    for (const files of [...all, ...[...all].reverse(), ...all]) assert.deepEqual(checkStructure(files, memo), checkStructure(files));
  });

  test('reads again only the section bodies whose text changed, and keeps only the last configuration\'s', () => {
    const backends = (n: number, changed = -1) => Array.from({ length: n }, (_, b) => [`backend be${b}`, `  server s1 10.0.${b}.${b === changed ? 99 : 1}:80`]).flat();
    const memo = new StructureMemo();
    checkStructure(render([...FRONTEND, ...backends(50)]), memo);
    assert.equal(memo.read, 3 + 50, 'global, defaults, the frontend and every backend, the first time');
    checkStructure(render([...FRONTEND, ...backends(50, 7)]), memo);
    assert.equal(memo.read, 1, 'the one backend whose servers changed');
    assert.equal(memo.size, 53);
    checkStructure(render([...FRONTEND, ...backends(10)]), memo);
    assert.equal(memo.read, 1, 'be7 as it was two checks ago was not kept');
    assert.equal(memo.size, 13);
  });

  test('keeps little more than the text of a section with nothing to report (10k backends: under 2 MiB beside the configuration)', () => {
    // The render thread holds the memo between renders, under its heap cap: every MiB it keeps
    // is a MiB less for the next render's garbage. Here the configuration (3 MiB) stays referenced,
    // so what is measured is the memo alone.
    const lines = [...FRONTEND, ...Array.from({ length: 10_000 }, (_, b) => [`backend be${b}`, '  balance roundrobin', '  option httpchk', ...Array.from({ length: 5 }, (_, s) => `  server s${s} 10.${b >> 8}.${b & 255}.${s}:8080 check weight 1`)]).flat()];
    const files = render(lines);
    const bare = checkStructure(files);
    const memo = new StructureMemo();
    const before = heapAfterGc();
    assert.deepEqual(checkStructure(files, memo), bare);
    const kept = heapAfterGc() - before;
    assert.equal(memo.size, 10_003);
    assert.ok(kept < 2 * 1048576, `the memo keeps ${(kept / 1048576).toFixed(1)} MiB`);
    assert.deepEqual(checkStructure(files, memo), bare, 'and gives the same verdict from what it kept');
  });

  test('keeps the text of the last configuration it checked alone, not of one before it', () => {
    // Names the facts of a section keep (a use_backend's) were cut from the configuration's text,
    // and a cut keeps the whole text it came from alive: a frontend that stands unchanged kept the
    // first configuration's text through every later check.
    const config = (moved: number) =>
      render([
        'frontend fe', '  bind :8080', '  use_backend be_with_a_long_name_0 if { path /zero }', '  default_backend be_with_a_long_name_1',
        ...Array.from({ length: 5_000 }, (_, b) => [`backend be_with_a_long_name_${b}`, ...[1, 2, 3, 4].map((n) => `  server s${n} 10.${n}.${b >> 8}.${b & 255}:${b === moved ? 81 : 80} check inter 2s fall 3 rise 2 weight 100 maxconn 1000`)]).flat(),
      ]);
    // Held in a list, so that letting go of it is a statement the heap can be measured after.
    const held = [new StructureMemo()];
    const size = config(-1).main.length;
    checkStructure(config(-1), held[0]);
    checkStructure(config(7), held[0]);
    const withMemo = heapAfterGc();
    assert.equal(held.pop()?.size, 5_003);
    const kept = withMemo - heapAfterGc();
    assert.ok(kept < 1.6 * size, `the memo keeps ${(kept / size).toFixed(2)} times one configuration's text`);
  });

  test('reports a known section\'s problems where it stands now', () => {
    const broken = ['backend bad', '  errorfile 503 general/nope.http', `${words(MAX_LINE_WORDS + 1)}`];
    const memo = new StructureMemo();
    const first = render([...FRONTEND, ...BACKEND, ...broken]);
    const moved = render([...FRONTEND, ...BACKEND, 'backend more', '  server s2 127.0.0.1:81', ...broken]);
    const at = (files: RenderedFiles) => checkStructure(files, memo).map((p) => p.line);
    assert.deepEqual(at(first), [lineOf(first.main, 'errorfile'), lineOf(first.main, 'acl many')]);
    assert.deepEqual(at(moved), [lineOf(moved.main, 'errorfile'), lineOf(moved.main, 'acl many')]);
    assert.equal(memo.read, 1, 'only the new backend was read');
  });

  test('does not take a known section\'s verdict where a .if block now holds it', () => {
    const frontend = ['frontend fe', '  bind :8080', '  default_backend nope'];
    const memo = new StructureMemo();
    const plain = render([...frontend, ...BACKEND]);
    assert.match(checkStructure(plain, memo).map((p) => p.message).join('\n'), /default_backend 'nope' names no backend/);
    const guarded = render(['backend first', '.if defined(HAPRX_NEVER_SET)', ...frontend, '.endif', ...BACKEND]);
    assert.deepEqual(checkStructure(guarded, memo), checkStructure(guarded));
    assert.deepEqual(checkStructure(guarded, memo), [], 'a frontend haproxy may skip is not checked');
  });
});

describe('haproxy -c agrees with phase one', () => {
  let tmp: string;
  let cert: string;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'haprx-structure-'));
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', join(tmp, 'key.pem'), '-out', join(tmp, 'cert.pem'), '-days', '2', '-subj', '/CN=haprx.test',
    ]);
    cert = (await readFile(join(tmp, 'cert.pem'), 'utf8')) + (await readFile(join(tmp, 'key.pem'), 'utf8'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  // Placeholders become a real certificate, so that haproxy judges the reference and not the content.
  const withRealCerts = (files: RenderedFiles): RenderedFiles => ({
    ...files,
    certs: Object.fromEntries(Object.keys(files.certs).map((name) => [name, cert])),
  });
  const haproxy = (files: RenderedFiles) => runHaproxyCheck(withRealCerts(files), { haproxyBin: HAPROXY, timeoutMs: 10_000, tmpDir: tmp });

  test('phase one costs less than haproxy -c on a thousand backends with ten servers each', async () => {
    const body = [...FRONTEND];
    for (let b = 0; b < 1000; b++) {
      body.push(`  use_backend be${b} if { req.hdr(host) -m str h${b}.example }`, `backend be${b}`);
      for (let s = 0; s < 10; s++) body.push(`  server s${s} 10.0.${b % 256}.${s + 1}:80 check`);
    }
    const files = render([...body, ...BACKEND]);
    // The fastest of a few runs each, so that a busy machine does not decide the outcome.
    const fastest = async (run: () => unknown) => {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await run();
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    assert.deepEqual(checkStructure(files), []);
    const structure = await fastest(() => checkStructure(files));
    const spawned = await fastest(async () => assert.equal((await haproxy(files)).kind, 'exited'));
    assert.ok(structure < spawned, `phase one took ${structure} ms, haproxy -c ${spawned} ms`);
  });

  for (const c of REJECTED) {
    test(`rejects: ${c.name}`, async () => {
      const files = c.files();
      const outcome = await haproxy(files);
      assert.equal(outcome.kind, 'exited', JSON.stringify(outcome));
      if (outcome.kind !== 'exited') return;
      assert.notEqual(outcome.code, 0, JSON.stringify(outcome));
      // Where haproxy names a line, it must be the one phase one blames: same mistake, not another one.
      const lines = outcome.errors.filter((p) => p.file === 'haproxy.cfg' && p.line !== undefined).map((p) => p.line);
      if (lines.length > 0) assert.ok(lines.includes(lineOf(files.main, c.at, c.exact)), JSON.stringify(outcome.errors));
    });
  }
  for (const c of ACCEPTED) {
    test(`accepts: ${c.name}`, async () => {
      const outcome = await haproxy(c.files());
      assert.equal(outcome.kind, 'exited', JSON.stringify(outcome));
      if (outcome.kind === 'exited') assert.equal(outcome.code, 0, JSON.stringify(outcome.errors));
    });
  }
});
