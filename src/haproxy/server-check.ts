/**
 * The check of a render whose changes no server of an unchanged backend can see: a
 * new Ingress's backend, an Ingress's options changed, its servers moved, a frontend
 * or a map changed. haproxy -c reads every server line (at 10k backends, 50k of them:
 * more than half of its 0.35-0.4 s), and almost all are byte for byte what it passed
 * in the render before. So such a render is checked as itself with the server lines of
 * the backends that did not change left blank, line for line (a problem haproxy finds
 * is at the line it has in the render).
 *
 * A server line is read in the context of its backend, the defaults it inherits, the
 * global section and the sections it names (resolvers, a tracked server), and the files
 * it loads. Its verdict stays what it was while all of those are the same, so the lines
 * are left out only when:
 * - the backend's header and lines are the same as in the render that passed, under the
 *   same defaults section;
 * - every section that is not a proxy (global, defaults, resolvers, peers, userlist, …)
 *   is the same, in the same order, and so are the certificates, the general files and
 *   the marked files (maps may change: nothing left out reads them);
 * - the line tracks no other server (`track`), and its backend picks no server by name
 *   (`use-server`): kept, they would be checked against servers that are not there;
 * - neither render has a conditional block (`.if`), which could leave a section out of
 *   one of them.
 * Everything else (the changed and new backends, every frontend, every map) is checked
 * as it is. Pure: no IO.
 */
import { type RenderedConfig, type RenderedFiles, sameAux } from '../templating/rendered.ts';
import type { Steps } from '../steps.ts';
import type { HaproxyConfig, Section } from './config.ts';

const PROXIES: ReadonlySet<string> = new Set(['frontend', 'backend', 'listen']);

/** What a server line in a backend can tell of its context: the defaults section before it, and the backend itself. */
interface Backend {
  defaults: Section | undefined;
  section: Section;
}

const sameSection = (a: Section | undefined, b: Section | undefined) => a === b || (a !== undefined && b !== undefined && a.header.text === b.header.text && a.text === b.text);
const sameContext = (a: Backend, b: Backend) => sameSection(a.defaults, b.defaults) && sameSection(a.section, b.section);

/** Each backend by name, in the order of the text; undefined when two share a name (haproxy refuses that; the whole check says so). */
function backendsOf(config: HaproxyConfig): Map<string, Backend> | undefined {
  const backends = new Map<string, Backend>();
  let defaults: Section | undefined;
  for (const section of config.sections) {
    if (section.type === 'defaults') defaults = section;
    else if (section.type === 'backend') {
      if (backends.has(section.name)) return undefined;
      backends.set(section.name, { defaults, section });
    }
  }
  return backends;
}

/** The sections that are not proxies, in order, as one text. */
function others(config: HaproxyConfig): string {
  return config.sections
    .filter((s) => !PROXIES.has(s.type))
    .map((s) => `${s.header.text}\n${s.text}`)
    .join('\u0000');
}

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

/** Backends read between two steps: a few milliseconds' work. */
const BACKENDS_PER_STEP = 1_000;

/**
 * The render to check in place of `next`, or undefined when `next` must be checked
 * whole. `passed` is a render haproxy -c passed without a warning (a warning about a
 * server left out could not be repeated); `parse` gives a render's haproxy.cfg as the
 * plan reads it. In steps (steps.ts): at 10k backends it reads 150k lines.
 */
export function* serverCheckSteps(passed: RenderedConfig, next: RenderedConfig, parse: (rendered: RenderedConfig) => Steps<HaproxyConfig>): Steps<RenderedFiles | undefined> {
  if (passed.main === next.main || !sameAux(passed, next, ['certs', 'files'])) return undefined;
  // Conditional blocks (.if … .endif) can hide a section in one render and show it in the
  // other: either render holding one is checked whole. A plain search, as a regex over
  // megabytes held the event loop for milliseconds; ".if" in a name only costs a whole check.
  if (passed.main.includes('.if') || next.main.includes('.if')) return undefined;
  yield;
  const before = yield* parse(passed);
  const now = yield* parse(next);
  if (now.orphans.length > 0 || now.orphanErrors.length > 0 || others(before) !== others(now)) return undefined;
  const passedBackends = backendsOf(before);
  const nowBackends = backendsOf(now);
  if (!passedBackends || !nowBackends) return undefined;
  // In the order of the text, as the lines are blanked below.
  const unchanged: Section[] = [];
  let read = 0;
  for (const [name, backend] of nowBackends) {
    if (++read % BACKENDS_PER_STEP === 0) yield;
    const was = passedBackends.get(name);
    if (was && sameContext(was, backend) && !/^[ \t]*use-server[ \t]/m.test(backend.section.text)) unchanged.push(backend.section);
  }
  // Blank each left-out line where it stands: the text between stays as it is.
  const pieces: string[] = [];
  let at = 0;
  let left = 0;
  for (const [i, { text, offset }] of unchanged.entries()) {
    if (i % BACKENDS_PER_STEP === BACKENDS_PER_STEP - 1) yield;
    for (let start = 0; start < text.length; ) {
      const nl = text.indexOf('\n', start);
      const end = nl < 0 ? text.length : nl;
      if (serverLine(text, start, end)) {
        pieces.push(next.main.slice(at, offset + start));
        at = offset + end;
        left++;
      }
      start = end + 1;
    }
  }
  if (left === 0) return undefined;
  pieces.push(next.main.slice(at));
  return { main: pieces.join(''), maps: next.maps, files: next.files, certs: next.certs, ...(next.referencing && { referencing: next.referencing }) };
}
