import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseRecording } from '../../src/replay/format.ts';

const FIXTURE = new URL('../../marble-tests/fixtures/incident.jsonl', import.meta.url);
const text = readFileSync(FIXTURE, 'utf8');
const lines = text.trimEnd().split('\n');

function refused(body: string, file = 'rec.jsonl'): string {
  const parsed = parseRecording(body, file);
  assert.equal(parsed.ok, false, 'refused');
  return parsed.ok ? '' : parsed.error.message;
}

describe('recording format', () => {
  it('reads the committed incident: header, entries, configurations as objects again, and its end', () => {
    const parsed = parseRecording(text, 'incident.jsonl');
    assert.ok(parsed.ok);
    const { recording } = parsed;
    assert.equal(recording.truncated, false);
    assert.equal(recording.header.settings.debounceMs, 20);
    assert.ok(recording.header.settings.watched.every((w) => w.seal === false));
    const rendered = recording.entries.find((e) => e.k === 'next' && e.dep === 'render');
    assert.ok(rendered && rendered.k === 'next');
    const config = (rendered.v as { config: { hash: string; main: string } }).config;
    assert.match(config.hash, /^[0-9a-f]{64}$/);
    assert.match(config.main, /# service apps\/api port 8080/);
    assert.equal(recording.endsAt, (JSON.parse(lines.at(-1)!) as { t: number }).t);
  });

  it('reads a recording cut short (no end entry) up to its last entry, and says so', () => {
    const parsed = parseRecording(lines.slice(0, 40).join('\n'), 'cut.jsonl');
    assert.ok(parsed.ok);
    assert.equal(parsed.recording.truncated, true);
    assert.equal(parsed.recording.endsAt, (JSON.parse(lines[39]!) as { t: number }).t);
  });

  it('refuses a last line cut in the middle, naming file and line', () => {
    const message = refused(`${lines.slice(0, 40).join('\n')}\n${lines[40]!.slice(0, 25)}`);
    assert.match(message, /^rec\.jsonl:41: not JSON .*: the file may be cut short$/);
  });

  it('refuses what is not a recording, or another version of it', () => {
    assert.equal(refused(''), 'rec.jsonl:1: empty file: expected a header line');
    assert.match(refused('hello\n'), /^rec\.jsonl:1: not a haprx recording/);
    assert.match(refused('{"k":"header","format":"something-else"}\n'), /^rec\.jsonl:1: not a haprx recording/);
    assert.match(refused(lines[0]!.replace('"version":1', '"version":7')), /^rec\.jsonl:1: version 7: this haprx reads version 1$/);
  });

  it('refuses hostile settings: a timing that is no whole number, no watched set, a canary that would check in a loop', () => {
    const header = JSON.parse(lines[0]!) as { settings: Record<string, unknown> };
    const withSettings = (settings: Record<string, unknown>) => JSON.stringify({ ...header, settings: { ...header.settings, ...settings } });
    assert.match(refused(withSettings({ debounceMs: -1 })), /^rec\.jsonl:1: settings\.debounceMs: expected a whole number/);
    assert.match(refused(withSettings({ driftIntervalMs: 'soon' })), /^rec\.jsonl:1: settings\.driftIntervalMs/);
    assert.match(refused(withSettings({ watched: [] })), /^rec\.jsonl:1: settings\.watched/);
    assert.match(refused(withSettings({ watched: [{ name: 'x', indexBy: [1] }] })), /^rec\.jsonl:1: settings\.watched\[0\]\.indexBy/);
    assert.match(refused(withSettings({ canary: { checkForMs: 100, intervalMs: 0 } })), /^rec\.jsonl:1: settings\.canary/);
    assert.match(refused(withSettings({ confirmMaxWaitMs: 1.5 })), /^rec\.jsonl:1: settings\.confirmMaxWaitMs: expected a whole number/);
  });

  it('keeps the confirm wait a recording was made with, and leaves it to the default in recordings without it', () => {
    const header = JSON.parse(lines[0]!) as { settings: Record<string, unknown> };
    const parsed = parseRecording([JSON.stringify({ ...header, settings: { ...header.settings, confirmMaxWaitMs: 4000 } }), ...lines.slice(1)].join('\n'), 'rec.jsonl');
    assert.ok(parsed.ok);
    assert.equal(parsed.recording.header.settings.confirmMaxWaitMs, 4000);
    const committed = parseRecording(text, 'incident.jsonl');
    assert.ok(committed.ok);
    assert.equal('confirmMaxWaitMs' in committed.recording.header.settings, false);
  });

  it('refuses entries that are wrong, naming the line and the field', () => {
    const at = (entry: string) => refused(`${lines[0]}\n${entry}\n`);
    assert.match(at('[1,2]'), /^rec\.jsonl:2: expected an object$/);
    assert.match(at('{"t":-5,"k":"end","reason":"x"}'), /^rec\.jsonl:2: t: expected a whole number/);
    assert.match(at('{"t":1,"k":"launch"}'), /^rec\.jsonl:2: k: unknown entry kind "launch"$/);
    assert.match(at('{"t":1,"k":"next","dep":"shell","n":1,"v":1}'), /^rec\.jsonl:2: dep: expected one of changes/);
    assert.match(at('{"t":1,"k":"next","dep":"render","n":0,"v":1}'), /^rec\.jsonl:2: n: expected a whole number from 1$/);
    assert.match(at('{"t":1,"k":"config","hash":"abc","config":{}}'), /^rec\.jsonl:2: hash: expected a sha256/);
    assert.match(at('{"t":1,"k":"event","type":"X","fields":{"a":{"b":1}}}'), /^rec\.jsonl:2: fields: expected names and plain values$/);
    assert.match(refused(`${lines[0]}\n{"t":5,"k":"tick","n":1}\n{"t":4,"k":"tick","n":2}\n`), /^rec\.jsonl:3: t 4 goes back in time \(the entry before is at 5\)$/);
    assert.match(refused(`${lines[0]}\n{"t":5,"k":"end","reason":"x"}\n{"t":6,"k":"tick","n":2}\n`), /^rec\.jsonl:3: an entry after the end entry$/);
    assert.match(refused(`${lines[0]}\n\n`), /^rec\.jsonl:2: not JSON/);
  });

  it('refuses a reference to a configuration it has not seen, and takes no prototype from a value', () => {
    const hash = 'a'.repeat(64);
    assert.match(refused(`${lines[0]}\n{"t":1,"k":"next","dep":"render","n":1,"v":{"config":{"$config":"${hash}"}}}\n`), /^rec\.jsonl:2: configuration aaaaaaaaaaaa is referred to before its config entry$/);
    const parsed = parseRecording(`${lines[0]}\n{"t":1,"k":"next","dep":"render","n":1,"v":{"__proto__":{"polluted":true},"ok":true}}\n`, 'rec.jsonl');
    assert.ok(parsed.ok);
    const v = (parsed.recording.entries[0] as { v: Record<string, unknown> }).v;
    assert.equal(v.ok, true);
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.equal((v as { polluted?: boolean }).polluted, undefined);
  });

  it('refuses values nested without end', () => {
    const deep = `${'['.repeat(100)}${']'.repeat(100)}`;
    assert.match(refused(`${lines[0]}\n{"t":1,"k":"next","dep":"render","n":1,"v":${deep}}\n`), /^rec\.jsonl:2: a value nested deeper than 64 levels$/);
  });
});
