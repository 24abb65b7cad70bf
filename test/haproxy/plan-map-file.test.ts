import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMapFile } from '../../src/haproxy/map-file.ts';

const pairs = (content: string) => parseMapFile(content).map((e) => [e.key, e.value]);

describe('parseMapFile', () => {
  it('reads key and value with their line numbers', () => {
    assert.deepEqual(parseMapFile('a.example be_web\nb.example be_api\n'), [
      { key: 'a.example', value: 'be_web', line: 1 },
      { key: 'b.example', value: 'be_api', line: 2 },
    ]);
  });

  it('skips comment lines and blank lines', () => {
    assert.deepEqual(pairs('# routes\n\n   \n\t\na 1\n'), [['a', '1']]);
  });

  it('takes # as a comment only in the first column', () => {
    assert.deepEqual(pairs('  # not a comment\n#comment\n'), [['#', 'not a comment']]);
  });

  it('keeps inner blanks of a value and a # inside it, trims outer ones', () => {
    assert.deepEqual(pairs('  lead   val with  spaces  \t \nb be_web # tail\n'), [
      ['lead', 'val with  spaces'],
      ['b', 'be_web # tail'],
    ]);
  });

  it('separates key and value by tabs too', () => {
    assert.deepEqual(pairs('\tt\tv\tw\n'), [['t', 'v\tw']]);
  });

  it('gives a key without value an empty value', () => {
    assert.deepEqual(pairs('keyonly\nk2   \n'), [['keyonly', ''], ['k2', '']]);
  });

  it('stops a line at the first CR', () => {
    assert.deepEqual(pairs('cr val\r\nx a\rb\n\r\n'), [['cr', 'val'], ['x', 'a']]);
  });

  it('gives backslashes no meaning', () => {
    assert.deepEqual(pairs('k\\ x v\n^/a\\.b y\n'), [['k\\', 'x v'], ['^/a\\.b', 'y']]);
  });

  it('reads a last line without newline', () => {
    assert.deepEqual(pairs('a 1\nb 2'), [['a', '1'], ['b', '2']]);
  });
});
