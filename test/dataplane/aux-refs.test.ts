import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { changedReferencingMap, crtListRefs, markedFileRefs, referencingFiles, rewriteFileRefs } from '../../src/haproxy/aux-file-refs.ts';
import { auxRefSteps, findAuxRefs, rewriteAuxRefs, spannedWords } from '../../src/haproxy/aux-refs.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import { tokenize } from '../../src/haproxy/config.ts';
import { freePort } from '../support/ports.ts';

const run = promisify(execFile);

const LINES = [
  '  use_backend %[req.hdr(host),lower,map(maps/hosts.map,be_none)]',
  '  acl blocked src -f maps/blocked.lst -f "general/more.lst"',
  "  http-request set-header X-Y 'a b' # comment maps/x.map",
  '  http-request set-var(txn.x) src,map_ip_int("maps/ip.map",0)',
  '  bind :8443 ssl crt ssl/site.pem ca-file ssl/ca.pem verify optional',
  '  acl x path -f maps/a\\ b.lst',
  '  http-request set-header X "quoted \\"inner\\" text"',
  '\tserver s1 127.0.0.1:443 ssl crt ssl/client.pem ca-file ssl/ca.pem',
  '',
  '   # only a comment',
  '  errorfile 503 general/503.http',
];

describe('aux-refs: words with positions', () => {
  test('splits every line into the words config.ts tokenize() gives', () => {
    for (const line of LINES) {
      const tokens = tokenize(line);
      assert.ok(!('error' in tokens));
      assert.deepEqual(spannedWords(line)!.map((w) => w.text), tokens.args, line);
    }
  });

  test('each character of a word points at the raw character it came from', () => {
    const words = spannedWords('  acl x path -f "maps/a b.lst" maps/c\\ d.lst')!;
    const raw = '  acl x path -f "maps/a b.lst" maps/c\\ d.lst';
    for (const w of words) assert.equal(w.from.map((i) => raw[i]).join(''), w.text);
  });

  test('an unterminated quote gives no words', () => {
    assert.equal(spannedWords('  http-request set-header X "abc'), undefined);
  });
});

describe('aux-refs: finding references', () => {
  test('finds map converters, -f, errorfile, bind, server and action references with their lines', () => {
    const main = [
      'global',
      '  lua-load general/x.lua',
      'frontend fe',
      ...LINES,
      '  http-request set-map(maps/hosts.map) %[src] x',
      '  http-request return status 200 file general/ok.txt if { path /ok }',
      '  http-request set-header X-Origin general/nope',
      '  bind :8444 ssl crt ssl/',
    ].join('\n');
    const found = findAuxRefs(main).refs.map((r) => `${r.line} ${r.kind}:${r.name} ${r.checked ? 'checked' : 'unchecked'}`);
    assert.deepEqual(found, [
      '2 files:x.lua checked',
      '4 maps:hosts.map checked',
      '5 maps:blocked.lst checked',
      '5 files:more.lst checked',
      '7 maps:ip.map checked',
      '8 certs:site.pem checked',
      '8 certs:ca.pem checked',
      '9 maps:a b.lst checked',
      '11 certs:client.pem unchecked',
      '11 certs:ca.pem checked',
      '14 files:503.http checked',
      '15 maps:hosts.map unchecked',
      '16 files:ok.txt checked',
    ]);
  });

  test('notes base directives of the global section', () => {
    const scan = findAuxRefs('global\n  crt-base /etc/certs\nfrontend fe\n  bind :443 ssl crt ssl/a.pem\n');
    assert.deepEqual([...scan.based], ['crt']);
    assert.equal(scan.allBased, false);
    assert.equal(findAuxRefs('global\n  default-path origin /x\n').allBased, true);
    assert.equal(findAuxRefs('global\n  default-path config\n').allBased, false);
  });
});

describe('aux-refs: a large haproxy.cfg, scanned in pieces', () => {
  // 300 backends: pieces are cut before every 64th section header, so this text is
  // five pieces, and the references sit in several of them.
  const backends = (port: number) =>
    Array.from({ length: 300 }, (_, i) => `backend be_${i}\n  http-request set-var(txn.x) req.hdr(host),map(maps/m${i % 7}.map)\n  server s1 10.0.0.${i % 250}:${i === 150 ? port : 8080}\n`).join('');
  const main = (port: number) => `global\n  crt-base /etc/certs\nfrontend fe\n  bind :443 ssl crt ssl/a.pem\n${backends(port)}frontend tail\n  http-request return status 200 file general/ok.txt\n`;
  const lineOf = (text: string, ref: { line: number; path: string }) => text.split('\n')[ref.line - 1]!;

  test('gives what a first scan gives, after a scan of the text with one server line changed', () => {
    const before = main(8080);
    const after = main(9090);
    findAuxRefs(before);
    const warm = findAuxRefs(after);
    findAuxRefs('frontend other\n  bind :80\n');
    const cold = findAuxRefs(after);
    assert.deepEqual(warm, cold);
    assert.equal(warm.refs.length, 302);
    assert.deepEqual([...warm.based], ['crt']);
    // Every reference on the line it names, which starts where the scan says.
    for (const ref of warm.refs) {
      assert.ok(lineOf(after, ref).includes(ref.path), `line ${ref.line} holds ${ref.path}`);
      assert.equal(after.slice(warm.lineStarts.get(ref.line)!).split('\n')[0], lineOf(after, ref));
    }
  });

  test('as steps: one after each piece scanned anew, none for a text whose pieces were all scanned last', () => {
    findAuxRefs('frontend other\n');
    const text = main(7070);
    const steps = auxRefSteps(text);
    let taken = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) taken++;
    assert.equal(taken, 5, 'five pieces, each new');
    assert.deepEqual(step.value, findAuxRefs(text));
    const again = auxRefSteps(main(7070));
    assert.equal(again.next().done, true, 'every piece known: the result at once');
    // One server line changed: one piece is new.
    const changed = [...auxRefSteps(main(7071))];
    assert.equal(changed.length, 1);
  });

  test('rewrites the references of every piece and leaves every other byte as it was', () => {
    const text = main(8080);
    const result = rewriteAuxRefs(text, (ref) => `/srv/${ref.kind}/${ref.name}`);
    // The certificate is under crt-base: left alone. The 300 map references and the file are rewritten.
    assert.equal(result.rewritten, 301);
    assert.equal(result.text, text.replace(/map\(maps\//g, 'map(/srv/maps/').replace('file general/ok.txt', 'file /srv/files/ok.txt'));
  });

  test('carries the section from one piece into the next, where section bodies are not indented', () => {
    // Unindented global directives start with a letter, so the cut falls inside global.
    const flat = ['global', ...Array.from({ length: 70 }, (_, i) => `setenv V${i} x`), 'ca-base /etc/ca', 'frontend fe', '  bind :443 ssl crt ssl/a.pem ca-file ssl/ca.pem'].join('\n');
    findAuxRefs('frontend other\n');
    assert.deepEqual([...findAuxRefs(flat).based], ['ca']);
    // A text whose pieces were seen starting in another section is scanned again for this one.
    const moved = flat.replace('global\n', 'frontend first\n');
    assert.deepEqual([...findAuxRefs(moved).based], []);
  });
});

describe('aux-refs: rewriting', () => {
  const absolute = (ref: { kind: string; name: string }) => `/srv/${ref.kind}/${ref.name.replace(/ /g, '_')}`;

  test('replaces exactly the references and keeps every other byte and every line number', () => {
    const main = ['global', '  lua-load general/x.lua', 'frontend fe', ...LINES, ''].join('\n');
    const result = rewriteAuxRefs(main, absolute);
    const before = main.split('\n');
    const afterLines = result.text.split('\n');
    assert.equal(afterLines.length, before.length);
    assert.equal(result.rewritten, 11);
    const changed = afterLines.flatMap((l, i) => (l === before[i] ? [] : [`${i + 1}: ${l}`]));
    assert.deepEqual(changed, [
      '2:   lua-load /srv/files/x.lua',
      '4:   use_backend %[req.hdr(host),lower,map(/srv/maps/hosts.map,be_none)]',
      '5:   acl blocked src -f /srv/maps/blocked.lst -f "/srv/files/more.lst"',
      '7:   http-request set-var(txn.x) src,map_ip_int("/srv/maps/ip.map",0)',
      '8:   bind :8443 ssl crt /srv/certs/site.pem ca-file /srv/certs/ca.pem verify optional',
      '9:   acl x path -f /srv/maps/a_b.lst',
      '11: \tserver s1 127.0.0.1:443 ssl crt /srv/certs/client.pem ca-file /srv/certs/ca.pem',
      '14:   errorfile 503 /srv/files/503.http',
    ]);
    // The comment on line 6 names a map path: comments are not references.
    assert.equal(afterLines[5], before[5]);
  });

  test('keeps CR line endings and text after the reference', () => {
    const main = 'frontend fe\r\n  acl a src -f maps/a.lst # keep maps/a.lst\r\n';
    assert.equal(rewriteAuxRefs(main, absolute).text, 'frontend fe\r\n  acl a src -f /srv/maps/a.lst # keep maps/a.lst\r\n');
  });

  test('a quote opened inside the path keeps its effect', () => {
    const main = 'frontend fe\n  use_backend %[req.hdr(host),map(maps/h"osts.map,be_x)]"\n';
    const text = rewriteAuxRefs(main, absolute).text;
    assert.equal(text, 'frontend fe\n  use_backend %[req.hdr(host),map(/srv/maps/hosts.map",be_x)]"\n');
    const tokens = tokenize(text.split('\n')[1]!);
    assert.ok(!('error' in tokens));
    assert.deepEqual(tokens.args, ['use_backend', '%[req.hdr(host),map(/srv/maps/hosts.map,be_x)]']);
  });

  test('leaves references alone that a base directive redirects, and those the resolver does not know', () => {
    const main = 'global\n  ca-base /etc/ca\nfrontend fe\n  bind :443 ssl crt ssl/a.pem ca-file ssl/ca.pem\n  errorfile 503 general/x\n';
    const result = rewriteAuxRefs(main, (ref) => (ref.name === 'x' ? undefined : absolute(ref)));
    assert.equal(result.text, 'global\n  ca-base /etc/ca\nfrontend fe\n  bind :443 ssl crt /srv/certs/a.pem ca-file ssl/ca.pem\n  errorfile 503 general/x\n');
    assert.deepEqual(result.redirected.map((r) => r.path), ['ssl/ca.pem']);
  });

  test('refuses a replacement that is not a plain path', () => {
    assert.throws(() => rewriteAuxRefs('frontend fe\n  errorfile 503 general/x\n', () => '/a b/x'), /plain path/);
  });
});

describe('aux-refs: the rewritten configuration against haproxy -c', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'haprx-auxrefs-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('haproxy finds every file at its new absolute path, from a directory without the relative layout', async () => {
    const storage = join(dir, 'storage');
    for (const sub of ['maps', 'general']) await mkdir(join(storage, sub), { recursive: true });
    await writeFile(join(storage, 'maps', 'hosts.map'), 'a.test be_a\n');
    await writeFile(join(storage, 'maps', 'blocked.lst'), '10.0.0.1\n');
    await writeFile(join(storage, 'general', '503.http'), 'HTTP/1.0 503 Service Unavailable\r\n\r\nbusy\n');
    const main = [
      'global',
      'defaults',
      '  mode http',
      '  timeout connect 1s',
      '  timeout client 1s',
      '  timeout server 1s',
      'frontend fe',
      `  bind 127.0.0.1:${await freePort()}`,
      '  acl blocked src -f maps/blocked.lst',
      '  http-request deny if blocked',
      '  http-request set-map(maps/hosts.map) %[req.hdr(x-host)] %[req.hdr(x-backend)] if { req.hdr(x-backend) -m found }',
      '  use_backend %[req.hdr(host),lower,map(maps/hosts.map,be_a)]',
      '  errorfile 503 general/503.http',
      'backend be_a',
      '  server s1 127.0.0.1:1',
      '',
    ].join('\n');
    const cwd = join(dir, 'elsewhere');
    await mkdir(cwd);
    const check = async (text: string) => {
      await writeFile(join(cwd, 'haproxy.cfg'), text);
      return run('haproxy', ['-c', '-f', 'haproxy.cfg'], { cwd }).then(
        () => 'valid',
        (err: { stderr?: string }) => err.stderr ?? 'failed',
      );
    };
    assert.match(await check(main), /failed to open pattern file <maps\/blocked\.lst>/);
    const rewritten = rewriteAuxRefs(main, (ref) => join(storage, ref.kind === 'maps' ? 'maps' : 'general', ref.name)).text;
    assert.equal(await check(rewritten), 'valid');
  });
});

describe('aux-refs: references inside auxiliary files', () => {
  const absolute = (ref: { kind: string; name: string }) => `/srv/${ref.kind}/${ref.name}`;
  const render = (main: string, certs: Record<string, string>, files: Record<string, string> = {}, referencing?: string[]) =>
    sealRendered({ main, maps: { 'hosts.map': 'a b\n' }, files, certs, ...(referencing && { referencing }) });

  test('a crt-list names its certificates first on each entry, and CA files among its bracketed options', () => {
    const list = ['# a comment names ssl/x.pem', '', 'ssl/a.pem [ca-file ssl/ca.pem verify required] a.test !b.a.test', '  ssl/b.pem [alpn h2 crl-file  ssl/crl.pem]', 'ssl/c.pem [ca-verify-file ssl/v.pem]', 'ssl/d.pem *.d.test', '/etc/ssl/e.pem'].join('\n');
    assert.deepEqual(crtListRefs(list).map((r) => `${r.base} ${r.path} ${list.slice(r.start, r.end)}`), [
      'crt ssl/a.pem ssl/a.pem',
      'ca ssl/ca.pem ssl/ca.pem',
      'crt ssl/b.pem ssl/b.pem',
      'ca ssl/crl.pem ssl/crl.pem',
      'crt ssl/c.pem ssl/c.pem',
      'ca ssl/v.pem ssl/v.pem',
      'crt ssl/d.pem ssl/d.pem',
    ]);
  });

  test('finds crt-lists through haproxy.cfg and marked files through the render; certificates and other files are not referencing', () => {
    const main = 'frontend fe\n  bind :443 ssl crt-list ssl/https.crtlist\n  bind :8443 ssl crt ssl/a.pem\n  errorfile 503 general/503.http\n';
    const config = render(main, { 'https.crtlist': 'ssl/a.pem a.test\n', 'a.pem': 'PEM' }, { '503.http': 'x', 'notes.txt': 'see maps/hosts.map' }, ['general/notes.txt']);
    assert.deepEqual([...referencingFiles(config)].map(([path, r]) => `${path} ${r.as}`), ['ssl/https.crtlist crt-list', 'general/notes.txt marked']);
  });

  test('finds a changed map that names other files, and scans haproxy.cfg for it only when some map changed', () => {
    const main = 'frontend fe\n  http-request set-var(txn.b) req.hdr(host),map(maps/hosts.map)\n';
    const maps = (hosts: string, notes: string) => sealRendered({ main, maps: { 'hosts.map': hosts, 'notes.map': notes }, certs: {}, files: {}, referencing: ['maps/notes.map'] });
    const before = maps('a.test be_a\n', 'see ssl/x.pem\n');
    const scans: string[] = [];
    const counted = (config: Parameters<typeof referencingFiles>[0]) => {
      scans.push(config.hash);
      return referencingFiles(config);
    };
    // Only server lines changed (an endpoint change): nothing to scan for.
    const servers = sealRendered({ ...before, main: `${main}backend be_a\n  server s1 127.0.0.1:8080\n` });
    assert.equal(changedReferencingMap(before, servers, counted), undefined);
    assert.deepEqual(scans, []);
    // A plain map changed: scanned, and it names nothing.
    assert.equal(changedReferencingMap(before, maps('a.test be_a\nb.test be_b\n', 'see ssl/x.pem\n'), counted), undefined);
    // The marked map changed: it names other files.
    assert.equal(changedReferencingMap(before, maps('a.test be_a\n', 'see ssl/y.pem\n'), counted), 'notes.map');
    assert.equal(scans.length, 2);
  });

  test('rewrites the references of a crt-list and leaves the rest of each line as it was', () => {
    const main = 'frontend fe\n  bind :443 ssl crt-list ssl/l\n';
    const list = 'ssl/a.pem [ca-file ssl/ca.pem verify required] a.test\n# ssl/a.pem\nssl/b.pem\n';
    const config = render(main, { l: list, 'a.pem': 'A', 'ca.pem': 'C', 'b.pem': 'B' });
    assert.equal(rewriteFileRefs(list, 'crt-list', config, absolute), '/srv/certs/a.pem [ca-file /srv/certs/ca.pem verify required] a.test\n# ssl/a.pem\n/srv/certs/b.pem\n');
    // crt-base moves crt-list entries as it moves `crt`: they stay as written, for haproxy to resolve.
    const based = render(`global\n  crt-base /etc/certs\n${main}`, { l: list, 'a.pem': 'A', 'ca.pem': 'C', 'b.pem': 'B' });
    assert.equal(rewriteFileRefs(list, 'crt-list', based, absolute), 'ssl/a.pem [ca-file /srv/certs/ca.pem verify required] a.test\n# ssl/a.pem\nssl/b.pem\n');
  });

  test('rewrites in a marked file only the names of rendered files, standing alone', () => {
    const config = render('frontend fe\n', { 'a.pem': 'A' }, { 'x.lua': '' }, ['general/x.lua']);
    const text = 'local m = "maps/hosts.map" -- and ssl/a.pem.\nlocal n = "maps/other.map", "xmaps/hosts.map", "maps/hosts.map2"\n';
    assert.equal(
      rewriteFileRefs(text, 'marked', config, absolute),
      'local m = "/srv/maps/hosts.map" -- and /srv/certs/a.pem.\nlocal n = "maps/other.map", "xmaps/hosts.map", "maps/hosts.map2"\n',
    );
    assert.equal(markedFileRefs(text, config).length, 2);
  });
});
