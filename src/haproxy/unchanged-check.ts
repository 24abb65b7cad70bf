/**
 * The check of a render from the last one that passed, without what did not change: a
 * new Ingress's backend, an Ingress's options changed, its servers moved, a frontend or
 * a map changed. haproxy -c reads every backend and server line (at 10k backends, 10k
 * sections and 50k servers: 0.35-0.4 s), and almost all are byte for byte what it
 * passed in the render before. So such a render is checked as itself with the
 * backends that did not change, or their server lines, left blank, line for line (a
 * problem haproxy finds is at the line it has in the render).
 *
 * A backend is read in the context of the defaults it inherits, the global section,
 * the sections and proxies it names (resolvers, a tracked server, a stick table, a
 * fetch such as nbsrv(be_x)), and the files it loads. Its verdict stays what it was
 * while all of those are the same. Lines are left out only when:
 * - the backend's header and lines are the same as in the render that passed, under the
 *   same defaults section;
 * - every section that is not a proxy (global, defaults, resolvers, peers, userlist, …)
 *   is the same, in the same order, and so are the certificates, the general files and
 *   the marked files;
 * - neither render has a conditional block (`.if`), which could leave a section out of
 *   one of them.
 * Such a backend is left out whole when, besides:
 * - nothing checked names it (a frontend's use_backend, a kept backend's track or
 *   table, a new proxy of the same name): named, it stays, without its server lines;
 * - it names no proxy that was added, removed or changed, nor a map whose entries
 *   changed (a map_ip reading them would refuse a wrong address);
 * - it sets no `id`: ids are unique across all proxies.
 * What it names is searched for as words, so the search is bounded by the proxies that
 * changed: past MAX_CHANGED of them, only server lines are left out. Of a backend that
 * stays, a server line is left out unless it tracks another server (`track`) or the
 * backend picks servers by name (`use-server`): kept, they would be checked against
 * servers that are not there. Everything else (the changed and new backends, every
 * frontend, every map) is checked as it is. Pure: no IO.
 */
import { type RenderedConfig, type RenderedFiles, sameAux } from '../templating/rendered.ts';
import type { Steps } from '../steps.ts';
import type { HaproxyConfig, Section } from './config.ts';

const PROXIES: ReadonlySet<string> = new Set(['frontend', 'backend', 'listen']);

/** What a proxy's lines can tell of their context: the defaults section before it, and the proxy itself. */
interface Proxy {
  defaults: Section | undefined;
  section: Section;
}

const sameSection = (a: Section | undefined, b: Section | undefined) => a === b || (a !== undefined && b !== undefined && a.header.text === b.header.text && a.text === b.text);
const sameContext = (a: Proxy, b: Proxy) => sameSection(a.defaults, b.defaults) && sameSection(a.section, b.section);

/**
 * Each proxy by its type and name (`backend be_a`), in the order of the text; undefined
 * when two share both (haproxy refuses that; the whole check says so).
 */
function* proxiesOf(config: HaproxyConfig): Steps<Map<string, Proxy> | undefined> {
  const proxies = new Map<string, Proxy>();
  let defaults: Section | undefined;
  for (const [i, section] of config.sections.entries()) {
    if (i % BACKENDS_PER_STEP === BACKENDS_PER_STEP - 1) yield;
    if (section.type === 'defaults') defaults = section;
    else if (PROXIES.has(section.type)) {
      const key = `${section.type} ${section.name}`;
      if (proxies.has(key)) return undefined;
      proxies.set(key, { defaults, section });
    }
  }
  return proxies;
}

/**
 * The backends of `now` that are as they were `before` (text and defaults), in the
 * order of the text; the other proxies of `now`; and the names of the proxies added,
 * removed or changed.
 */
function* compared(before: ReadonlyMap<string, Proxy>, now: ReadonlyMap<string, Proxy>): Steps<{ same: Section[]; rest: Section[]; changed: Set<string> }> {
  const same: Section[] = [];
  const rest: Section[] = [];
  const changed = new Set<string>();
  let read = 0;
  for (const [key, proxy] of now) {
    if (++read % BACKENDS_PER_STEP === 0) yield;
    const was = before.get(key);
    if (was && sameContext(was, proxy)) (proxy.section.type === 'backend' ? same : rest).push(proxy.section);
    else {
      changed.add(proxy.section.name);
      rest.push(proxy.section);
    }
  }
  for (const [key, proxy] of before) {
    if (++read % BACKENDS_PER_STEP === 0) yield;
    if (!now.has(key)) changed.add(proxy.section.name);
  }
  return { same, rest, changed };
}

/** The maps whose text differs from one render to the other, or that only one has. */
function changedMaps(before: RenderedFiles, now: RenderedFiles): string[] {
  const names = new Set([...Object.keys(before.maps), ...Object.keys(now.maps)]);
  return [...names].filter((name) => before.maps[name] !== now.maps[name]);
}

/** The sections that are not proxies, in order, as one text. */
function others(config: HaproxyConfig): string {
  return config.sections
    .filter((s) => !PROXIES.has(s.type))
    .map((s) => `${s.header.text}\n${s.text}`)
    .join('\u0000');
}

/** The characters of a proxy's name, as haproxy allows them: letters, digits, '-', '_', '.' and ':'. */
function nameChar(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 58) || code === 45 || code === 95 || code === 46;
}

/** Whether `text` holds `name` as a word of its own, not inside a longer name. */
function namesWord(text: string, name: string): boolean {
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    if (!nameChar(text.charCodeAt(at - 1)) && !nameChar(text.charCodeAt(at + name.length))) return true;
  }
  return false;
}

const WORDS = /[A-Za-z0-9_.:-]+/g;

/** Whether text[start, end) is a server line that can be left out: not tracking another server. */
function serverLine(text: string, start: number, end: number): boolean {
  let i = start;
  while (i < end && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i++;
  if (!text.startsWith('server', i)) return false;
  const after = text.charCodeAt(i + 6);
  if (after !== 32 && after !== 9 && !text.startsWith('server-template', i)) return false;
  // Searched within the line alone: a search through the rest of the section would make a
  // backend of thousands of servers quadratic.
  return !TRACK.test(text.slice(i, end));
}

const TRACK = /[ \t]track(?:[ \t]|$)/;
const USE_SERVER = /^[ \t]*use-server[ \t]/m;
const ID = /^[ \t]*id[ \t]/m;

/** Sections read between two steps: a few milliseconds' work. */
const BACKENDS_PER_STEP = 1_000;

/** Past this many proxies changed, each of which every unchanged backend is searched for, only server lines are left out. */
const MAX_CHANGED = 32;

/** What a render is checked as in place of itself, and what was left out of it. */
export interface UnchangedCheck {
  files: RenderedFiles;
  /** `backends`: whole backends were left out (and server lines, perhaps); `servers`: server lines alone. */
  kind: 'backends' | 'servers';
}

/**
 * The render to check in place of `next`, or undefined when `next` must be checked
 * whole. `passed` is a render haproxy -c passed without a warning (a warning about a
 * line left out could not be repeated); `parse` gives a render's haproxy.cfg as the
 * plan reads it. In steps (steps.ts): at 10k backends it reads 150k lines.
 */
export function* unchangedCheckSteps(passed: RenderedConfig, next: RenderedConfig, parse: (rendered: RenderedConfig) => Steps<HaproxyConfig>): Steps<UnchangedCheck | undefined> {
  if (passed.main === next.main || !sameAux(passed, next, ['certs', 'files'])) return undefined;
  // Conditional blocks (.if … .endif) can hide a section in one render and show it in the
  // other: either render holding one is checked whole. A plain search, as a regex over
  // megabytes held the event loop for milliseconds; ".if" in a name only costs a whole check.
  if (passed.main.includes('.if') || next.main.includes('.if')) return undefined;
  yield;
  const before = yield* parse(passed);
  const now = yield* parse(next);
  if (now.orphans.length > 0 || now.orphanErrors.length > 0 || others(before) !== others(now)) return undefined;
  const passedProxies = yield* proxiesOf(before);
  const nowProxies = yield* proxiesOf(now);
  if (!passedProxies || !nowProxies) return undefined;
  const { same, rest: kept, changed } = yield* compared(passedProxies, nowProxies);
  const maps = changedMaps(passed, next);
  const searched = changed.size <= MAX_CHANGED;
  const names = [...changed];

  // The unchanged backends in the order of the text, as the lines are blanked below, and
  // which could go whole, by what they read; those that cannot are kept.
  const unchanged: { section: Section; whole: boolean }[] = [];
  for (const [i, section] of same.entries()) {
    if (i % BACKENDS_PER_STEP === BACKENDS_PER_STEP - 1) yield;
    const text = section.text;
    const whole = searched && !ID.test(text) && !maps.some((map) => text.includes(map)) && !names.some((name) => namesWord(text, name));
    if (!whole) kept.push(section);
    unchanged.push({ section, whole });
  }
  // What stays names what stays: a backend named by a kept section is kept, and what it names then too.
  const candidates = new Map(unchanged.filter((u) => u.whole).map((u) => [u.section.name, u]));
  if (candidates.size > 0) {
    for (const section of now.sections) if (!PROXIES.has(section.type)) kept.push(section);
    const words = new Set<string>();
    for (let i = 0; i < kept.length; i++) {
      if (i % BACKENDS_PER_STEP === BACKENDS_PER_STEP - 1) yield;
      const section = kept[i]!;
      for (const text of [section.header.text, section.text]) {
        for (const [word] of text.matchAll(WORDS)) {
          if (words.has(word)) continue;
          words.add(word);
          const named = candidates.get(word);
          if (named?.whole) {
            named.whole = false;
            kept.push(named.section);
          }
        }
      }
    }
  }

  // Blank each left-out line where it stands: the text between stays as it is.
  const main = next.main;
  const pieces: string[] = [];
  let at = 0;
  let servers = 0;
  let backends = 0;
  for (const [i, { section, whole }] of unchanged.entries()) {
    if (i % BACKENDS_PER_STEP === BACKENDS_PER_STEP - 1) yield;
    const { text, offset } = section;
    if (whole) {
      // From the start of the header's line to the end of the section, its line breaks alone.
      const start = main.lastIndexOf('\n', offset - 2) + 1;
      const end = offset + text.length;
      pieces.push(main.slice(at, start), '\n'.repeat(lineBreaks(main, start, end)));
      at = end;
      backends++;
      continue;
    }
    if (USE_SERVER.test(text)) continue;
    for (let start = 0; start < text.length; ) {
      const nl = text.indexOf('\n', start);
      const end = nl < 0 ? text.length : nl;
      if (serverLine(text, start, end)) {
        pieces.push(main.slice(at, offset + start));
        at = offset + end;
        servers++;
      }
      start = end + 1;
    }
  }
  if (servers === 0 && backends === 0) return undefined;
  pieces.push(main.slice(at));
  const files = { main: pieces.join(''), maps: next.maps, files: next.files, certs: next.certs, ...(next.referencing && { referencing: next.referencing }) };
  return { files, kind: backends > 0 ? 'backends' : 'servers' };
}

function lineBreaks(text: string, start: number, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', start); i >= 0 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
