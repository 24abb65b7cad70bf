import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HaproxyConfig, type SectionType, editConfig, findSection, parseConfig } from '../../src/haproxy/config.ts';
import { defaultsChain, effectiveLine, sameSectionLayout } from '../../src/haproxy/plan-config.ts';

const TEXT = `global
  maxconn 10
frontend early
  bind :80
defaults
  balance roundrobin
defaults base
  balance leastconn
defaults web from base
  timeout server 5s
backend a
  server s1 10.0.0.1:80
backend b from base
  server s1 10.0.0.1:80
defaults loop from loop2
  timeout client 1s
defaults loop2 from loop
  timeout client 2s
backend c from loop
  server s1 10.0.0.1:80
defaults base
  balance first
defaults
  balance source
backend d
  server s1 10.0.0.1:80
`;

const names = (config: HaproxyConfig, type: SectionType, name: string) =>
  defaultsChain(config, findSection(config, type, name)!).map((s) => `${s.name || '(unnamed)'}@${s.offset}`);

describe('defaultsChain', () => {
  const config = parseConfig(TEXT);
  const at = (name: string, nth = 0) => config.sections.filter((s) => s.type === 'defaults' && s.name === name)[nth]!.offset;

  it('takes the defaults named with from (the first of that name), else the last defaults before the section, outermost first', () => {
    assert.deepEqual(names(config, 'frontend', 'early'), []);
    assert.deepEqual(names(config, 'backend', 'a'), [`base@${at('base')}`, `web@${at('web')}`]);
    assert.deepEqual(names(config, 'backend', 'b'), [`base@${at('base')}`]);
    assert.deepEqual(names(config, 'backend', 'd'), [`(unnamed)@${at('', 1)}`], 'a defaults section without from starts afresh');
    assert.deepEqual(names(config, 'defaults', 'web'), [`base@${at('base')}`]);
    assert.deepEqual(defaultsChain(config, config.sections.find((s) => s.type === 'defaults' && s.name === '')!), [], 'a defaults section inherits only through from');
  });

  it('stops at a loop of from', () => {
    assert.deepEqual(names(config, 'backend', 'c'), [`loop2@${at('loop2')}`, `loop@${at('loop')}`]);
  });

  it('gives nothing for a section of another configuration', () => {
    assert.deepEqual(defaultsChain(config, findSection(parseConfig(TEXT), 'backend', 'a')!), []);
  });

  it('reads the edited sections of a configuration derived by body edits, sharing the layout', () => {
    const web = findSection(config, 'defaults', 'web')!;
    const line = 'timeout server 5s';
    const start = TEXT.indexOf(line);
    assert.ok(start > web.offset);
    const derived = editConfig(config, [{ start, end: start + line.length, text: 'timeout server 9s' }]);
    sameSectionLayout(derived, config);
    const a = findSection(derived, 'backend', 'a')!;
    assert.equal(effectiveLine(derived, a, 'timeout')?.args.join(' '), 'server 9s');
    assert.equal(effectiveLine(derived, a, 'balance')?.args[0], 'leastconn');
    assert.equal(effectiveLine(config, findSection(config, 'backend', 'a')!, 'timeout')?.args.join(' '), 'server 5s');
    assert.deepEqual(names(derived, 'backend', 'd'), names(config, 'backend', 'd'));
  });

  it('finds a chain in a derived configuration without going through its sections', () => {
    const big = parseConfig(`defaults\n  balance roundrobin\n${Array.from({ length: 500 }, (_, i) => `backend b${i}\n  server s1 10.0.0.1:80\n`).join('')}`);
    const target = findSection(big, 'backend', 'b250')!;
    assert.equal(defaultsChain(big, target).length, 1);
    const line = '  server s1 10.0.0.1:80';
    const start = target.offset + target.text.indexOf(line);
    const derived = editConfig(big, [{ start, end: start + line.length, text: '  server s1 10.0.0.2:80' }]);
    let reads = 0;
    const sections = new Proxy(derived.sections, {
      get(array, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(array, key, receiver) as unknown;
      },
    });
    const counted: HaproxyConfig = { ...derived, sections };
    sameSectionLayout(counted, big);
    assert.equal(defaultsChain(counted, findSection(derived, 'backend', 'b250')!)[0]?.type, 'defaults');
    assert.ok(reads < 30, `${reads} sections read for one chain among ${derived.sections.length}`);
  });
});
