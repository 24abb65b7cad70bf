import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it, mock } from 'node:test';
import { Store } from '../../src/k8s/store.ts';
import { type TemplateSet, compileTemplates, renderTemplates } from '../../src/templating/engine.ts';
import { templateRealm } from '../../src/templating/realm.ts';
import { compileErrors, compiled, haproxyWords, renderError, rendered, service, storeOf } from './support.ts';

describe('compileTemplates', () => {
  it('compiles each template exactly once, however often the set is rendered', () => {
    // Every template is compiled into the template realm, once; the line probe of locate.ts is not a template.
    const compile = mock.method(templateRealm(), 'compile');
    const templatesCompiled = () => compile.mock.calls.filter((call) => call.arguments[2] !== 'haprx-line-probe');
    try {
      const templates = compiled({
        main: "<%- include('head') %>\n<%- include('backend', { name: 'b' }) %>\n",
        maps: { 'hosts.map': "<%- include('head') %>" },
        files: { '503.http': 'HTTP/1.1 503\r\n' },
        certs: { 'site.pem': 'pem' },
        snippets: { head: '# head', backend: 'backend <%= locals.name %>' },
      });
      const labels = templatesCompiled().map((call) => call.arguments[2]).sort();
      assert.deepEqual(labels, ['general/503.http', 'haproxy.cfg', 'maps/hosts.map', 'snippets/backend', 'snippets/head', 'ssl/site.pem']);
      for (let i = 0; i < 5; i++) rendered(templates);
      assert.equal(templatesCompiled().length, 6, 'renders and includes compile nothing');
      const failing = compiled({ main: '<%\n  h.fail("x");\n%>' });
      for (let i = 0; i < 3; i++) assert.equal(renderTemplates(failing, { resources: {}, values: {} }).ok, false);
      assert.equal(templatesCompiled().length, 7, 'locating a failure compiles nothing either');
    } finally {
      compile.mock.restore();
    }
  });

  it('reports a syntax error with the template and its line', () => {
    const [error, ...more] = compileErrors({ main: 'global\n  daemon\n<% if (x)) { %>\n<% } %>\n' });
    assert.deepEqual(more, []);
    assert.equal(error?.template, 'haproxy.cfg');
    assert.equal(error?.line, 3);
    assert.match(error?.message ?? '', /Unexpected token/);
  });

  it('locates errors inside multi-line scriptlets and after trimmed tags', () => {
    const main = ['a', '<% const xs = [', '  1,', '  2 +', ']; -%>', 'b', '<%= xs %>'].join('\n');
    const [error] = compileErrors({ main });
    assert.equal(error?.line, 5);
    const later = ['<%_ const a = 1 _%>', '<%# comment', 'spanning lines %>', 'text', '<%= a b %>'].join('\n');
    assert.equal(compileErrors({ main: later })[0]?.line, 5);
  });

  it('names map, file, certificate and snippet templates in compile errors, all at once', () => {
    const errors = compileErrors({
      main: 'ok',
      maps: { 'hosts.map': 'a\n<%= ( %>' },
      files: { 'x.txt': '<% } %>' },
      certs: { 'c.pem': '\n\n<%= [ %>' },
      snippets: { backend: 'x\ny\n<% for (;; %>' },
    });
    assert.deepEqual(
      errors.map((e) => [e.template, e.line]),
      [
        ['maps/hosts.map', 2],
        ['general/x.txt', 1],
        ['ssl/c.pem', 3],
        ['snippets/backend', 3],
      ],
    );
  });

  it('reports an unclosed tag at the line where it opens', () => {
    const [error] = compileErrors({ main: 'a\nb\n<% if (x) {\nc\n' });
    assert.deepEqual([error?.template, error?.line], ['haproxy.cfg', 3]);
    assert.match(error?.message ?? '', /matching close tag/);
  });

  it('reports a block left open at the end of the template', () => {
    const [error] = compileErrors({ main: 'a\n<% if (x) { %>\nb\nc' });
    assert.deepEqual([error?.template, error?.line], ['haproxy.cfg', 4]);
    assert.match(error?.message ?? '', /unexpected end of template/);
  });

  it('rejects redeclaring a context name, and implicit globals at run time (strict mode)', () => {
    const [error] = compileErrors({ main: 'x\n<% let h = 1 %>' });
    assert.deepEqual([error?.line, error?.message], [2, "Identifier 'h' has already been declared"]);
    const thrown = renderError({ main: 'x\n<% total = 1 %>' });
    assert.deepEqual([thrown.line, thrown.message], [2, 'ReferenceError: total is not defined']);
  });

  it('rejects bad file names, naming each', () => {
    const errors = compileErrors({
      main: '',
      maps: { '../etc/passwd': '', ok: '' },
      files: { '.hidden': '' },
      certs: { 'a/b.pem': '' },
      snippets: { 'with space': '' },
    });
    assert.deepEqual(
      errors.map((e) => e.template),
      ['maps/../etc/passwd', 'general/.hidden', 'ssl/a/b.pem', 'snippets/with space'],
    );
    for (const error of errors) assert.match(error.message, /invalid \w+ name/);
    assert.match(errors[0]?.message ?? '', /"\.\.\/etc\/passwd"/);
  });

  it('rejects sources that are not strings and a malformed set without throwing', () => {
    const errors = compileErrors({ main: 5, maps: { a: null } } as unknown as TemplateSet);
    assert.deepEqual(
      errors.map((e) => e.template),
      ['maps/a', 'haproxy.cfg'],
    );
    assert.deepEqual(
      compileErrors({ main: '', maps: ['x'] } as unknown as TemplateSet).map((e) => e.template),
      ['maps'],
    );
    assert.equal(compileTemplates(null as unknown as TemplateSet).ok, false);
  });

  it('rejects an unknown kind of template rather than ignoring it', () => {
    const errors = compileErrors({ main: '', map: { 'hosts.map': '' } } as unknown as TemplateSet);
    assert.deepEqual(errors, [{ template: 'map', message: 'unknown kind of template "map": expected main, maps, files, certs, snippets' }]);
  });
});

describe('renderTemplates', () => {
  const services = storeOf('services', [service('default', 'web', 8080), service('default', 'api', 9090), service('kube-system', 'dns', 53)]);

  it('renders haproxy.cfg from resources, values and helpers', () => {
    const templates = compiled({
      main: [
        'frontend http',
        '  bind :<%= values.httpPort %>',
        '<% for (const svc of resources.services.list()) { -%>',
        'backend <%= h.identifier(svc.metadata.namespace, svc.metadata.name) %>',
        '  server s1 <%= svc.metadata.name %>:<%= svc.spec.ports[0].port %>',
        '<% } -%>',
      ].join('\n'),
    });
    const config = rendered(templates, { resources: { services }, values: { httpPort: 80 } });
    assert.equal(
      config.main,
      [
        'frontend http',
        '  bind :80',
        'backend default_api',
        '  server s1 api:9090',
        'backend default_web',
        '  server s1 web:8080',
        'backend kube-system_dns',
        '  server s1 dns:53',
        '',
      ].join('\n'),
    );
  });

  it('renders maps, general files and certificates under their names', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const secrets = storeOf('secrets', [{ kind: 'Secret', metadata: { namespace: 'default', name: 'tls' }, data: { 'tls.crt': Buffer.from(pem).toString('base64') } }]);
    const templates = compiled({
      main: "  use_backend %[req.hdr(host),map(<%= h.mapPath('hosts.map') %>)]\n  crt <%= h.certPath('site.pem') %>\n  errorfile 503 <%= h.filePath('503.http') %>\n",
      maps: {
        'hosts.map': '<% for (const s of resources.services.get("default")) { %><%= h.mapKey(s.metadata.name + ".example.com") %> <%= s.metadata.name %>\n<% } %>',
        'paths.map': '/ root\n',
      },
      files: { '503.http': 'HTTP/1.1 503 Service Unavailable\r\n\r\n<%= values.message %>\n' },
      certs: { 'site.pem': "<%- h.b64decode(resources.secrets.first('default', 'tls').data['tls.crt']) %>" },
    });
    const config = rendered(templates, { resources: { services, secrets }, values: { message: 'Back soon' } });
    assert.equal(config.main, '  use_backend %[req.hdr(host),map(maps/hosts.map)]\n  crt ssl/site.pem\n  errorfile 503 general/503.http\n');
    assert.deepEqual(config.maps, { 'hosts.map': 'api.example.com api\nweb.example.com web\n', 'paths.map': '/ root\n' });
    assert.deepEqual(config.files, { '503.http': 'HTTP/1.1 503 Service Unavailable\r\n\r\nBack soon\n' });
    assert.deepEqual(config.certs, { 'site.pem': pem });
  });

  it('escapes <%= %> in haproxy.cfg to exactly one word and leaves <%- %> raw', () => {
    const config = rendered(compiled({ main: "http-request set-header X-Team <%= 'a b' %> if TRUE\n<%- 'raw text' %>" }));
    const [line, raw] = config.main.split('\n');
    assert.deepEqual(haproxyWords(line ?? ''), ['http-request', 'set-header', 'X-Team', 'a b', 'if', 'TRUE']);
    assert.equal(raw, 'raw text');
  });

  it('refuses a value that would inject a directive, at its line', () => {
    const error = renderError({ main: "frontend f\n  bind :80\n  http-request set-header X-A <%= 'x\\nbind :1' %>\n" });
    assert.deepEqual([error.template, error.line], ['haproxy.cfg', 3]);
    assert.match(error.message, /control character U\+000A/);
  });

  it('refuses a map value that would add an entry; spaces are fine there', () => {
    const templates = compiled({ maps: { 'hosts.map': '<%= values.host %> <%= values.backend %>\n' }, main: '' });
    const ok = rendered(templates, { resources: {}, values: { host: 'a.example', backend: 'be one' } });
    assert.equal(ok.maps['hosts.map'], 'a.example be one\n');
    const result = renderTemplates(templates, { resources: {}, values: { host: 'a.example', backend: 'x\nevil.example be_evil' } });
    assert.equal(result.ok, false);
    if (!result.ok) assert.deepEqual([result.error.template, result.error.line], ['maps/hosts.map', 1]);
  });

  it('escapes a snippet by the kind of template that includes it', () => {
    const templates = compiled({
      main: "<%- include('pair', { v: 'a b' }) %>",
      maps: { 'm.map': "<%- include('pair', { v: 'a b' }) %>" },
      snippets: { pair: 'k <%= locals.v %>' },
    });
    const config = rendered(templates);
    assert.equal(config.main, "k 'a b'");
    assert.equal(config.maps['m.map'], 'k a b');
  });

  it('includes snippets with arguments, nested, from memory only', () => {
    const templates = compiled({
      main: "<% for (const svc of resources.services.get('default')) { %><%- include('backend', { svc }) %><% } %>",
      snippets: {
        backend: "backend <%= locals.svc.metadata.name %>\n<%- include('server', { port: locals.svc.spec.ports[0].port }) %>",
        server: '  server s1 127.0.0.1:<%= locals.port %>\n',
      },
    });
    assert.equal(rendered(templates, { resources: { services }, values: {} }).main, 'backend api\n  server s1 127.0.0.1:9090\nbackend web\n  server s1 127.0.0.1:8080\n');
  });

  it('does not reach the file system for includes', () => {
    const error = renderError({ main: "a\n<%- include('/etc/hostname') %>" });
    assert.deepEqual([error.template, error.line], ['haproxy.cfg', 2]);
    assert.match(error.message, /unknown snippet "\/etc\/hostname" \(snippets: none\)/);
    const raw = renderError({ main: "a\n<%- arguments[2]('/etc/hostname') %>" });
    assert.equal(raw.template, 'haproxy.cfg');
    assert.match(raw.message, /renders snippets of the template set only/);
  });

  it('names an unknown snippet and lists the known ones', () => {
    const error = renderError({ main: "x\n\n<%- include('backnd') %>", snippets: { backend: '', frontend: '' } });
    assert.deepEqual(error, { template: 'haproxy.cfg', line: 3, message: 'unknown snippet "backnd" (snippets: backend, frontend)' });
  });

  it('rejects include arguments that would shadow the context', () => {
    const error = renderError({ main: "<%- include('s', { h: 1 }) %>", snippets: { s: '' } });
    assert.match(error.message, /argument "h" is reserved/);
    assert.match(renderError({ main: "<%- include('s', 'x') %>", snippets: { s: '' } }).message, /arguments must be an object/);
    assert.match(renderError({ main: '<%- include(42) %>' }).message, /takes a snippet name, got 42/);
  });

  describe('errors thrown while rendering', () => {
    it('name haproxy.cfg and the line', () => {
      assert.deepEqual(renderError({ main: 'global\n  daemon\n<% throw new Error("boom") %>\n' }), { template: 'haproxy.cfg', line: 3, message: 'boom' });
    });

    it('name a map template and the line', () => {
      const error = renderError({ main: '', maps: { 'hosts.map': 'a b\n<%= resources.services.first("nope").metadata.name %>' } }, { resources: { services }, values: {} });
      assert.equal(error.template, 'maps/hosts.map');
      assert.equal(error.line, 2);
      assert.match(error.message, /^TypeError: Cannot read properties of undefined/);
    });

    it('name general and certificate templates', () => {
      assert.equal(renderError({ main: '', files: { 'f.txt': '<% h.fail("x") %>' } }).template, 'general/f.txt');
      assert.equal(renderError({ main: '', certs: { 'c.pem': '<% h.fail("x") %>' } }).template, 'ssl/c.pem');
    });

    it('name the snippet and its own line, not the include site', () => {
      const error = renderError({
        main: "a\nb\nc\n<%- include('outer') %>",
        snippets: { outer: "x\n<%- include('inner', { n: 1 }) %>", inner: 'one\ntwo\n<% h.fail(`bad ${locals.n}`) %>' },
      });
      assert.deepEqual(error, { template: 'snippets/inner', line: 3, message: 'bad 1' });
    });

    it('keep counting lines across multi-line scriptlets', () => {
      const main = ['<%', '  const a = 1;', '  const b = 2;', '-%>', 'text', '<% if (a + b === 3) {', '  throw new RangeError("deep");', '} %>'].join('\n');
      assert.deepEqual(renderError({ main }), { template: 'haproxy.cfg', line: 7, message: 'RangeError: deep' });
    });

    it('give the exact line inside a multi-line block, where the throw happened', () => {
      const main = [
        '<%',
        'function check(host) {',
        '  if (!h.isHostname(host)) h.fail(`bad host ${host}`);',
        '}',
        '-%>',
        'x',
        '<% for (const host of ["a.example", "b..example"]) {',
        '     check(host);',
        '   } %>',
      ].join('\n');
      assert.deepEqual(renderError({ main }), { template: 'haproxy.cfg', line: 3, message: 'bad host b..example' });
      const snippet = 'a\n<%\n  const xs = [1, 2];\n  xs.map((x) => {\n    if (x > 1) throw new Error(`too big: ${x}`);\n  });\n%>';
      assert.deepEqual(renderError({ main: "<%- include('s') %>", snippets: { s: snippet } }), { template: 'snippets/s', line: 5, message: 'too big: 2' });
    });

    it('attribute a callback to the snippet that ran it, at the calling line', () => {
      const error = renderError({
        main: "<%- include('each', { items: [1], fn: () => { throw new Error('from main') } }) %>",
        snippets: { each: 'x\n<% for (const i of locals.items) { %>\n<%- locals.fn(i) %>\n<% } %>' },
      });
      assert.deepEqual(error, { template: 'snippets/each', line: 3, message: 'from main' });
    });

    it('fall back to the line where the tag starts for a thrown object without a stack', () => {
      const error = renderError({ main: 'x\n<%\n  const a = 1;\n  throw { a };\n%>' });
      assert.equal(error.line, 2);
    });

    it('report h.fail with the message only', () => {
      assert.deepEqual(renderError({ main: '\n<% h.fail("no backend for example.com") %>' }), { template: 'haproxy.cfg', line: 2, message: 'no backend for example.com' });
    });
  });

  it('names an unknown resource set and lists the configured ones', () => {
    const error = renderError({ main: 'x\n<% for (const i of resources.ingress.list()) {} %>' }, { resources: { services, ingresses: new Store('ingresses') }, values: {} });
    assert.deepEqual(error, { template: 'haproxy.cfg', line: 2, message: 'unknown resource set "ingress" (configured sets: ingresses, services)' });
  });

  it('checks index keys given to get() and first()', () => {
    const error = renderError({ main: '<% resources.services.get("default", undefined) %>' }, { resources: { services }, values: {} });
    assert.match(error.message, /resources.services.get\(\): key 2 is undefined/);
    const found = rendered(compiled({ main: "<%= resources.services.first('kube-system', 'dns').spec.ports[0].port %> <%= resources.services.size %>" }), { resources: { services }, values: {} });
    assert.equal(found.main, '53 3');
  });

  it('keeps resources and values read-only, so one render cannot change the next', () => {
    const input = { resources: { services }, values: { ports: [3, 1, 2] } };
    for (const main of [
      '<% resources.services.list().sort() %>',
      '<% resources.services.list().reverse() %>',
      "<% resources.services.list()[0].metadata.name = 'x' %>",
      '<% delete resources.services.list()[0].spec %>',
      '<% values.ports.push(4) %>',
      '<% values.extra = 1 %>',
      '<% resources.services = null %>',
      "<% Object.defineProperty(resources.services.first('default', 'web'), 'x', { value: 1 }) %>",
    ]) {
      const error = renderError({ main: `\n${main}` }, input);
      assert.equal(error.line, 2, main);
      assert.match(error.message, /read-only/, main);
    }
    assert.deepEqual(
      services.list().map((s) => s.metadata.name),
      ['api', 'web', 'dns'],
    );
    assert.deepEqual(input.values.ports, [3, 1, 2]);
    assert.equal(renderError({ main: '<% h.word = null %>' }).message.startsWith('TypeError'), true);
    assert.equal(rendered(compiled({ main: '<%= [...values.ports].sort().join(",") %>' }), input).main, '1,2,3');
  });

  describe('determinism', () => {
    const main = [
      '<% for (const svc of resources.services.list()) { -%>',
      '<%= svc.metadata.name %> <%- Object.keys(svc.metadata.labels).join(",") %> <%- JSON.stringify(svc.spec) %>',
      '<% for (const k in svc.metadata.annotations) { %><%= k %>=<%= svc.metadata.annotations[k] %> <% } %>',
      '<% for (const [k, v] of h.entries(svc.metadata.annotations)) { %><%= k %>:<%= v %> <% } %>',
      '<% } -%>',
      '<%- JSON.stringify(values) %>',
    ].join('\n');
    const ordered = storeOf('services', [
      service('default', 'a', 1, { metadata: { namespace: 'default', name: 'a', labels: { app: 'a', tier: 'web' }, annotations: { x: '1', y: '2' } } }),
      service('default', 'b', 2, { metadata: { namespace: 'default', name: 'b', labels: { app: 'b', tier: 'db' }, annotations: { p: '1', q: '2' } } }),
    ]);
    // The same objects, inserted in the other order and with every key written in the other order.
    const shuffled = storeOf('services', [
      { spec: { ports: [{ port: 2, name: 'http' }] }, metadata: { annotations: { q: '2', p: '1' }, labels: { tier: 'db', app: 'b' }, name: 'b', namespace: 'default' }, kind: 'Service', apiVersion: 'v1' },
      { spec: { ports: [{ port: 1, name: 'http' }] }, metadata: { annotations: { y: '2', x: '1' }, labels: { tier: 'web', app: 'a' }, name: 'a', namespace: 'default' }, kind: 'Service', apiVersion: 'v1' },
    ]);

    it('gives byte-identical output whatever the insertion order of objects and keys', () => {
      const templates = compiled({ main });
      const first = rendered(templates, { resources: { services: ordered }, values: { b: 1, a: { y: 1, x: 2 } } });
      const second = rendered(templates, { resources: { services: shuffled }, values: { a: { x: 2, y: 1 }, b: 1 } });
      assert.equal(second.main, first.main);
      assert.equal(second.hash, first.hash);
      assert.equal(first.main.split('\n')[0], 'a app,tier {"ports":[{"name":"http","port":1}]}');
      assert.equal(first.main.split('\n')[1], 'x=1 y=2 ');
      assert.ok(first.main.endsWith('{"a":{"x":2,"y":1},"b":1}'));
    });

    it('gives the same hash on every render of the same input, and a different one when the input changes', () => {
      const templates = compiled({ main, maps: { 'z.map': 'z', 'a.map': 'a' } });
      const input = { resources: { services: ordered }, values: {} };
      const hashes = new Set(Array.from({ length: 5 }, () => rendered(templates, input).hash));
      assert.equal(hashes.size, 1);
      const config = rendered(templates, input);
      assert.deepEqual(Object.keys(config.maps), ['a.map', 'z.map']);
      const changed = rendered(templates, { resources: { services: ordered }, values: { extra: 1 } });
      assert.notEqual(changed.hash, config.hash);
      assert.match(config.hash, /^[0-9a-f]{64}$/);
      assert.notEqual(config.hash, createHash('sha256').update('').digest('hex'));
    });
  });

  describe('hostile templates', () => {
    const cases: [string, string][] = [
      ['a string', '<% throw "boom" %>'],
      ['null', '<% throw null %>'],
      ['undefined', '<% throw undefined %>'],
      ['a number', '<% throw 42 %>'],
      ['a symbol', '<% throw Symbol("s") %>'],
      ['a plain object', '<% throw { code: 1 } %>'],
      ['a frozen error', '<% throw Object.freeze(new Error("frozen")) %>'],
      ['an object whose message getter throws', '<% throw { get message() { throw new Error("inner") } } %>'],
      ['a proxy that throws from every trap', '<% throw new Proxy({}, { get() { throw 1 }, set() { throw 2 }, getPrototypeOf() { throw 3 } }) %>'],
      ['a revoked proxy', '<% const r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy %>'],
      ['an object whose toString throws, written raw', '<%- { toString() { throw new Error("no") } } %>'],
      ['a value whose conversion throws, escaped', '<%= { [Symbol.toPrimitive]() { throw null } } %>'],
      ['runaway recursion', '<% function f() { return f() } f() %>'],
      ['self include', "<%- include('loop') %>"],
      ['mutual include', "<%- include('ping') %>"],
    ];
    const snippets = { loop: "<%- include('loop') %>", ping: "<%- include('pong') %>", pong: "<%- include('ping') %>" };

    for (const [what, source] of cases) {
      it(`fails cleanly on ${what}`, () => {
        const error = renderError({ main: `line one\n${source}`, snippets });
        assert.equal(typeof error.message, 'string');
        assert.ok(error.message.length > 0);
        assert.match(error.template, /^(haproxy\.cfg|snippets\/(loop|ping|pong))$/);
      });
    }

    it('reports where an include cycle closes', () => {
      assert.deepEqual(renderError({ main: "x\n<%- include('ping') %>", snippets }), {
        template: 'snippets/pong',
        line: 1,
        message: 'include cycle: snippets/ping -> snippets/pong -> snippets/ping',
      });
      assert.match(renderError({ main: "<%- include('loop') %>", snippets }).message, /^include cycle: snippets\/loop -> snippets\/loop$/);
    });

    it('still gives the line for plain objects and runaway recursion', () => {
      assert.equal(renderError({ main: 'x\n<% throw { code: 1 } %>' }).line, 2);
      const overflow = renderError({ main: 'x\ny\n<% function f() { return f() } f() %>' });
      assert.deepEqual([overflow.line, overflow.message], [3, 'RangeError: Maximum call stack size exceeded']);
    });

    it('recovers from a caught include failure, so the stack of active snippets stays right', () => {
      const templates = compiled({
        main: "<% try { include('bad') } catch (e) {} %><%- include('ok') %><%- include('ok') %>",
        snippets: { bad: '<% h.fail("x") %>', ok: 'ok;' },
      });
      assert.equal(rendered(templates).main, 'ok;ok;');
    });

    it('renders the same set again normally after a failure', () => {
      const templates = compiled({ main: '<% if (values.fail) h.fail("asked to") %>fine' });
      assert.equal(renderTemplates(templates, { resources: {}, values: { fail: true } }).ok, false);
      assert.equal(rendered(templates, { resources: {}, values: { fail: false } }).main, 'fine');
    });

    it('fails cleanly on malformed input instead of throwing', () => {
      const templates = compiled({ main: 'x' });
      let result: ReturnType<typeof renderTemplates> | undefined;
      assert.doesNotThrow(() => {
        result = renderTemplates(templates, { resources: null, values: {} } as unknown as Parameters<typeof renderTemplates>[1]);
      });
      assert.equal(result?.ok, false);
    });
  });
});

describe('render warnings and added certificate files', () => {
  const ingress = { kind: 'Ingress', metadata: { namespace: 'shop', name: 'web' } };

  it('carries the warnings of h.warn in the result, each once, in the order raised, and renders on', () => {
    const templates = compiled({
      main: "<% h.warn(values.ingress, 'skipped: bad host') %><%- h.warn('values.port', 'not a port') %>ok\n<% h.warn(values.ingress, 'skipped: bad host') %>",
      maps: { 'a.map': "<% h.warn(values.ingress, 'skipped: bad host') %><% h.warn(undefined, 'no subject') %>" },
    });
    const result = renderTemplates(templates, { resources: {}, values: { ingress } });
    assert.ok(result.ok);
    assert.equal(result.config.main, 'ok\n');
    assert.deepEqual(result.warnings, [
      { object: 'Ingress shop/web', ref: { kind: 'Ingress', namespace: 'shop', name: 'web' }, message: 'skipped: bad host', template: 'haproxy.cfg', line: 1 },
      { object: 'values.port', message: 'not a port', template: 'haproxy.cfg', line: 1 },
      { message: 'no subject', template: 'maps/a.map', line: 1 },
    ]);
  });

  it('starts each render with no warnings, and a render without any has an empty list', () => {
    const templates = compiled({ main: "<% if (values.bad) h.warn('x', 'bad') %>" });
    const first = renderTemplates(templates, { resources: {}, values: { bad: true } });
    const second = renderTemplates(templates, { resources: {}, values: { bad: false } });
    assert.ok(first.ok && second.ok);
    assert.equal(first.warnings.length, 1);
    assert.deepEqual(second.warnings, []);
  });

  it('computes an h.once value once per render, shared by every template, and afresh in the next render', () => {
    // Each template adds its name to the shared value: one value per render, seen by all of them in turn.
    const visit = (who: string) => `<% const m = h.once('model', () => ({ seen: [] })); m.seen.push('${who}') %><%= m.seen.join('+') %>`;
    const templates = compiled({
      main: `${visit('main')}\n<%- include('again') %>`,
      maps: { 'a.map': `k ${visit('map')}\n` },
      snippets: { again: visit('snippet') },
    });
    for (let i = 0; i < 2; i++) {
      const result = renderTemplates(templates, { resources: {}, values: {} });
      assert.ok(result.ok, JSON.stringify(!result.ok && result.error));
      assert.equal(result.config.main, 'main\nmain+snippet');
      assert.equal(result.config.maps['a.map'], 'k main+snippet+map\n');
    }
    const bad = renderTemplates(compiled({ main: "<% h.once('k', 3) %>" }), { resources: {}, values: {} });
    assert.ok(!bad.ok);
    assert.match(bad.error.message, /expected a function/);
  });

  it('adds h.certFile files to the certificates, beside the templates, and returns their path', () => {
    const templates = compiled({
      main: "bind :443 ssl crt-list <%= h.certFile('list.txt', h.certFile('a.pem', 'A\\n') + ' a.example\\n') %>\n",
      maps: { 'm.map': "<% h.certFile('a.pem', 'A\\n') %>" },
      certs: { 'static.pem': 'S\n' },
    });
    const config = rendered(templates);
    assert.equal(config.main, 'bind :443 ssl crt-list ssl/list.txt\n');
    assert.deepEqual(config.certs, { 'a.pem': 'A\n', 'list.txt': 'ssl/a.pem a.example\n', 'static.pem': 'S\n' });
    assert.equal(rendered(templates).hash, config.hash, 'deterministic');
    assert.deepEqual(rendered(compiled({ main: '' })).certs, {}, 'no files left over from another set');
  });

  it('refuses a certFile that clashes with a template, with other content, or has a bad name', () => {
    const clash = renderError({ main: "<% h.certFile('static.pem', 'X') %>", certs: { 'static.pem': 'S' } });
    assert.match(clash.message, /"static.pem" is the name of a certificate template/);
    assert.match(renderError({ main: "<% h.certFile('a.pem', 'A') %><% h.certFile('a.pem', 'B') %>" }).message, /already added with other content/);
    assert.match(renderError({ main: "<% h.certFile('../a.pem', 'A') %>" }).message, /not a valid file name/);
    assert.match(renderError({ main: "<% h.certFile('a.pem', 5) %>" }).message, /content must be a string/);
  });

  it('lists the files marked by h.referencesFiles() (from a snippet too) in the render, and changes the hash with them', () => {
    const files = { 'x.lua': "<% h.referencesFiles() %>-- <%= h.mapPath('m.map') %>\n", 'y.txt': "<%- include('mark') %>y\n", 'plain.txt': 'p\n' };
    const templates = compiled({ main: '', maps: { 'm.map': '' }, files, snippets: { mark: '<% h.referencesFiles() %>' } });
    const config = rendered(templates);
    assert.deepEqual(config.referencing, ['general/x.lua', 'general/y.txt']);
    assert.equal(config.files['x.lua'], '-- maps/m.map\n');
    const unmarked = rendered(compiled({ main: '', maps: { 'm.map': '' }, files: { ...files, 'x.lua': "-- <%= h.mapPath('m.map') %>\n" }, snippets: { mark: '' } }));
    assert.equal(unmarked.referencing, undefined, 'nothing marked, nothing listed');
    assert.notEqual(unmarked.hash, config.hash);
    assert.match(renderError({ main: '<% h.referencesFiles() %>' }).message, /haproxy\.cfg needs no mark/);
  });

  it('forgets the files and warnings of a failed render', () => {
    const templates = compiled({ main: "<% h.certFile('a.pem', 'A'); h.warn('x', 'y'); if (values.fail) h.fail('stop') %>" });
    assert.equal(renderTemplates(templates, { resources: {}, values: { fail: true } }).ok, false);
    const next = renderTemplates(templates, { resources: {}, values: { fail: false } });
    assert.ok(next.ok);
    assert.deepEqual(Object.keys(next.config.certs), ['a.pem']);
    assert.equal(next.warnings.length, 1);
  });
});
