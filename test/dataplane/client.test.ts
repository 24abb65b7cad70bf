import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { DataplaneClient, DataplaneError, atLeast, parseApiVersion, parseErrorBody } from '../../src/dataplane/client.ts';
import { type TestPki, makeTestPki } from '../support/dataplane-double/certs.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { freePort } from '../support/ports.ts';

const USER = 'admin';
const PASSWORD = 'adminpwd';
const TOKEN = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
const VERSION_PATH = '/services/haproxy/configuration/version';

function assertNoSecrets(text: string): void {
  assert.ok(!text.includes(PASSWORD), `the password leaked into: ${text}`);
  assert.ok(!text.includes(TOKEN), `the auth token leaked into: ${text}`);
}

async function failure(promise: Promise<unknown>): Promise<DataplaneError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof DataplaneError, `not a DataplaneError: ${String(err)}`);
    assertNoSecrets(err.message);
    assertNoSecrets(JSON.stringify(err));
    return err;
  }
  assert.fail('the call succeeded');
}

describe('parseErrorBody', () => {
  test('reads {code, message} as JSON whatever the content type, also when JSON-encoded twice', () => {
    assert.deepEqual(parseErrorBody('{"code":409,"message":"version mismatch"}\n'), { code: 409, message: 'version mismatch' });
    assert.deepEqual(parseErrorBody(JSON.stringify(JSON.stringify({ code: 400, message: 'x' }))), { code: 400, message: 'x' });
  });
  test('falls back to the text, without markup, shortened', () => {
    assert.deepEqual(parseErrorBody('<html><body><h1>502 Bad Gateway</h1></body></html>'), { message: '502 Bad Gateway' });
    assert.deepEqual(parseErrorBody(''), {});
    assert.equal(parseErrorBody('x'.repeat(2000)).message!.length, 501);
  });
});

describe('parseApiVersion / atLeast', () => {
  test('reads the version out of what /v3/info reports', () => {
    assert.deepEqual(parseApiVersion('v3.3.1 8c7bce50'), { major: 3, minor: 3, patch: 1 });
    assert.deepEqual(parseApiVersion('3.2'), { major: 3, minor: 2, patch: 0 });
    assert.equal(atLeast(parseApiVersion('v3.3.1'), 3, 3, 1), true);
    assert.equal(atLeast(parseApiVersion('v3.3.0'), 3, 3, 1), false);
    assert.equal(atLeast(parseApiVersion('v3.10.0'), 3, 3, 1), true);
  });
});

describe('DataplaneClient over HTTP (double)', () => {
  let double: DataplaneDouble;
  const clients: DataplaneClient[] = [];
  const client = (extra: Partial<ConstructorParameters<typeof DataplaneClient>[0]> = {}) => {
    const c = new DataplaneClient({ baseUrl: double.url, username: USER, password: PASSWORD, retryDelayMs: 50, ...extra });
    clients.push(c);
    return c;
  };
  const calls = (path: string) => double.requests.filter((r) => r.path === `/v3${path}`);

  before(async () => {
    double = await startDataplaneDouble();
  });
  after(async () => {
    for (const c of clients) c.close();
    await double.stop();
  });

  test('contacts the instance with GET /v3/info once, and learns its version', async () => {
    const c = client();
    const first = await c.info();
    const second = await c.info();
    assert.deepEqual(first, second);
    assert.equal(first.version, 'v3.4.0 haprx-double');
    assert.deepEqual([first.major, first.minor, first.patch], [3, 4, 0]);
    assert.equal(calls('/info').length, 1);
  });

  test('reads the Configuration-Version header of every answer', async () => {
    const res = await client().request('GET', VERSION_PATH);
    assert.equal(res.configurationVersion, Number(res.text));
  });

  test('wrong credentials: a 401 that says so, without the credentials', async () => {
    const err = await failure(new DataplaneClient({ baseUrl: double.url, username: USER, password: 'not-the-password' }).info());
    assert.equal(err.status, 401);
    assert.match(err.message, /^GET \/v3\/info: 401 Unauthorized: unauthorized \(check the Data Plane API username and password\)$/);
  });

  test('retries an idempotent call after 5xx answers, with growing delays', async () => {
    const retries: number[] = [];
    double.faults.status(503, { path: VERSION_PATH }, 2);
    const before = calls(VERSION_PATH).length;
    const started = Date.now();
    const stamps: number[] = [];
    const res = await client({ retryDelayMs: 100, onRetry: (r) => (retries.push(r.attempt), stamps.push(Date.now() - started)) }).request('GET', VERSION_PATH);
    assert.equal(res.status, 200);
    assert.deepEqual(retries, [1, 2]);
    assert.deepEqual(calls(VERSION_PATH).slice(before).map((r) => r.status), [503, 503, 200]);
    // 100 ms, then 200 ms (+ up to 20 % jitter each).
    assert.ok(Date.now() - started >= 300, `retried too fast: ${Date.now() - started} ms`);
  });

  test('gives up after the configured retries with the last answer', async () => {
    double.faults.status(502, { path: VERSION_PATH }, 10);
    const before = calls(VERSION_PATH).length;
    const err = await failure(client({ retries: 2 }).request('GET', VERSION_PATH));
    await double.faults.clear();
    assert.equal(err.status, 502);
    assert.match(err.message, /GET \/v3\/services\/haproxy\/configuration\/version: 502 Bad Gateway: injected fault: 502/);
    assert.equal(calls(VERSION_PATH).length - before, 3);
  });

  test('never retries a POST, even after a 5xx', async () => {
    double.faults.status(503, { method: 'POST', path: '/services/haproxy/storage/maps' }, 1);
    const before = calls('/services/haproxy/storage/maps').length;
    const form = new FormData();
    form.append('file_upload', new Blob(['a b\n']), 'retry-test.map');
    const err = await failure(client().request('POST', '/services/haproxy/storage/maps', { body: form }));
    assert.equal(err.status, 503);
    assert.equal(calls('/services/haproxy/storage/maps').length - before, 1);
  });

  test('retries an idempotent call after a dropped connection, but not a POST', async () => {
    double.faults.drop({ path: VERSION_PATH }, 1);
    const before = calls(VERSION_PATH).length;
    assert.equal((await client().request('GET', VERSION_PATH)).status, 200);
    assert.deepEqual(calls(VERSION_PATH).slice(before).map((r) => r.status), ['dropped', 200]);

    double.faults.drop({ method: 'POST', path: '/services/haproxy/configuration/raw' }, 1);
    const posts = calls('/services/haproxy/configuration/raw').length;
    const err = await failure(client().request('POST', '/services/haproxy/configuration/raw', { query: { version: 1 }, body: 'global\n' }));
    assert.equal(err.kind, 'network');
    assert.equal(calls('/services/haproxy/configuration/raw').length - posts, 1);
  });

  test('a slow answer times out, with a clear error and no retry', async () => {
    double.faults.slow(1_000, { path: VERSION_PATH }, 1);
    const before = calls(VERSION_PATH).length;
    const err = await failure(client({ timeoutMs: 200 }).request('GET', VERSION_PATH));
    assert.equal(err.kind, 'timeout');
    assert.match(err.message, /no answer from http:\/\/127\.0\.0\.1:\d+ within 200 ms/);
    assert.equal(calls(VERSION_PATH).length - before, 1);
  });

  test('an endpoint that is down: connection refused, retried, then a clear error', async () => {
    const port = await freePort();
    const retries: string[] = [];
    const err = await failure(new DataplaneClient({ baseUrl: `http://127.0.0.1:${port}`, username: USER, password: PASSWORD, retryDelayMs: 10, onRetry: (r) => retries.push(r.reason) }).info());
    assert.equal(err.kind, 'network');
    assert.equal(err.code, 'ECONNREFUSED');
    assert.match(err.message, /refused the connection/);
    assert.deepEqual(retries, ['ECONNREFUSED', 'ECONNREFUSED', 'ECONNREFUSED']);
  });

  test('error bodies: JSON from application/json (3.4) and from text/plain (up to 3.3)', async () => {
    const modern = await failure(client().request('POST', '/services/haproxy/configuration/raw', { query: { version: 999 }, body: 'global\n' }));
    assert.equal(modern.status, 409);
    assert.match(modern.apiMessage ?? '', /^version mismatch: version in configuration file is \d+, given version is 999$/);

    const legacy = await startDataplaneDouble({ apiVersion: 'v3.3.0 legacy' });
    try {
      const c = new DataplaneClient({ baseUrl: legacy.url, username: USER, password: PASSWORD });
      clients.push(c);
      const res = await c.request('POST', '/services/haproxy/configuration/raw', { query: { version: 999 }, body: 'global\n' }).catch((e: unknown) => e as DataplaneError);
      assert.ok(res instanceof DataplaneError);
      assert.match(res.apiMessage ?? '', /^version mismatch: /);
      assert.equal(legacy.requests.at(-1)?.status, 409);
    } finally {
      await legacy.stop();
    }
  });

  test('refuses an address that carries credentials, without repeating them', () => {
    assert.throws(
      () => new DataplaneClient({ baseUrl: `http://${USER}:${PASSWORD}@127.0.0.1:1`, username: USER, password: PASSWORD }),
      (err: Error) => !err.message.includes(PASSWORD) && /must not carry credentials/.test(err.message),
    );
  });
});

describe('DataplaneClient: credentials stay out of messages', () => {
  test('an error body that echoes the password or the Authorization header is masked', async () => {
    const server = createServer((req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`bad request from ${req.headers.authorization} with password ${PASSWORD}`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const c = new DataplaneClient({ baseUrl: `http://127.0.0.1:${port}`, username: USER, password: PASSWORD, retries: 0 });
    try {
      const err = await failure(c.info());
      assert.match(err.message, /bad request from Basic \*\*\* with password \*\*\*/);
    } finally {
      c.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('DataplaneClient over HTTPS and mTLS (double)', () => {
  let pki: TestPki;
  let tls: DataplaneDouble;
  let mtls: DataplaneDouble;
  before(async () => {
    pki = await makeTestPki();
    tls = await startDataplaneDouble({ tls: pki.server });
    mtls = await startDataplaneDouble({ tls: { ...pki.server, ca: pki.ca } });
  });
  after(async () => {
    await tls.stop();
    await mtls.stop();
  });

  test('trusts the instance through the configured CA', async () => {
    const c = new DataplaneClient({ baseUrl: tls.url, username: USER, password: PASSWORD, ca: pki.ca });
    assert.equal((await c.info()).major, 3);
    c.close();
  });

  test('refuses an instance whose certificate the CA did not sign, without retrying', async () => {
    const retries: string[] = [];
    const c = new DataplaneClient({ baseUrl: tls.url, username: USER, password: PASSWORD, ca: pki.rogueCa, onRetry: (r) => retries.push(r.reason) });
    const err = await failure(c.info());
    c.close();
    assert.equal(err.kind, 'tls');
    assert.match(err.message, /TLS with https:\/\/127\.0\.0\.1:\d+ failed/);
    assert.deepEqual(retries, []);
  });

  test('presents a client certificate the instance accepts', async () => {
    const c = new DataplaneClient({ baseUrl: mtls.url, username: USER, password: PASSWORD, ca: pki.ca, ...pki.client });
    assert.equal((await c.info()).major, 3);
    c.close();
  });

  test('an invalid client certificate: the instance refuses the connection, and the error says TLS', async () => {
    const retries: string[] = [];
    const before = mtls.requests.length;
    const c = new DataplaneClient({ baseUrl: mtls.url, username: USER, password: PASSWORD, ca: pki.ca, ...pki.rogueClient, onRetry: (r) => retries.push(r.reason) });
    const err = await failure(c.info());
    c.close();
    assert.equal(err.kind, 'tls', err.message);
    assert.match(err.message, /^GET \/v3\/info: TLS with https:\/\/127\.0\.0\.1:\d+ failed: the instance closed the connection right after the TLS handshake: it did not accept the client certificate$/);
    assert.equal(mtls.requests.length, before, 'no request got through');
    assert.deepEqual(retries, []);
  });

  test('no client certificate at all is refused too', async () => {
    const c = new DataplaneClient({ baseUrl: mtls.url, username: USER, password: PASSWORD, ca: pki.ca });
    const err = await failure(c.info());
    c.close();
    assert.equal(err.kind, 'tls', err.message);
  });

  test('reads the CA and the client certificate from files too', async () => {
    const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(join(tmpdir(), 'haprx-client-tls-'));
    try {
      await writeFile(join(dir, 'ca.pem'), pki.ca);
      await writeFile(join(dir, 'client.crt'), pki.client.cert);
      await writeFile(join(dir, 'client.key'), pki.client.key);
      const c = new DataplaneClient({ baseUrl: mtls.url, username: USER, password: PASSWORD, ca: join(dir, 'ca.pem'), cert: join(dir, 'client.crt'), key: join(dir, 'client.key') });
      assert.equal((await c.info()).major, 3);
      c.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
