// Phase two against the real haproxy binary.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Validator, parseHaproxyOutput } from '../../src/haproxy/validate.ts';
import type { ValidationResult } from '../../src/haproxy/validate.ts';
import { sealRendered } from '../../src/templating/rendered.ts';
import type { RenderedFiles } from '../../src/templating/rendered.ts';

const HAPROXY = '/usr/sbin/haproxy';

const HEAD = ['global', 'defaults', '  mode http', '  timeout connect 5s', '  timeout client 5s', '  timeout server 5s'];

function config(lines: string[]): string {
  return [...lines, ''].join('\n');
}

function lineOf(text: string, marker: string): number {
  const hits = text.split('\n').flatMap((l, i) => (l.includes(marker) ? [i + 1] : []));
  assert.equal(hits.length, 1, `marker ${JSON.stringify(marker)} must occur on exactly one line`);
  return hits[0]!;
}

function failure(result: ValidationResult) {
  assert.equal(result.ok, false, JSON.stringify(result));
  if (result.ok) throw new Error('unreachable');
  return result;
}

let work: string;
let checks: string;
let cert: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'haprx-validate-'));
  // A throw-away self-signed certificate, made fresh so that no key is ever committed.
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', join(work, 'key.pem'), '-out', join(work, 'cert.pem'), '-days', '2', '-subj', '/CN=haprx.test',
  ]);
  cert = (await readFile(join(work, 'cert.pem'), 'utf8')) + (await readFile(join(work, 'key.pem'), 'utf8'));
});

after(async () => {
  await rm(work, { recursive: true, force: true });
});

beforeEach(async () => {
  checks = await mkdtemp(join(work, 'checks-'));
});

afterEach(async () => {
  assert.deepEqual(await readdir(checks), [], 'every check directory must be removed');
});

const validator = (options: { failOnWarnings?: boolean } = {}) => new Validator({ haproxyBin: HAPROXY, tmpDir: checks, ...options });

function site(overrides: Partial<RenderedFiles> = {}, extra: string[] = []): RenderedFiles {
  const main = config([
    ...HEAD,
    '  errorfile 503 general/503.http',
    'frontend fe',
    '  bind :8443 ssl crt ssl/site.pem',
    '  http-request set-var(txn.backend) req.hdr(host),lower,map(maps/hosts.map,be)',
    '  use_backend %[req.hdr(host),lower,map_beg(maps/hosts.map,be)]',
    '  default_backend be',
    ...extra,
    'backend be',
    '  server s1 127.0.0.1:80',
  ]);
  return {
    main,
    maps: { 'hosts.map': 'example.com be\nexample.org be\n' },
    files: { '503.http': 'HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nunavailable\n' },
    certs: { 'site.pem': cert },
    ...overrides,
  };
}

describe('Validator with haproxy -c', () => {
  test('accepts a configuration with a map, an error file and a certificate', async () => {
    const v = validator();
    const result = await v.validate(sealRendered(site()));
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.equal(result.cached, false);
    assert.deepEqual(result.warnings, []);
  });

  test('an unknown keyword fails with haproxy\'s message at its line', async () => {
    const files = site({}, ['  frobnicate now']);
    const result = failure(await validator().validate(sealRendered(files)));
    assert.equal(result.phase, 'haproxy');
    assert.equal(result.problems.length, 1, 'the summary lines are left out when a specific alert exists');
    const [problem] = result.problems;
    assert.equal(problem!.file, 'haproxy.cfg');
    assert.equal(problem!.line, lineOf(files.main, 'frobnicate'));
    assert.match(problem!.message, /unknown keyword 'frobnicate' in 'frontend' section/);
    assert.ok(!problem!.message.includes(checks), 'no temporary path in messages');
  });

  test('a map that the render lacks is caught by phase one, at the line that uses it', async () => {
    const files = site({ maps: {} });
    const result = failure(await validator().validate(sealRendered(files)));
    assert.equal(result.phase, 'structure');
    assert.deepEqual(
      result.problems.map((p) => p.line),
      [lineOf(files.main, 'set-var(txn.backend)'), lineOf(files.main, 'use_backend')],
    );
  });

  test('an invalid address in a map_ip map fails at the map\'s line', async () => {
    const map = '10.0.0.0/8 internal\n192.0.2.300 broken\n';
    const files = site({ maps: { 'hosts.map': 'example.com be\n', 'nets.map': map } }, ['  http-request set-var(txn.net) src,map_ip(maps/nets.map,external)']);
    const result = failure(await validator().validate(sealRendered(files)));
    assert.equal(result.phase, 'haproxy');
    const [problem] = result.problems;
    assert.equal(problem!.file, 'maps/nets.map');
    assert.equal(problem!.line, lineOf(map, '192.0.2.300'));
    // haproxy's own text, which also names the configuration line.
    assert.match(problem!.message, /'192\.0\.2\.300' is not a valid IPv4 or IPv6 address/);
    assert.ok(problem!.message.includes(`[haproxy.cfg:${lineOf(files.main, 'map_ip(')}]`));
  });

  test('a certificate haproxy cannot load fails at the bind line', async () => {
    const files = site({ certs: { 'site.pem': 'not a certificate\n' } });
    const result = failure(await validator().validate(sealRendered(files)));
    assert.equal(result.phase, 'haproxy');
    assert.deepEqual(result.problems.map((p) => [p.file, p.line]), [['haproxy.cfg', lineOf(files.main, 'bind :8443')]]);
    assert.match(result.problems[0]!.message, /ssl\/site\.pem/);
  });

  test('warnings pass by default and are returned with their lines', async () => {
    const files = site();
    const main = files.main.replace('  server s1 127.0.0.1:80', '  server s1 127.0.0.1:80\n  option httplog');
    const result = await validator().validate(sealRendered({ ...files, main }));
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.warnings.map((w) => [w.file, w.line]), [['haproxy.cfg', lineOf(main, 'option httplog')]]);
    assert.match(result.warnings[0]!.message, /'option httplog' directive is ignored in backends/);
  });

  test('warnings fail the check when failOnWarnings is set', async () => {
    const files = site();
    const main = files.main.replace('  server s1 127.0.0.1:80', '  server s1 127.0.0.1:80\n  option httplog');
    const result = failure(await validator({ failOnWarnings: true }).validate(sealRendered({ ...files, main })));
    assert.equal(result.phase, 'haproxy');
    assert.deepEqual(result.problems.map((p) => p.line), [lineOf(main, 'option httplog')]);
  });

  test('a warning spanning several lines is kept whole', async () => {
    const main = config(['global', 'frontend fe', '  bind :8080', '  default_backend be', 'backend be', '  server s1 127.0.0.1:80']);
    const result = await validator().validate(sealRendered({ main, maps: {}, files: {}, certs: {} }));
    assert.equal(result.ok, true);
    const timeouts = result.warnings.find((w) => w.message.startsWith("missing timeouts for frontend 'fe'"));
    assert.ok(timeouts, JSON.stringify(result.warnings));
    assert.equal(timeouts.line, undefined);
    assert.ok(timeouts.message.split('\n').length > 1, timeouts.message);
  });

  test('a configuration that would not start (no listener) fails', async () => {
    const main = config([...HEAD, 'backend be', '  server s1 127.0.0.1:80']);
    const result = failure(await validator().validate(sealRendered({ main, maps: {}, files: {}, certs: {} })));
    assert.equal(result.phase, 'haproxy');
    assert.match(result.problems.map((p) => p.message).join('\n'), /no listener/);
  });

  test('an error without a location is kept, with no line', async () => {
    // A missing CA file on default-server yields one located alert and one without a location.
    const main = config([...HEAD, 'frontend fe', '  bind :8080', '  default_backend be', 'backend be', '  default-server ca-file ssl/ca.pem verify required', '  server s1 127.0.0.1:80']);
    const result = failure(await validator().validate(sealRendered({ main, maps: {}, files: {}, certs: {} })));
    assert.equal(result.phase, 'haproxy');
    assert.ok(result.problems.some((p) => p.line === lineOf(main, 'default-server') && /Couldn't open the ca-file 'ssl\/ca\.pem'/.test(p.message)), JSON.stringify(result.problems));
    assert.ok(result.problems.some((p) => p.line === undefined && /unable to load ssl\/ca\.pem/.test(p.message)), JSON.stringify(result.problems));
  });

  test('a check neither binds, nor daemonizes, nor writes outside its directory', async () => {
    const outside = join(work, 'outside');
    await mkdir(outside);
    // Hold a port: a check that tried to bind it would fail.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const uid = process.getuid?.() ?? 0;
      const gid = process.getgid?.() ?? 0;
      const main = config([
        'global',
        '  daemon',
        '  master-worker',
        `  pidfile ${outside}/haproxy.pid`,
        `  stats socket ${outside}/admin.sock mode 600 level admin`,
        `  chroot ${outside}`,
        `  uid ${uid}`,
        `  gid ${gid}`,
        'defaults',
        '  mode http',
        '  timeout connect 5s',
        '  timeout client 5s',
        '  timeout server 5s',
        'ring trace',
        '  size 32764',
        `  backing-file ${outside}/ring`,
        'program touch',
        `  command /bin/touch ${outside}/program-ran`,
        'frontend fe',
        `  bind 127.0.0.1:${port}`,
        `  bind unix@${outside}/fe.sock`,
        '  default_backend be',
        'backend be',
        '  server s1 127.0.0.1:80',
      ]);
      const result = await validator().validate(sealRendered({ main, maps: {}, files: {}, certs: {} }));
      assert.equal(result.ok, true, JSON.stringify(result));
      assert.deepEqual(await readdir(outside), []);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('parseHaproxyOutput', () => {
  test('joins continuation lines to their alert and keeps the caret', () => {
    const stderr = [
      '[NOTICE]   (7) : haproxy version is 2.6.12',
      '[ALERT]    (7) : config : parsing [haproxy.cfg:4]: unmatched quote at position 29:',
      '  http-request set-header X "abc',
      '                            ^',
      '[ALERT]    (7) : config : Error(s) found in configuration file : haproxy.cfg',
      '',
    ].join('\n');
    const { errors, warnings, other } = parseHaproxyOutput(stderr, 'Configuration file is valid\n', ['haproxy.cfg']);
    assert.deepEqual(warnings, []);
    assert.deepEqual(other, []);
    assert.equal(errors.length, 2);
    assert.equal(errors[0]!.line, 4);
    assert.equal(errors[0]!.message.split('\n').length, 3);
    assert.equal(errors[1]!.line, undefined);
  });

  test('understands the location forms haproxy uses', () => {
    const stderr = [
      "[ALERT]    (7) : config : [haproxy.cfg:13] : 'server b/x' : could not resolve address 'x'.",
      "[ALERT]    (7) : config : Parsing [haproxy.cfg:9]: frontend 'x' has the same name as frontend 'x' declared at haproxy.cfg:7.",
      "[ALERT]    (7) : config : http frontend 'f' (haproxy.cfg:7) tries to use incompatible tcp backend 'x' (haproxy.cfg:10) as its default backend (see 'mode').",
      "[ALERT]    (7) : config : parsing [haproxy.cfg:11] : invalid args in converter 'map_ip' : 'x' is not a valid IPv4 or IPv6 address at line 2 of file 'maps/ips.map'.",
      "[ALERT]    (7) : config : parsing [other.cfg:3] : a file haproxy was not given by the validator",
    ].join('\n');
    const { errors } = parseHaproxyOutput(stderr, '', ['haproxy.cfg', 'maps/ips.map']);
    assert.deepEqual(errors.map((e) => [e.file, e.line]), [
      ['haproxy.cfg', 13],
      ['haproxy.cfg', 9],
      ['haproxy.cfg', 7],
      ['maps/ips.map', 2],
      ['haproxy.cfg', undefined],
    ]);
  });

  test('keeps unexpected standard output', () => {
    const { other } = parseHaproxyOutput('', 'Warnings were found.\nConfiguration file has no error but will not start (no listener) => exit(2).\n', ['haproxy.cfg']);
    assert.deepEqual(other, ['Configuration file has no error but will not start (no listener) => exit(2).']);
  });
});
