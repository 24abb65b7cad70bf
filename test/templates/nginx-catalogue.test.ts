/**
 * The catalogue of ingress-nginx annotations (templates/snippets/nginx-catalogue):
 * it classifies every annotation ingress-nginx reads, the templates read exactly the
 * ones it says are supported, each of those has a fixture with requests through
 * haproxy, and docs/ingress-nginx.md's table is generated from it.
 */
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { CATALOGUE_PATH, DOC_PATH, parseCatalogue, withTable } from '../../scripts/nginx-annotations-doc.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Every annotation ingress-nginx's controller reads (its last release; the project is
 * archived, so the list is final), from its annotation parsers.
 */
const INGRESS_NGINX = `
affinity affinity-canary-behavior affinity-mode allowlist-source-range app-root auth-always-set-cookie
auth-cache-duration auth-cache-key auth-keepalive auth-keepalive-requests auth-keepalive-share-vars
auth-keepalive-timeout auth-method auth-proxy-set-headers auth-realm auth-request-redirect
auth-response-headers auth-secret auth-secret-type auth-signin auth-signin-redirect-param auth-snippet
auth-tls-error-page auth-tls-match-cn auth-tls-pass-certificate-to-upstream auth-tls-secret
auth-tls-verify-client auth-tls-verify-depth auth-type auth-url backend-protocol canary canary-by-cookie
canary-by-header canary-by-header-pattern canary-by-header-value canary-weight canary-weight-total
client-body-buffer-size configuration-snippet connection-proxy-header cors-allow-credentials
cors-allow-headers cors-allow-methods cors-allow-origin cors-expose-headers cors-max-age custom-headers
custom-http-errors default-backend denylist-source-range disable-proxy-intercept-errors enable-access-log
enable-cors enable-global-auth enable-modsecurity enable-opentelemetry enable-owasp-core-rules
enable-rewrite-log fastcgi-index fastcgi-params-configmap force-ssl-redirect from-to-www-redirect
http2-push-preload limit-allowlist limit-burst-multiplier limit-connections limit-rate limit-rate-after
limit-rpm limit-rps limit-whitelist load-balance mirror-host mirror-request-body mirror-target
modsecurity-snippet modsecurity-transaction-id opentelemetry-operation-name
opentelemetry-trust-incoming-span permanent-redirect permanent-redirect-code preserve-trailing-slash
proxy-body-size proxy-buffer-size proxy-buffering proxy-buffers-number proxy-busy-buffers-size
proxy-connect-timeout proxy-cookie-domain proxy-cookie-path proxy-http-version proxy-max-temp-file-size
proxy-next-upstream proxy-next-upstream-timeout proxy-next-upstream-tries proxy-read-timeout
proxy-redirect-from proxy-redirect-to proxy-request-buffering proxy-send-timeout proxy-ssl-ciphers
proxy-ssl-name proxy-ssl-protocols proxy-ssl-secret proxy-ssl-server-name proxy-ssl-verify
proxy-ssl-verify-depth relative-redirects rewrite-target satisfy server-alias server-snippet
service-upstream session-cookie-change-on-failure session-cookie-conditional-samesite-none
session-cookie-domain session-cookie-expires session-cookie-max-age session-cookie-name
session-cookie-path session-cookie-samesite session-cookie-secure ssl-ciphers ssl-passthrough
ssl-prefer-server-ciphers ssl-redirect stream-snippet temporal-redirect temporal-redirect-code upstream-hash-by upstream-hash-by-subset
upstream-hash-by-subset-size upstream-vhost use-port-in-redirects use-regex whitelist-source-range
x-forwarded-prefix`
  .trim()
  .split(/\s+/);

const catalogue = async () => parseCatalogue(await readFile(join(ROOT, CATALOGUE_PATH), 'utf8'));

/** The fixtures of the compatibility layer: file name and parsed YAML. */
async function nginxFixtures(): Promise<{ file: string; doc: { resources?: unknown[]; assert: Record<string, unknown>[] } }[]> {
  const dir = join(ROOT, 'templates', 'tests');
  const files = (await readdir(dir)).filter((f) => f.startsWith('nginx-') && f.endsWith('.yaml'));
  return Promise.all(files.map(async (file) => ({ file, doc: parse(await readFile(join(dir, file), 'utf8')) })));
}

describe('the ingress-nginx annotation catalogue', () => {
  it('classifies every annotation ingress-nginx reads, and nothing else', async () => {
    const entries = await catalogue();
    assert.deepEqual(Object.keys(entries).sort(), [...INGRESS_NGINX].sort());
    assert.equal(INGRESS_NGINX.length, 138);
    for (const [name, e] of Object.entries(entries)) {
      assert.ok(['yes', 'differs', 'no'].includes(e.support), `${name}: support`);
      assert.ok(['skip', 'ignore'].includes(e.refusal), `${name}: refusal`);
      assert.ok(e.note.length > 10, `${name}: says what it does or why not`);
    }
  });

  it('the templates read exactly the annotations it supports', async () => {
    const entries = await catalogue();
    const source = await readFile(join(ROOT, 'templates', 'snippets', 'nginx-annotations'), 'utf8');
    // Annotations are read through these helpers, by name.
    const read = new Set([...source.matchAll(/\b(?:str|bool|int|cidrs|secretRef|url|seconds|redirectOf)\('([a-z0-9-]+)'(?:, '([a-z0-9-]+-code)')?/g)].flatMap((m) => [m[1]!, ...(m[2] ? [m[2]] : [])]));
    // Read as a group: the canary's own, and those that go with auth-url.
    for (const m of source.matchAll(/'([a-z0-9-]+)'/g)) if (entries[m[1]!] && /^(canary|session-cookie|limit-)/.test(m[1]!)) read.add(m[1]!);
    const supported = Object.entries(entries).filter(([, e]) => e.support !== 'no').map(([n]) => n);
    for (const name of supported) assert.ok(read.has(name), `${name} is supported, yet the templates do not read it`);
    for (const name of read) assert.ok(entries[name] && entries[name].support !== 'no', `the templates read ${name}, which the catalogue does not list as supported`);
  });

  it('every supported annotation has a fixture that sends requests through haproxy with it', async () => {
    const entries = await catalogue();
    const fixtures = await nginxFixtures();
    const withRequests = fixtures.filter((f) => f.doc.assert.some((a) => a['request'] !== undefined));
    const used = new Set<string>();
    for (const f of withRequests) for (const m of JSON.stringify(f.doc.resources ?? []).matchAll(/nginx\.ingress\.kubernetes\.io\/([a-z0-9-]+)/g)) used.add(m[1]!);
    const missing = Object.entries(entries)
      .filter(([name, e]) => e.support !== 'no' && !used.has(name))
      .map(([name]) => name);
    assert.deepEqual(missing, []);
  });

  it(`is the table of ${DOC_PATH} (run npm run docs:nginx after changing it)`, async () => {
    const doc = await readFile(join(ROOT, DOC_PATH), 'utf8');
    assert.equal(doc, withTable(doc, await catalogue()), `${DOC_PATH} is stale: run npm run docs:nginx`);
  });
});
