/**
 * The recording format: JSON Lines, one entry per line. The first line is the header
 * (the graph's settings); every other entry has `t`, milliseconds since the recording
 * began, and never goes back in time. The graph's inputs are streams (`dep` names the
 * input, `n` its subscription or call, counted from 1 per input): `subscribe`, then
 * `next` / `error` / `complete` notifications; synchronous inputs (a plan, a diff, a
 * random draw) are `value` entries. Time is an input too: `tick` says when the graph's
 * scheduler ran its n-th scheduled action (again, for a repeating one), so that a replay
 * runs timers when they ran, not when they were due. A `config` entry carries a rendered configuration
 * once (scrubbed); values refer to it as `{"$config": hash}`. `event` entries are the
 * timeline the graph produced; `end` says why the recording stopped.
 */
import type { GraphSettings } from '../../streams/graph.ts';
import type { RenderedConfig } from '../templating/rendered.ts';

export const FORMAT = 'haprx-recording';
export const VERSION = 1;

/** The graph's inputs that are streams (subscribed once per run) or calls returning one. */
export const STREAM_DEPS = ['changes', 'endpoints', 'leader', 'credentials', 'render', 'validate', 'deploy', 'check'] as const;
/** The graph's synchronous inputs: a value per call. */
export const VALUE_DEPS = ['fastPlan', 'diff', 'reloads', 'running', 'random'] as const;
export type StreamDep = (typeof STREAM_DEPS)[number];
export type ValueDep = (typeof VALUE_DEPS)[number];

export interface Header {
  k: 'header';
  format: typeof FORMAT;
  version: number;
  startedAt: string;
  settings: GraphSettings;
  /** The optional inputs the recorded graph had (fastPlan, diff, canary, leader, credentials). */
  inputs: readonly OptionalInput[];
}

export const OPTIONAL_INPUTS = ['fastPlan', 'diff', 'canary', 'leader', 'credentials'] as const;
export type OptionalInput = (typeof OPTIONAL_INPUTS)[number];

/** A line of the timeline: the event's type and the fields that tell events apart. */
export interface TimelineEvent {
  type: string;
  fields: Readonly<Record<string, string | number | boolean>>;
}

export type Entry =
  | { t: number; k: 'subscribe'; dep: StreamDep; n: number; key?: string }
  | { t: number; k: 'next'; dep: StreamDep; n: number; v: unknown; sync?: true }
  | { t: number; k: 'error'; dep: StreamDep; n: number; message: string; sync?: true }
  | { t: number; k: 'complete'; dep: StreamDep; n: number; sync?: true }
  | { t: number; k: 'value'; dep: ValueDep; n: number; v: unknown }
  | { t: number; k: 'tick'; n: number }
  | { t: number; k: 'config'; hash: string; config: Omit<RenderedConfig, 'hash'> }
  | ({ t: number; k: 'event' } & TimelineEvent)
  | { t: number; k: 'end'; reason: string };

/** A recording read back: configurations are objects again. */
export interface Recording {
  file: string;
  header: Header;
  entries: readonly Entry[];
  /** When the recording stopped (its `end`, or its last entry when it was cut short). */
  endsAt: number;
  /** Set when the file has no `end` entry: the process stopped while it recorded. */
  truncated: boolean;
}

/** What a recording may hold at most when read back; a larger file is refused, not read. */
export const MAX_READ_BYTES = 256 * 1024 * 1024;
const MAX_N = 1e9;
const MAX_T = 365 * 24 * 3600 * 1000;
const HASH = /^[0-9a-f]{64}$/;

export class RecordingError extends Error {
  readonly file: string;
  readonly line: number;

  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`);
    this.file = file;
    this.line = line;
    this.name = 'RecordingError';
  }
}

/** Parses a recording; a line that is not a valid entry is refused by file and line, nothing is guessed. */
export function parseRecording(text: string, file: string): { ok: true; recording: Recording } | { ok: false; error: RecordingError } {
  try {
    return { ok: true, recording: parse(text, file) };
  } catch (err) {
    if (err instanceof RecordingError) return { ok: false, error: err };
    throw err;
  }
}

function parse(text: string, file: string): Recording {
  const lines = text.split('\n');
  // A final newline leaves an empty last line; an empty line anywhere else is refused below.
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) throw new RecordingError(file, 1, 'empty file: expected a header line');
  const header = parseHeader(lines[0]!, file);
  const configs = new Map<string, RenderedConfig>();
  const entries: Entry[] = [];
  let last = 0;
  let end: number | undefined;
  for (let i = 1; i < lines.length; i++) {
    const at = i + 1;
    const fail = (message: string): never => {
      throw new RecordingError(file, at, message);
    };
    if (end !== undefined) fail('an entry after the end entry');
    let raw: unknown;
    try {
      raw = JSON.parse(lines[i]!);
    } catch (err) {
      fail(`not JSON (${(err as Error).message})${i === lines.length - 1 ? ': the file may be cut short' : ''}`);
    }
    const entry = checkEntry(raw, fail);
    if (entry.t < last) fail(`t ${entry.t} goes back in time (the entry before is at ${last})`);
    last = entry.t;
    if (entry.k === 'config') {
      configs.set(entry.hash, { ...entry.config, hash: entry.hash });
    } else if (entry.k === 'next' || entry.k === 'value') {
      entry.v = revive(entry.v, configs, fail);
    }
    if (entry.k === 'end') end = entry.t;
    entries.push(entry);
  }
  return { file, header, entries, endsAt: end ?? last, truncated: end === undefined };
}

function parseHeader(line: string, file: string): Header {
  const fail = (message: string): never => {
    throw new RecordingError(file, 1, message);
  };
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    fail(`not a haprx recording: the first line is not JSON`);
  }
  if (!isRecord(raw) || raw.k !== 'header' || raw.format !== FORMAT) fail(`not a haprx recording: the first line is no header of format "${FORMAT}"`);
  const h = raw as Record<string, unknown>;
  if (h.version !== VERSION) fail(`version ${JSON.stringify(h.version)}: this haprx reads version ${VERSION}`);
  if (typeof h.startedAt !== 'string') fail('startedAt: expected a string');
  const inputs = h.inputs;
  if (!Array.isArray(inputs) || !inputs.every((i) => (OPTIONAL_INPUTS as readonly unknown[]).includes(i))) fail(`inputs: expected a list of ${OPTIONAL_INPUTS.join(', ')}`);
  return { k: 'header', format: FORMAT, version: VERSION, startedAt: h.startedAt as string, settings: checkSettings(h.settings, fail), inputs: inputs as OptionalInput[] };
}

const DURATIONS = ['debounceMs', 'debounceMaxWaitMs', 'minDeployIntervalMs', 'driftIntervalMs', 'deployTimeoutMs', 'maxParallel'] as const;
/** Settings that recordings of older releases lack; the graph's default applies then. */
const OPTIONAL_DURATIONS = ['confirmMaxWaitMs'] as const;

function checkSettings(raw: unknown, fail: (message: string) => never): GraphSettings {
  if (!isRecord(raw)) return fail('settings: expected an object');
  for (const name of DURATIONS) if (!isCount(raw[name], MAX_T)) fail(`settings.${name}: expected a whole number from 0 to ${MAX_T}`);
  for (const name of OPTIONAL_DURATIONS) if (raw[name] !== undefined && !isCount(raw[name], MAX_T)) fail(`settings.${name}: expected a whole number from 0 to ${MAX_T}`);
  const watched = raw.watched;
  if (!Array.isArray(watched) || watched.length === 0 || watched.length > 1000) fail('settings.watched: expected a list of 1 to 1000 watched sets');
  const sets = (watched as unknown[]).map((w, i) => {
    if (!isRecord(w) || typeof w.name !== 'string' || w.name === '') return fail(`settings.watched[${i}].name: expected a name`);
    for (const list of ['indexBy', 'strip'] as const) {
      const value = w[list];
      if (value !== undefined && !(Array.isArray(value) && value.every((s) => typeof s === 'string'))) fail(`settings.watched[${i}].${list}: expected a list of strings`);
    }
    // The stores of a replay are read by nothing in this thread: they seal nothing.
    return { name: w.name, ...(w.indexBy !== undefined && { indexBy: w.indexBy as string[] }), ...(w.strip !== undefined && { strip: w.strip as string[] }), seal: false };
  });
  const canary = raw.canary;
  if (canary !== undefined && (!isRecord(canary) || !isCount(canary.checkForMs, MAX_T) || !isCount(canary.intervalMs, MAX_T) || canary.intervalMs === 0))
    fail('settings.canary: expected checkForMs and intervalMs (at least 1) in milliseconds');
  const settings: Record<string, unknown> = { watched: sets };
  for (const name of DURATIONS) settings[name] = raw[name];
  for (const name of OPTIONAL_DURATIONS) if (raw[name] !== undefined) settings[name] = raw[name];
  if (canary !== undefined) settings.canary = canary;
  return settings as unknown as GraphSettings;
}

function checkEntry(raw: unknown, fail: (message: string) => never): Entry {
  if (!isRecord(raw)) return fail('expected an object');
  if (!isCount(raw.t, MAX_T)) fail(`t: expected a whole number of milliseconds from 0 to ${MAX_T}`);
  const k = raw.k;
  const stream = () => {
    if (!(STREAM_DEPS as readonly unknown[]).includes(raw.dep)) fail(`dep: expected one of ${STREAM_DEPS.join(', ')} for a ${String(k)} entry`);
    if (!isCount(raw.n, MAX_N) || raw.n === 0) fail('n: expected a whole number from 1');
    if (raw.sync !== undefined && raw.sync !== true) fail('sync: expected true or nothing');
  };
  switch (k) {
    case 'subscribe':
      stream();
      if (raw.key !== undefined && typeof raw.key !== 'string') fail('key: expected a string');
      break;
    case 'next':
      stream();
      if (!('v' in raw)) fail('v: missing');
      break;
    case 'error':
      stream();
      if (typeof raw.message !== 'string') fail('message: expected a string');
      break;
    case 'complete':
      stream();
      break;
    case 'value':
      if (!(VALUE_DEPS as readonly unknown[]).includes(raw.dep)) fail(`dep: expected one of ${VALUE_DEPS.join(', ')} for a value entry`);
      if (!isCount(raw.n, MAX_N) || raw.n === 0) fail('n: expected a whole number from 1');
      break;
    case 'tick':
      if (!isCount(raw.n, MAX_N) || raw.n === 0) fail('n: expected a whole number from 1');
      break;
    case 'config': {
      if (typeof raw.hash !== 'string' || !HASH.test(raw.hash)) fail('hash: expected a sha256 in hex');
      const c = raw.config;
      if (!isRecord(c) || typeof c.main !== 'string') fail('config.main: expected the text of haproxy.cfg');
      for (const kind of ['maps', 'files', 'certs'] as const) {
        const files = (c as Record<string, unknown>)[kind];
        if (!isRecord(files) || !Object.values(files).every((v) => typeof v === 'string')) fail(`config.${kind}: expected file names and their text`);
      }
      break;
    }
    case 'event':
      if (typeof raw.type !== 'string') fail('type: expected an event type');
      if (!isRecord(raw.fields) || !Object.values(raw.fields).every((v) => ['string', 'number', 'boolean'].includes(typeof v))) fail('fields: expected names and plain values');
      break;
    case 'end':
      if (typeof raw.reason !== 'string') fail('reason: expected a string');
      break;
    default:
      fail(`k: unknown entry kind ${JSON.stringify(k)}`);
  }
  return raw as unknown as Entry;
}

/** Values with `{"$config": hash}` in place of configurations, as written. */
export function revive(value: unknown, configs: ReadonlyMap<string, RenderedConfig>, fail: (message: string) => never, depth = 0): unknown {
  if (depth > 64) return fail('a value nested deeper than 64 levels');
  if (Array.isArray(value)) return value.map((v) => revive(v, configs, fail, depth + 1));
  if (!isRecord(value)) return value;
  if (typeof value.$config === 'string') {
    const config = configs.get(value.$config);
    return config ?? fail(`configuration ${value.$config.slice(0, 12)} is referred to before its config entry`);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // JSON.parse makes "__proto__" an own property; copying it with = would set the prototype.
    if (k === '__proto__') continue;
    out[k] = revive(v, configs, fail, depth + 1);
  }
  return out;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isCount(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}
