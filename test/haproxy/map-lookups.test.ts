import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../src/haproxy/config.ts';
import { mapEntry, parseMapFile } from '../../src/haproxy/map-file.ts';
import { mapReferences, mapReferencesInText } from '../../src/haproxy/plan-maps.ts';

const configs = {
  'loaded once as a map, by two converters': `global
  maxconn 10
frontend http
  bind :80
  use_backend %[var(txn.k),map(maps/hosts.map)] if { var(txn.k),map_beg(maps/hosts.map) -m found }
  # maps/hosts.map in a comment counts for nothing
  default_backend be
backend be
  server s 127.0.0.1:8080
`,
  'loaded under two spellings': `frontend http
  http-request set-var(txn.a) req.hdr(host),map(maps/hosts.map)
  http-request set-var(txn.b) req.hdr(host),map(./maps/hosts.map)
`,
  'read as a list of patterns too': `frontend http
  acl known req.hdr(host) -f maps/hosts.map
  http-request set-var(txn.a) req.hdr(host),map_reg(maps/hosts.map)
`,
  'quoted words': `frontend http
  http-request set-header X-Route "%[req.hdr(host),map(maps/hosts.map,none)]"
`,
  'not named at all': `frontend http
  bind :80
`,
};

describe('mapReferencesInText', () => {
  for (const [name, text] of Object.entries(configs)) {
    it(`reads what mapReferences reads from the parsed configuration: ${name}`, () => {
      const parsed = mapReferences(parseConfig(text), 'hosts.map');
      assert.deepEqual(mapReferencesInText(text, 'hosts.map'), parsed);
    });
  }

  it('gives the references of each case', () => {
    assert.deepEqual(mapReferencesInText(configs['loaded once as a map, by two converters'], 'hosts.map'), { refs: ['maps/hosts.map'], other: [], orderFree: true });
    assert.deepEqual(mapReferencesInText(configs['loaded under two spellings'], 'hosts.map').refs, ['./maps/hosts.map', 'maps/hosts.map']);
    assert.deepEqual(mapReferencesInText(configs['read as a list of patterns too'], 'hosts.map'), { refs: ['maps/hosts.map'], other: ['acl known req.hdr(host) -f maps/hosts.map'], orderFree: false });
    assert.deepEqual(mapReferencesInText(configs['not named at all'], 'hosts.map'), { refs: [], other: [], orderFree: true });
  });
});

describe('mapEntry', () => {
  const file = [
    '# a.example/ commented out',
    '#b.example/ also a comment',
    '  a.example/ be_indented',
    'b.example/\tbe_tab   ',
    'c.example/ be_first',
    'c.example/ be_second',
    'd.example/x.y+z be_regex_chars',
    'dxexample/xxy+z be_lookalike',
    'e.example/ be_cr\r trailing',
    'f.example/',
    'g.example/longer be_longer',
    'h.example/ be_last',
  ].join('\n');

  it('finds what a lookup finds, as parseMapFile reads the whole file', () => {
    const first = new Map<string, string>();
    for (const e of parseMapFile(file)) if (!first.has(e.key)) first.set(e.key, e.value);
    for (const key of [...first.keys(), 'a.example', 'g.example/', 'd.example/xxy+z', 'h.example', 'nothing.example/']) {
      assert.equal(mapEntry(file, key), first.get(key), key);
    }
    assert.equal(mapEntry(file, 'c.example/'), 'be_first');
    assert.equal(mapEntry(file, 'f.example/'), '', 'a key without a value is there, with an empty value');
    assert.equal(mapEntry(file, 'g.example/'), undefined, 'a longer key is another key');
  });

  it('finds nothing for a key a map line cannot hold', () => {
    assert.equal(mapEntry(file, ''), undefined);
    assert.equal(mapEntry(file, 'a.example/ be_indented'), undefined);
  });
});
