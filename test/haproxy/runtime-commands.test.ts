import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RuntimeOp } from '../../src/haproxy/plan.ts';
import {
  type RuntimeCommandContext,
  crtListLineNumber,
  escapeCliWord,
  parsePreparedVersion,
  prepareMapCommand,
  replySucceeded,
  runtimeCommands,
  showCrtListCommand,
} from '../../src/haproxy/runtime-commands.ts';

const target = { map: 'hosts.map', ref: 'maps/hosts.map' };
const ref = { backend: 'be_web', server: 's1' };

describe('escapeCliWord', () => {
  it('leaves ordinary words alone', () => {
    assert.equal(escapeCliWord('be_web/s1'), 'be_web/s1');
    assert.equal(escapeCliWord('#hash'), '#hash');
  });

  it('escapes backslash, semicolon, space and tab', () => {
    assert.equal(escapeCliWord('a b;c\\d\te'), 'a\\ b\\;c\\\\d\\\te');
  });

  it('refuses what the CLI cannot carry', () => {
    assert.throws(() => escapeCliWord(''), RangeError);
    assert.throws(() => escapeCliWord('a\nb'), RangeError);
    assert.throws(() => escapeCliWord('a\rb'), RangeError);
  });
});

describe('runtimeCommands', () => {
  const cases: [string, RuntimeOp, string[], RuntimeCommandContext?][] = [
    [
      'adds a server and enables it',
      { kind: 'server-add', ...ref, address: '10.0.0.1:80', args: ['maxconn', '50', 'weight', '20'], state: 'ready', health: false, agent: false },
      ['add server be_web/s1 10.0.0.1:80 maxconn 50 weight 20', 'enable server be_web/s1'],
    ],
    [
      'adds a server with checks and an agent, then drains it',
      { kind: 'server-add', ...ref, address: '10.0.0.1:80', args: ['check', 'agent-check', 'agent-port', '99'], state: 'drain', health: true, agent: true },
      ['add server be_web/s1 10.0.0.1:80 check agent-check agent-port 99', 'enable health be_web/s1', 'enable agent be_web/s1', 'set server be_web/s1 agent up', 'set server be_web/s1 state drain'],
    ],
    [
      'adds a server left in maintenance',
      { kind: 'server-add', ...ref, address: '10.0.0.1:80', args: ['agent-send', 'hello world'], state: 'maint', health: false, agent: false },
      ['add server be_web/s1 10.0.0.1:80 agent-send hello\\ world'],
    ],
    ['re-addresses', { kind: 'server-addr', ...ref, host: '2001:db8::2', port: 81 }, ['set server be_web/s1 addr 2001:db8::2 port 81']],
    ['re-weights', { kind: 'server-weight', ...ref, weight: 0 }, ['set server be_web/s1 weight 0']],
    ['sets the state', { kind: 'server-state', ...ref, state: 'maint' }, ['set server be_web/s1 state maint']],
    ['puts in maintenance before deleting', { kind: 'server-del', ...ref, agent: false }, ['set server be_web/s1 state maint', 'del server be_web/s1']],
    ['stops the agent first', { kind: 'server-del', ...ref, agent: true }, ['disable agent be_web/s1', 'set server be_web/s1 state maint', 'del server be_web/s1']],
    ['adds a map entry, escaping its value', { kind: 'map-add', ...target, key: '^/a\\.b', value: 'be web;x' }, ['add map maps/hosts.map ^/a\\\\.b be\\ web\\;x']],
    ['sets a map entry', { kind: 'map-set', ...target, key: 'a.example', value: 'be_api' }, ['set map maps/hosts.map a.example be_api']],
    ['deletes a map entry', { kind: 'map-del', ...target, key: 'a.example' }, ['del map maps/hosts.map a.example']],
    [
      'replaces a certificate in a transaction, the PEM as the payload of set ssl cert',
      { kind: 'cert-set', cert: 'my site.pem', ref: 'ssl/my site.pem', content: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' },
      ['set ssl cert ssl/my\\ site.pem <<\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', 'commit ssl cert ssl/my\\ site.pem'],
    ],
    [
      'loads a new certificate into an empty store first',
      { kind: 'cert-new', cert: 'b.pem', ref: 'ssl/b.pem', content: '-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----' },
      ['new ssl cert ssl/b.pem', 'set ssl cert ssl/b.pem <<\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----', 'commit ssl cert ssl/b.pem'],
    ],
    [
      'adds a crt-list line as the payload, in the file\'s syntax',
      { kind: 'crt-list-add', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'b.pem', entry: 'ssl/b.pem b.example *.b.example' },
      ['add ssl crt-list ssl/https.crtlist <<\nssl/b.pem b.example *.b.example'],
    ],
    ['deletes a crt-list line by its certificate', { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'b.pem', certRef: 'ssl/b.pem' }, ['del ssl crt-list ssl/https.crtlist ssl/b.pem']],
    ['unloads a certificate', { kind: 'cert-del', cert: 'b.pem', ref: 'ssl/b.pem' }, ['del ssl cert ssl/b.pem']],
    [
      'deletes an edited line by its number',
      { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'b.pem', certRef: 'ssl/b.pem', entry: 'ssl/b.pem b.example' },
      ['del ssl crt-list ssl/https.crtlist ssl/b.pem:7'],
      { crtListLine: 7 },
    ],
  ];
  for (const [what, op, expected, ctx] of cases) {
    it(what, () => assert.deepEqual(runtimeCommands(op, ctx), expected));
  }

  it('needs the number of an edited line, and reads it from show ssl crt-list -n', () => {
    const op: RuntimeOp = { kind: 'crt-list-del', list: 'https.crtlist', listRef: 'ssl/https.crtlist', cert: 'b.pem', certRef: 'ssl/b.pem', entry: 'ssl/b.pem b.example' };
    assert.throws(() => runtimeCommands(op), /needs its number/);
    assert.equal(showCrtListCommand(op), 'show ssl crt-list -n ssl/https.crtlist');
    // As haproxy 2.6.12 answers, the new line of the same certificate beside the old one.
    const reply = '# ssl/https.crtlist\nssl/a.pem:1 a.example\nssl/b.pem:2 b.example\nssl/b.pem:4 b.example www.b.example\n\n';
    assert.equal(crtListLineNumber(reply, 'ssl/b.pem b.example'), 2);
    assert.equal(crtListLineNumber(reply, 'ssl/b.pem b.example www.b.example'), 4);
    assert.equal(crtListLineNumber(reply, 'ssl/b.pem www.b.example'), undefined);
    assert.equal(crtListLineNumber(reply, 'ssl/c.pem b.example'), undefined);
  });

  it('fills a prepared map version and commits it', () => {
    const op: RuntimeOp = {
      kind: 'map-replace',
      ...target,
      entries: [
        { key: 'b', value: '2 two', line: 1 },
        { key: 'a', value: '1', line: 2 },
      ],
    };
    assert.equal(prepareMapCommand(op), 'prepare map maps/hosts.map');
    assert.deepEqual(runtimeCommands(op, { mapVersion: 7 }), [
      'add map @7 maps/hosts.map b 2\\ two',
      'add map @7 maps/hosts.map a 1',
      'commit map @7 maps/hosts.map',
    ]);
    assert.throws(() => runtimeCommands(op), /needs the version/);
  });
});

describe('replies', () => {
  it('reads the prepared version', () => {
    assert.equal(parsePreparedVersion('New version created: 12\n\n'), 12);
    assert.equal(parsePreparedVersion('Unknown map identifier. Please use #<id> or <file>.\n'), undefined);
  });

  it('tells success from failure', () => {
    assert.equal(replySucceeded('add server be/s 10.0.0.1:80', 'New server registered.\n'), true);
    assert.equal(replySucceeded('add server be/s 10.0.0.1:80', 'Backend must use a dynamic load balancing to support dynamic servers.\n'), false);
    assert.equal(replySucceeded('del server be/s', 'Server deleted.'), true);
    assert.equal(replySucceeded('del server be/s', 'Server still has connections attached to it, cannot remove it.'), false);
    assert.equal(replySucceeded('set server be/s addr 10.0.0.2 port 80', "IP changed from '10.0.0.1' to '10.0.0.2' by 'stats socket command'\n"), true);
    assert.equal(replySucceeded('set server be/s addr 10.0.0.2 port 80', 'No such server.\n'), false);
    assert.equal(replySucceeded('enable server be/s', '\n'), true);
    assert.equal(replySucceeded('set map maps/a.map k v', 'entry not found.\n'), false);
    assert.equal(replySucceeded('prepare map maps/a.map', 'New version created: 1\n'), true);
    // As haproxy 2.6 answers them over the master CLI in interactive mode: a "+ " prompt for each payload line first.
    assert.equal(replySucceeded('set ssl cert ssl/a.pem <<\nX', '+ + + Transaction created for certificate ssl/a.pem!\n'), true);
    assert.equal(replySucceeded('set ssl cert ssl/a.pem <<\nX', 'Transaction updated for certificate ssl/a.pem!\n'), true);
    assert.equal(replySucceeded('set ssl cert ssl/a.pem <<\nX', "+ + Can't replace a certificate which is not referenced by the configuration!\nCan't update ssl/a.pem!\n"), false);
    assert.equal(replySucceeded('commit ssl cert ssl/a.pem', 'Committing ssl/a.pem...\nSuccess!\n'), true);
    assert.equal(replySucceeded('commit ssl cert ssl/a.pem', "No ongoing transaction! !\nCan't commit ssl/a.pem!\n"), false);
    // Word for word as haproxy 2.6.12 answered over the master CLI.
    assert.equal(replySucceeded('new ssl cert ssl/b.pem', "New empty certificate store 'ssl/b.pem'!\n\n"), true);
    assert.equal(replySucceeded('new ssl cert ssl/b.pem', "Certificate 'ssl/b.pem' already exists!\n\n"), false);
    assert.equal(replySucceeded('add ssl crt-list ssl/https.crtlist <<\nssl/b.pem b.example', "+ + Inserting certificate 'ssl/b.pem' in crt-list 'ssl/https.crtlist'.\nSuccess!\n\n"), true);
    assert.equal(replySucceeded('add ssl crt-list ssl/https.crtlist <<\nssl/z.pem z.example', "+ + Can't edit the crt-list: certificate 'ssl/z.pem' does not exist!\n\n"), false);
    assert.equal(replySucceeded('add ssl crt-list ssl/nope.crtlist <<\nssl/b.pem b.example', "Can't edit the crt-list: crt-list 'ssl/nope.crtlist' does not exist!\n\n"), false);
    assert.equal(replySucceeded('del ssl crt-list ssl/https.crtlist ssl/b.pem', "Entry 'ssl/b.pem' deleted in crtlist 'ssl/https.crtlist'!\n\n"), true);
    assert.equal(replySucceeded('del ssl cert ssl/b.pem', "Certificate 'ssl/b.pem' deleted!\n\n"), true);
    assert.equal(replySucceeded('del ssl cert ssl/a.pem', "Can't remove the certificate: certificate 'ssl/a.pem' in use, can't be deleted!\n\n\n"), false);
  });
});
