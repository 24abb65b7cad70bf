import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { editConfig, findSection, parseConfig, tokenize } from '../../src/haproxy/config.ts';

describe('tokenize', () => {
  it('splits on whitespace and drops comments', () => {
    assert.deepEqual(tokenize('  server s1 10.0.0.1:80   check # primary'), {
      args: ['server', 's1', '10.0.0.1:80', 'check'],
      text: 'server s1 10.0.0.1:80   check',
      comment: 'primary',
    });
  });

  it('keeps quoted words whole and honours backslash escapes', () => {
    assert.deepEqual(tokenize(`http-request set-header X-A "a b # c" 'd\\e' f\\ g`).valueOf(), {
      args: ['http-request', 'set-header', 'X-A', 'a b # c', 'd\\e', 'f g'],
      text: `http-request set-header X-A "a b # c" 'd\\e' f\\ g`,
      comment: '',
    });
    assert.deepEqual((tokenize('acl a path \\#frag') as { args: string[] }).args, ['acl', 'a', 'path', '#frag']);
  });

  it('splits lines without quotes or escapes by blanks and tabs only', () => {
    assert.deepEqual(tokenize('\tserver\ts1  10.0.0.1:80\vweight 2#c'), { args: ['server', 's1', '10.0.0.1:80\vweight', '2'], text: 'server\ts1  10.0.0.1:80\vweight 2', comment: 'c' });
    assert.deepEqual(tokenize('   '), { args: [], text: '', comment: '' });
    assert.deepEqual(tokenize('# only a comment '), { args: [], text: '', comment: 'only a comment' });
  });

  it('reports an unterminated quote', () => {
    assert.deepEqual(tokenize('bind "oops'), { error: 'unterminated double quote' });
  });
});

describe('parseConfig', () => {
  const source = [
    '# _version=3',
    'global',
    '  daemon',
    '',
    'defaults',
    '  mode http',
    'frontend fe',
    '  bind :80',
    '  default_backend be',
    'backend be',
    '  balance roundrobin',
    '  server s1 127.0.0.1:8080 weight 10',
    '  server s2 127.0.0.1:8081',
  ].join('\n');

  it('splits sections with 1-based line numbers', () => {
    const config = parseConfig(source);
    assert.deepEqual(
      config.sections.map((s) => [s.type, s.name, s.header.line, s.lines.length]),
      [
        ['global', '', 2, 1],
        ['defaults', '', 5, 1],
        ['frontend', 'fe', 7, 2],
        ['backend', 'be', 10, 3],
      ],
    );
    const backend = findSection(config, 'backend', 'be')!;
    assert.deepEqual(backend.lines[1], {
      line: 12,
      keyword: 'server',
      args: ['s1', '127.0.0.1:8080', 'weight', '10'],
      text: 'server s1 127.0.0.1:8080 weight 10',
      comment: '',
    });
    assert.deepEqual(config.orphans, []);
    assert.deepEqual(config.errors, []);
  });

  it('collects lines outside any section and lines that do not tokenise', () => {
    const config = parseConfig('maxconn 10\nglobal\n  log "stdout\n');
    assert.deepEqual(config.orphans.map((l) => [l.line, l.keyword]), [[1, 'maxconn']]);
    assert.deepEqual(config.errors, [{ line: 3, message: 'unterminated double quote' }]);
  });

  it('handles CRLF line endings', () => {
    const config = parseConfig('global\r\n  daemon\r\n');
    assert.equal(config.sections[0]!.lines[0]!.keyword, 'daemon');
    assert.equal(config.sections[0]!.lines[0]!.text, 'daemon');
  });

  it('reads a section only when its lines are asked for', () => {
    const config = parseConfig('global\n  daemon\nbackend a\n  server s1 10.0.0.1:80\nbackend b\n  server s2 "10.0.0.2:80\n');
    const tokenized = () => config.sections.map((s) => (s as unknown as { tokenized: boolean }).tokenized);
    assert.deepEqual(tokenized(), [false, false, false]);
    assert.deepEqual(config.sections.map((s) => s.text), ['  daemon\n', '  server s1 10.0.0.1:80\n', '  server s2 "10.0.0.2:80\n']);
    assert.deepEqual(config.sections[1]!.lines.map((l) => [l.line, l.keyword, ...l.args]), [[4, 'server', 's1', '10.0.0.1:80']]);
    assert.deepEqual(tokenized(), [false, true, false]);
    assert.deepEqual(config.errors, [{ line: 6, message: 'unterminated double quote' }]);
  });

  it('finds headers written with quotes or escapes, and not inside comments', () => {
    const config = parseConfig('"backend" one\n  # backend not\nback\\end two\n  server s 10.0.0.1:80\n');
    assert.deepEqual(config.sections.map((s) => [s.type, s.name, s.header.line]), [['backend', 'one', 1], ['backend', 'two', 3]]);
    assert.deepEqual(config.sections[1]!.lines.map((l) => l.line), [4]);
  });

  it('derives the parse of an edited text: edited sections read anew, later ones moved, earlier ones shared', () => {
    const source = 'global\n  daemon\nbackend a\n  server s1 10.0.0.1:80\nbackend b\n  server s2 10.0.0.2:80\n';
    const base = parseConfig(source);
    const a = base.sections[1]!;
    const at = a.offset + a.text.indexOf('10.0.0.1');
    // Same length, and one that adds a line: both must show.
    for (const text of ['10.0.0.9', '10.0.0.9:80\n  server s3 10.0.0.3']) {
      const edited = source.slice(0, at) + text + source.slice(at + '10.0.0.1'.length);
      const derived = editConfig(base, [{ start: at, end: at + '10.0.0.1'.length, text }]);
      const fresh = parseConfig(edited);
      assert.equal(derived.sections[0], base.sections[0]);
      assert.deepEqual(derived.sections.map((s) => [s.type, s.name, s.text, s.offset, s.firstLine, s.header.line]), fresh.sections.map((s) => [s.type, s.name, s.text, s.offset, s.firstLine, s.header.line]));
      assert.deepEqual(derived.sections[2]!.lines, fresh.sections[2]!.lines);
    }
    assert.throws(() => editConfig(base, [{ start: 0, end: 3, text: 'x' }]), /not inside/);
  });
});
