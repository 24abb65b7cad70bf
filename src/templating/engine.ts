/**
 * The template engine: ejs templates in, a sealed RenderedConfig out.
 *
 * Template contract
 * -----------------
 * A template set has `main` (haproxy.cfg) and optionally `maps`, `files`,
 * `certs` and `snippets`, each a record of plain file names (letters, digits,
 * `.`, `_`, `-`; no leading dot) to ejs sources. Every template is compiled
 * once, in strict mode and without `with`, so a misspelt name is an error
 * rather than a silent `undefined`. Errors name the template by its output
 * path, as validation does: `haproxy.cfg`, `maps/<name>`, `general/<name>`,
 * `ssl/<name>`, and `snippets/<name>` for snippets.
 *
 * In scope, in every template:
 * - `resources.<set>`: each watched resource set by its configured name, with
 *   `list()`, `get(...indexKeys)`, `first(...indexKeys)` and `size`. Lists are
 *   sorted by namespace/name; objects are read-only (sort a copy:
 *   `[...list].sort()` or `h.sortBy`) and enumerate their keys in code-unit
 *   order, so `Object.entries`, `for...in` and `JSON.stringify` are stable.
 *   Naming a set that is not configured aborts the render.
 * - `values`: the user's values (e.g. `values.httpPort`), read-only likewise;
 *   an absent value is `undefined`.
 * - `h`: the helpers (see helpers.ts): file paths, `word`, `mapKey`,
 *   `identifier`, `sortBy`, `uniq`, `groupBy`, `keys`, `entries`, `b64decode`,
 *   `isHostname`, `isPath`, `fail`, `get`; validators for cluster values
 *   (`isIP`, `isCidr`, `isPort`, `isDuration`, `isHeaderName`, `isHeaderValue`,
 *   `isRegex`, `tlsBundle`, `caBundle`, `htpasswd`), escapes (`lfText`, `regexEscape`),
 *   `digest`, `fileName`, `list`, and `warn`, `certFile`, `referencesFiles`,
 *   `isolate`, `each` and `skip` (below).
 * - `include(name, args)`: renders snippet `name` and returns its text, so it is
 *   written with `<%- include('backend', { svc }) %>`. Snippets come from the
 *   set, never from disk; an unknown name or an include cycle aborts. A snippet
 *   sees the same names plus its arguments as `locals.<arg>` (or
 *   `<% const { svc } = locals %>`); an argument may not reuse a context name.
 *
 * Output:
 * - `<%= v %>` in haproxy.cfg, and in snippets included from it, writes exactly
 *   one haproxy word: plain when safe, otherwise single-quoted. Control
 *   characters, empty strings and non-scalars abort. See escape.ts.
 * - `<%= v %>` in map, general and certificate files (and snippets included
 *   from them) writes the value unchanged but aborts on any control character,
 *   so a value cannot start a new line (map entry, PEM block). Use
 *   `h.mapKey(v)` for the key column of a map.
 * - `<%- v %>` writes raw text; it is how multi-line content, `include()` and
 *   `h.word()` results are emitted.
 * - `h.warn(object, message)` records a warning and the render goes on: how a
 *   template reports a cluster object it skipped. The render result carries
 *   the warnings (`warnings`, repeats once), in the order they were raised.
 * - `h.certFile(name, content)` adds `ssl/<name>` to the output, for files
 *   whose number depends on the cluster (one per TLS Secret, a crt-list); a
 *   certificate template of the same name is an error.
 * - `h.referencesFiles()` in a map, general or certificate template marks its
 *   output as naming other rendered files (`general/<name>`, …); the render
 *   result lists it in `referencing`.
 * - `h.isolate(object, fn)` and `h.each(list, fn)` run per-object code in
 *   isolation: a throw (or `h.skip(message, field)`) skips that object with a
 *   structured warning (kind, namespace, name, field, template and line) and
 *   takes back the certificate files it added; the render goes on. Faults of
 *   the templates themselves (see locate.ts, atFault) still fail the render, and
 *   so does a line that threw a TypeError for every object (or most) that
 *   isolations at one site read (see systematic-faults.ts).
 * - `h.status(object, declaration)` declares what the render makes of an object
 *   (conditions, served, status fields, entries such as a listener or a parent):
 *   the render result carries one ObjectStatus per object (`statuses`); see
 *   status-declarations.ts. `h.skip(message, field, reason)` gives a skip a status
 *   reason, and `h.skipped(object)` reads it back, so that a refusal is declared
 *   with the skip's own words.
 * - `h.fail(message)` aborts the render; so does any throw outside h.isolate. The error names
 *   the template (the snippet, if it failed in one) and the line where it was
 *   thrown, exact even inside a multi-line `<% %>` block. A thrown non-Error
 *   (a string, say) still fails the render, but its line is unknown.
 *
 * Output is a function of the input alone: no clock, randomness or file
 * access is offered, keys iterate sorted and lists come sorted. A template
 * that reaches for Date or Math.random on its own loses that guarantee.
 *
 * Templates are compiled into, and run in, the template realm (realm.ts,
 * compile.ts): only JavaScript's frozen built-ins and what is listed above, no
 * Node.js modules, process, promises or code made from strings, and a time
 * limit per render (RenderOptions.timeoutMs, settings.renderTimeout).
 */
import type { Options } from 'ejs';
import type { RenderError } from '../events.ts';
import type { ResourceView } from '../k8s/store.ts';
import type { KubeObject } from '../k8s/resource.ts';
import { type Entry, MapDeclarationLog, declarationTarget, readDeclaration } from './map-entries.ts';
import { type AuxKind, AUX_KINDS, type RenderedConfig, type ServerSet, auxPath, readKey, sealRendered } from './rendered.ts';
import { abortRender, describeValue } from './abort.ts';
import { auxText, haproxyWord, isFileName } from './escape.ts';
import { type Helpers, type RenderSession, type RenderWarning, catchSkip, createHelpers, failedAt, sayWarning } from './helpers.ts';
import { collectStatuses } from './status-declarations.ts';
import { type Isolation, SystematicFaults } from './systematic-faults.ts';
import type { ObjectStatus } from '../status/types.ts';
import { ForbiddenConstruct, compileInRealm, rethrow } from './compile.ts';
import { type LocatableTemplate, asFault, diagnoseCompileError, faultFrom, locateForbidden, locateThrow } from './locate.ts';
import { compareCodeUnits, readOnly, resourceSets } from './readonly.ts';
import { flatText } from '../flat-text.ts';
import type { CallCache, EntriesCall, KeptCall, OnceCall, ServerCall } from './call-cache.ts';
import { type JournalOp, OnceJournal } from './once-journal.ts';
import { ReuseFrames } from './reuse-frames.ts';
import { deepFreeze, freezeData } from './deep-freeze.ts';
import { RenderTimeout, templateRealm } from './realm.ts';

/** A render's fresh bookkeeping; `running` names the template being rendered, for errors. */
function openSession(units: Parameters<typeof locateThrow>[1], running: () => string): RenderSession {
  return {
    warnings: new Map(),
    certs: new Map(),
    once: new Map(),
    file: 'haproxy.cfg',
    referencing: new Set(),
    added: [],
    locate: (thrown) => locateThrow(thrown, units, running()),
    declarations: [],
    skips: new Map(),
    running,
    faults: new SystematicFaults(),
    effects: 0,
  };
}

export interface TemplateSet {
  /** haproxy.cfg */
  main: string;
  maps?: Readonly<Record<string, string>>;
  files?: Readonly<Record<string, string>>;
  certs?: Readonly<Record<string, string>>;
  snippets?: Readonly<Record<string, string>>;
}

export interface RenderInput {
  resources: Readonly<Record<string, ResourceView>>;
  values: Readonly<Record<string, unknown>>;
}

type Escape = (value: unknown) => string;

/** One compiled template; its label, source and options also serve to locate its errors. */
export interface CompiledTemplate extends LocatableTemplate {
  readonly render: (context: Record<string, unknown>) => string;
}

/** The compiled form of a TemplateSet; obtained from compileTemplates only. */
export interface CompiledTemplates {
  readonly main: CompiledTemplate;
  /** Keyed by file name, in name order. */
  readonly maps: ReadonlyMap<string, CompiledTemplate>;
  readonly files: ReadonlyMap<string, CompiledTemplate>;
  readonly certs: ReadonlyMap<string, CompiledTemplate>;
  readonly snippets: ReadonlyMap<string, CompiledTemplate>;
  readonly helpers: Helpers;
}

/**
 * A snippet can be included from any kind of template, so its `<%= %>`
 * follows the top-level template being rendered: each compiled set's snippets
 * escape through a slot that renderTemplates points at the right escape
 * before running each top-level template. Rendering is synchronous, so the
 * slot cannot be switched under a running template.
 */
const snippetEscapes = new WeakMap<CompiledTemplates, { current: Escape }>();

export type CompileResult = { ok: true; templates: CompiledTemplates } | { ok: false; errors: RenderError[] };
export type { RenderWarning } from './helpers.ts';
export type RenderResult = { ok: true; config: RenderedConfig; warnings: RenderWarning[]; statuses: readonly ObjectStatus[] } | { ok: false; error: RenderError };

/** The render a compiled set is running, if any: what `h.warn` and `h.certFile` record into. */
const sessions = new WeakMap<CompiledTemplates, { current: RenderSession | undefined }>();

/** Every template of a compiled set by its label: where h.isolate and h.warn look for the line. */
const unitsOf = new WeakMap<CompiledTemplates, ReadonlyMap<string, CompiledTemplate>>();

/** Names every template can use; include arguments may not shadow them. */
const CONTEXT_NAMES = ['resources', 'values', 'h', 'include'] as const;

/**
 * `include` is among the destructured names on purpose: ejs binds its own
 * file-system include as a parameter of the compiled function, and the
 * destructured locals, declared inside the function's try block, shadow it.
 * The includer is a backstop in case that ever stops holding.
 */
function compileOptions(label: string, escape: Escape): Options {
  return {
    strict: true,
    _with: false,
    destructuredLocals: [...CONTEXT_NAMES],
    compileDebug: true,
    filename: label,
    escape,
    includer: () => abortRender('include() renders snippets of the template set only'),
  } as Options;
}

const SOURCE_KINDS = ['maps', 'files', 'certs', 'snippets'] as const;
type SourceKind = (typeof SOURCE_KINDS)[number];

function labelOf(kind: SourceKind, name: string): string {
  return kind === 'snippets' ? `snippets/${name}` : auxPath(kind, name);
}

/** The valid entries of one record of sources, sorted by name; problems go to `errors`. */
function entriesOf(set: TemplateSet, kind: SourceKind, errors: RenderError[]): [string, string][] {
  const record: unknown = set[kind];
  if (record === undefined) return [];
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    errors.push({ template: kind, message: `${kind} must be a record of file names to template sources` });
    return [];
  }
  const valid: [string, string][] = [];
  for (const name of Object.keys(record).sort(compareCodeUnits)) {
    const source: unknown = (record as Record<string, unknown>)[name];
    if (!isFileName(name)) {
      errors.push({
        template: labelOf(kind, name),
        message: `invalid ${kind} name ${JSON.stringify(name)}: use letters, digits, '.', '_' and '-', with no leading dot or slash`,
      });
    } else if (typeof source !== 'string') {
      errors.push({ template: labelOf(kind, name), message: `the template source must be a string, got ${describeValue(source)}` });
    } else {
      valid.push([name, source]);
    }
  }
  return valid;
}

function compileOne(label: string, source: string, escape: Escape, errors: RenderError[]): CompiledTemplate | undefined {
  const text = source.startsWith('\uFEFF') ? source.slice(1) : source;
  const options = compileOptions(label, escape);
  try {
    const fn = compileInRealm(text, options);
    const realm = templateRealm();
    // What the compiled function is handed must be of the template realm too.
    const escapeFn = realm.expose(escape);
    const ejsInclude = realm.expose(() => abortRender('include() renders snippets of the template set only'));
    const annotate = realm.expose(rethrow);
    const render = (context: Record<string, unknown>) => fn(realm.record(Object.entries(context)), escapeFn, ejsInclude, annotate);
    return { label, text, options, render };
  } catch (thrown) {
    errors.push(thrown instanceof ForbiddenConstruct ? locateForbidden({ label, text, options }, thrown.forbidden) : diagnoseCompileError({ label, text, options }, thrown));
    return undefined;
  }
}

/**
 * Compiles every template of the set exactly once. Either all compile, or the
 * result lists every template that did not, with its line where known.
 */
export function compileTemplates(set: TemplateSet): CompileResult {
  try {
    const errors: RenderError[] = [];
    if (set === null || typeof set !== 'object') return { ok: false, errors: [{ template: 'haproxy.cfg', message: 'the template set must be an object' }] };
    // A misspelt kind (`map:`) would otherwise drop its templates without a word.
    for (const key of Object.keys(set).sort(compareCodeUnits)) {
      if (key !== 'main' && !(SOURCE_KINDS as readonly string[]).includes(key)) {
        errors.push({ template: key, message: `unknown kind of template ${JSON.stringify(key)}: expected main, ${SOURCE_KINDS.join(', ')}` });
      }
    }
    const sources = Object.fromEntries(SOURCE_KINDS.map((kind) => [kind, entriesOf(set, kind, errors)])) as Record<SourceKind, [string, string][]>;
    const snippetEscape = { current: haproxyWord as Escape };
    const snippetEscapeFn: Escape = (value) => snippetEscape.current(value);

    let main: CompiledTemplate | undefined;
    if (typeof set.main !== 'string') errors.push({ template: 'haproxy.cfg', message: `the template source must be a string, got ${describeValue(set.main)}` });
    else main = compileOne('haproxy.cfg', set.main, haproxyWord, errors);

    const compiled = (kind: SourceKind, escape: Escape) => {
      const units = new Map<string, CompiledTemplate>();
      for (const [name, source] of sources[kind]) {
        const unit = compileOne(labelOf(kind, name), source, escape, errors);
        if (unit) units.set(name, unit);
      }
      return units;
    };
    const maps = compiled('maps', auxText);
    const files = compiled('files', auxText);
    const certs = compiled('certs', auxText);
    const snippets = compiled('snippets', snippetEscapeFn);

    if (errors.length > 0 || !main) return { ok: false, errors };
    const session: { current: RenderSession | undefined } = { current: undefined };
    const helpers = createHelpers({ maps: new Set(maps.keys()), files: new Set(files.keys()), certs: new Set(certs.keys()) }, () => session.current);
    const templates: CompiledTemplates = Object.freeze({ main, maps, files, certs, snippets, helpers });
    snippetEscapes.set(templates, snippetEscape);
    sessions.set(templates, session);
    unitsOf.set(templates, new Map([main, ...maps.values(), ...files.values(), ...certs.values(), ...snippets.values()].map((unit) => [unit.label, unit])));
    return { ok: true, templates };
  } catch (thrown) {
    return { ok: false, errors: [{ template: 'haproxy.cfg', message: `internal error while compiling: ${errorText(thrown)}` }] };
  }
}

/** How long a render may take before it is stopped: the default of settings.renderTimeout. */
export const DEFAULT_RENDER_TIMEOUT_MS = 10_000;

export interface RenderOptions {
  /** A render still running after this is stopped and fails, naming the template it was in. */
  timeoutMs?: number;
  /** h.servers output of the last render over the same sets, reused where nothing it read changed. */
  serverCache?: CallCache<ServerCall>;
  /** h.mapEntries calls of the last render that gave a value (h.result), reused likewise for the same objects. */
  entriesCache?: CallCache<EntriesCall>;
  /** h.once values computed with `{ keep: true }` by the last render, reused likewise with what computing them said. */
  onceCache?: CallCache<OnceCall>;
}

/** Each compiled set's helpers as the template realm sees them: made once. */
const realmHelpers = new WeakMap<CompiledTemplates, unknown>();

function helpersInRealm(templates: CompiledTemplates): unknown {
  let h = realmHelpers.get(templates);
  if (!h) {
    const realm = templateRealm();
    h = Object.freeze(realm.record(Object.entries(templates.helpers).map(([name, value]) => [name, typeof value === 'function' ? realm.expose(value as (...a: never[]) => unknown) : realm.adopt(value)])));
    realmHelpers.set(templates, h);
  }
  return h;
}

/**
 * Renders every template against the input, in the template realm and within the
 * time limit. Never throws: whatever a template does, the outcome is a
 * RenderedConfig or the first RenderError, naming the template (the snippet, when
 * it failed in one) and the line.
 */
export function renderTemplates(templates: CompiledTemplates, input: RenderInput, options: RenderOptions = {}): RenderResult {
  let current = 'haproxy.cfg';
  let completed = false;
  const active: string[] = [];
  const session = sessions.get(templates);
  const timeoutMs = options.timeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
  try {
    const snippetEscape = snippetEscapes.get(templates);
    if (!snippetEscape || !session) return { ok: false, error: { template: current, message: 'templates must come from compileTemplates' } };
    const realm = templateRealm();
    const cache = options.serverCache;
    cache?.begin(templates, input.resources, input.values);
    const entriesCache = options.entriesCache;
    entriesCache?.begin(templates, input.resources, input.values);
    const onceCache = options.onceCache;
    onceCache?.begin(templates, input.resources, input.values);
    return realm.run(() => {
      const units = unitsOf.get(templates)!;
      const collected = openSession(units, () => active.at(-1) ?? current);
      const frames = entriesCache || onceCache ? (collected.reuse = new ReuseFrames()) : undefined;
      session.current = collected;
      // Lookups go to the h.servers call being rendered, or to the render as a whole.
      const reads = new Set<string>();
      let reading: Set<string> | undefined;
      const onRead = (key: string) => {
        (reading ?? reads).add(key);
        frames?.read(key);
      };
      const context: Record<string, unknown> = {
        resources: resourceSets(input.resources, (set, key) => onRead(readKey(set, key))),
        values: readOnly(input.values),
        h: helpersInRealm(templates),
      };
      const includeSnippet = snippetIncluder(templates, context, active);
      context.include = realm.expose(includeSnippet);
      const pending: Omit<ServerSet, 'start' | 'end'>[] = [];
      const texts: string[] = [];
      collected.servers = (backend, snippet, args) => {
        if (collected.file !== 'haproxy.cfg') return abortRender('servers() writes server lines of haproxy.cfg, not of another file');
        if (reading) return abortRender('servers() cannot be called from the snippet of another servers()');
        if (typeof backend !== 'string' || backend === '') return abortRender(`servers(): the backend must be its name, got ${describeValue(backend)}`);
        if (typeof snippet !== 'string') return abortRender(`servers(): the snippet must be its name, got ${describeValue(snippet)}`);
        // Its markers stand in the text of whatever calls it: nothing around it can be reused.
        frames?.touch();
        collected.journal?.spoil('it writes server lines');
        let json: string;
        try {
          json = JSON.stringify(args ?? {}) ?? 'null';
        } catch (err) {
          return abortRender(`servers(): the arguments must be plain data (${errorText(err)})`);
        }
        const cacheKey = `${snippet}\u0000${json}`;
        const kept = cache?.get(cacheKey);
        if (kept) {
          for (const e of kept.entered) collected.faults.enter(e.template, e.subject, e.part);
          pending.push({ backend, snippet, args: json, reads: kept.reads });
          texts.push(kept.text);
          return `\u0000${pending.length - 1}\u0000`;
        }
        const effects = collected.effects;
        const entered: Isolation[] = [];
        if (cache) collected.faults.recording = entered;
        reading = new Set();
        let text: string;
        let reads: string[];
        try {
          // As JSON and frozen, exactly as a render of this snippet alone will get them.
          text = includeSnippet(snippet, realm.sealText(json));
        } finally {
          reads = [...reading];
          pending.push({ backend, snippet, args: json, reads });
          reading = undefined;
          collected.faults.recording = undefined;
        }
        texts.push(text);
        // Kept for the next render: the snippet's output flat, not the tree of pieces it was written as.
        if (cache && collected.effects === effects) cache.put(cacheKey, { text: flatText(text), reads, entered });
        // A marker where the lines go, resolved once haproxy.cfg is complete: that tells where they stand.
        return `\u0000${pending.length - 1}\u0000`;
      };
      /** A kept call reused: its isolations counted and its lookups read again, as in this render. */
      const readAgain = (kept: KeptCall) => {
        for (const e of kept.entered) collected.faults.enter(e.template, e.subject, e.part);
        for (const read of kept.reads) onRead(read);
      };
      const declarations = new MapDeclarationLog();
      /** An h.mapEntries call's declaration, noted by a kept h.once being computed; `carried`: replayed from one, so its kept call stays kept. */
      const declareEntries = (op: Extract<JournalOp, { kind: 'entries' }>, carried: boolean) => {
        declarations.add(op.snippet, op.args, op.declared);
        collected.journal?.note(op);
        if (carried && op.call) entriesCache?.carry(op.cacheKey, op.call);
      };
      const sealedArgs = new Map<string, unknown>();
      const setNames = new Set(Object.keys(input.resources));
      collected.mapEntries = (set, object, snippet, args) => {
        if (reading) return abortRender('mapEntries() cannot be called from the snippet of a servers()');
        const target = declarationTarget(set, object, setNames);
        const json = entriesArgs(templates, snippet, args);
        const cacheKey = `${target.set}\u0001${target.key}\u0000${snippet as string}\u0000${json}`;
        const kept = entriesCache?.get(cacheKey, (call) => call.object === object);
        if (kept) {
          readAgain(kept);
          declareEntries({ kind: 'entries', snippet: snippet as string, args: json, declared: { ...target, ...kept.declared }, cacheKey, call: kept }, false);
          return kept.result;
        }
        const frame = frames?.begin();
        const entered: Isolation[] = [];
        const recording = collected.faults.recording;
        if (frame) collected.faults.recording = entered;
        const give = collected.give;
        let given: { value: unknown } | undefined;
        collected.give = (value) => {
          if (given) abortRender('result(): a mapEntries snippet gives one value');
          given = { value: deepFreeze(value) };
        };
        let declared: ReturnType<typeof renderEntries>;
        try {
          declared = renderEntries(templates, includeSnippet, snippet as string, json, object, sealedArgs);
        } finally {
          collected.give = give;
          if (frame) {
            frames!.end(frame);
            collected.faults.recording = recording;
            recording?.push(...entered);
          }
        }
        // Only a snippet that gives its value promises to change no shared state, so only its calls are kept.
        const keeping = entriesCache && frame && given && !frame.touched ? entriesCache.put(cacheKey, { object, declared, result: given.value, reads: [...frame.reads], entered }) : undefined;
        declareEntries({ kind: 'entries', snippet: snippet as string, args: json, declared: { ...target, ...declared }, cacheKey, call: keeping }, false);
        return given?.value;
      };
      if (onceCache && frames) {
        const replay = (op: JournalOp) => {
          if (op.kind === 'warning') sayWarning(collected, op.key, { ...op.warning });
          else if (op.kind === 'skip') catchSkip(collected, op.key, op.skip);
          else if (op.kind === 'failed') failedAt(collected, op.site, op.subject, op.name, op.thrown);
          else declareEntries(op, true);
        };
        collected.keepOnce = (key, compute) => {
          const kept = onceCache.get(key);
          if (kept) {
            // Said again in the order computing it said it: isolations, reads, then what the journal noted.
            readAgain(kept);
            frames.reused(key, kept.reads, kept.touched);
            for (const op of kept.ops) replay(op);
            for (const d of kept.declarations) collected.declarations.push(d);
            collected.effects += kept.effects;
            return kept.value;
          }
          const journal = (collected.journal = new OnceJournal(collected.journal));
          const entered: Isolation[] = [];
          const recording = collected.faults.recording;
          collected.faults.recording = entered;
          const declared = collected.declarations.length;
          const effects = collected.effects;
          const before = new Set(collected.once.keys());
          let value: unknown;
          try {
            value = frames.computeOnce(key, compute);
            if (!freezeData(value)) journal.spoil('its value holds more than plain data (a Map, a Set, a function), which freezing cannot fix');
          } finally {
            collected.journal = journal.parent;
            collected.faults.recording = recording;
            recording?.push(...entered);
          }
          // A value first computed inside is not handed on with this one: a later reader computes it again,
          // which is the same only where computing it said nothing.
          for (const inner of collected.once.keys()) if (!before.has(inner) && frames.computed(inner)?.touched) journal.spoil(`h.once value ${JSON.stringify(inner)}, computed inside, said something`);
          const computed = frames.computed(key)!;
          if (!journal.spoiled) onceCache.put(key, { value, reads: computed.reads, entered, ops: journal.ops, declarations: collected.declarations.slice(declared), effects: collected.effects - effects, touched: computed.touched });
          return value;
        };
      }
      const run = (unit: CompiledTemplate, escape: Escape): string => {
        current = unit.label;
        collected.file = unit.label;
        snippetEscape.current = escape;
        try {
          return unit.render(context);
        } catch (thrown) {
          throw faultFrom(thrown, unit);
        }
      };
      const marked = run(templates.main, haproxyWord);
      const { main, sets } = placeServerSets(marked, pending, texts);
      const aux = (kind: AuxKind) => {
        const out: Record<string, string> = {};
        for (const [name, unit] of templates[kind]) out[name] = run(unit, auxText);
        return out;
      };
      const [maps, files, certs] = AUX_KINDS.map(aux) as [Record<string, string>, Record<string, string>, Record<string, string>];
      // A line that failed for every object it read (or most) is a typo, not bad objects: nothing of this render goes live.
      const fault = collected.faults.verdict();
      if (fault) return { ok: false, error: fault } satisfies RenderResult;
      // certFile() refuses template names, so the added files never replace a template's output.
      for (const [name, content] of collected.certs) certs[name] = content;
      const referencing = [...collected.referencing];
      const serverSets = sets.length > 0 || pending.length > 0 ? { sets, reads: [...reads] } : undefined;
      const declared = declarations.result();
      const sealed = sealRendered({ main, maps, files, certs, ...(referencing.length > 0 && { referencing }) }, serverSets);
      const result: RenderResult = {
        ok: true,
        config: declared ? { ...sealed, mapEntries: declared } : sealed,
        warnings: [...collected.warnings.values()],
        statuses: collectStatuses(collected.declarations),
      };
      completed = true;
      return result;
    }, timeoutMs);
  } catch (thrown) {
    if (thrown instanceof RenderTimeout) return { ok: false, error: { template: active.at(-1) ?? current, message: thrown.message } };
    // run() and include() only let TemplateFaults out; anything else is a bad input or a bug here.
    const fault = asFault(thrown);
    if (fault) return { ok: false, error: { ...fault.fault } };
    return { ok: false, error: { template: current, message: `internal error while rendering: ${errorText(thrown)}` } };
  } finally {
    if (session) session.current = undefined;
    options.serverCache?.end(completed);
    options.entriesCache?.end(completed);
    options.onceCache?.end(completed);
  }
}

/**
 * Replaces the markers h.servers left in haproxy.cfg by the server lines they stand
 * for, and notes where each set's lines now stand. A set whose marker is not there
 * exactly once (dropped, or written twice) keeps no record: its backend never takes
 * the fast path.
 */
/** Where h.servers left its lines: NUL, the call's number, NUL (NUL cannot come from a template's `<%= %>`). */
const MARKER = new RegExp(`${String.fromCharCode(0)}(\\d+)${String.fromCharCode(0)}`, 'g');

function placeServerSets(marked: string, pending: readonly Omit<ServerSet, 'start' | 'end'>[], texts: readonly string[]): { main: string; sets: ServerSet[] } {
  if (pending.length === 0) return { main: marked, sets: [] };
  const seen = new Map<number, number>();
  for (const m of marked.matchAll(MARKER)) seen.set(Number(m[1]), (seen.get(Number(m[1])) ?? 0) + 1);
  const parts: string[] = [];
  const sets: ServerSet[] = [];
  let length = 0;
  let from = 0;
  for (const m of marked.matchAll(MARKER)) {
    const index = Number(m[1]);
    const before = marked.slice(from, m.index);
    const text = texts[index] ?? '';
    parts.push(before, text);
    length += before.length;
    if (seen.get(index) === 1 && pending[index]) sets.push({ ...pending[index], start: length, end: length + text.length });
    length += text.length;
    from = m.index + m[0].length;
  }
  parts.push(marked.slice(from));
  return { main: parts.join(''), sets };
}

export type ServerSetsResult = { ok: true; texts: string[]; reads: string[][] } | { ok: false; error: RenderError };

/**
 * Renders the snippets of some h.servers calls on their own, as the full render did,
 * with what the sets hold now: the fast path's new server lines. Warnings are the
 * full render's to report; they are dropped here.
 */
export function renderServerSets(templates: CompiledTemplates, sets: readonly Pick<ServerSet, 'snippet' | 'args'>[], input: RenderInput, options: RenderOptions = {}): ServerSetsResult {
  const active: string[] = [];
  const session = sessions.get(templates);
  let current = 'haproxy.cfg';
  try {
    if (!session) return { ok: false, error: { template: current, message: 'templates must come from compileTemplates' } };
    const snippetEscape = snippetEscapes.get(templates)!;
    const realm = templateRealm();
    return realm.run((): ServerSetsResult => {
      const units = unitsOf.get(templates)!;
      let reading: Set<string> = new Set();
      session.current = {
        ...openSession(units, () => active.at(-1) ?? current),
        servers: () => abortRender('servers() cannot be called from the snippet of another servers()'),
      };
      snippetEscape.current = haproxyWord;
      const context: Record<string, unknown> = {
        resources: resourceSets(input.resources, (set, key) => reading.add(readKey(set, key))),
        values: readOnly(input.values),
        h: helpersInRealm(templates),
      };
      context.include = realm.expose(() => abortRender('include() is not available in the snippet of a servers() rendered alone'));
      const texts: string[] = [];
      const reads: string[][] = [];
      for (const set of sets) {
        const snippet = templates.snippets.get(set.snippet);
        if (!snippet) return { ok: false, error: { template: `snippets/${set.snippet}`, message: 'no such snippet' } };
        current = snippet.label;
        reading = new Set();
        active.push(snippet.label);
        try {
          texts.push(snippet.render(snippetLocals(realm.sealText(set.args), context)));
        } catch (thrown) {
          throw faultFrom(thrown, snippet);
        } finally {
          active.pop();
        }
        reads.push([...reading]);
      }
      return { ok: true, texts, reads };
    }, options.timeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS);
  } catch (thrown) {
    if (thrown instanceof RenderTimeout) return { ok: false, error: { template: active.at(-1) ?? current, message: thrown.message } };
    const fault = asFault(thrown);
    if (fault) return { ok: false, error: { ...fault.fault } };
    return { ok: false, error: { template: current, message: `internal error while rendering: ${errorText(thrown)}` } };
  } finally {
    if (session) session.current = undefined;
  }
}

/** `include` for one render: snippets of the set by name, with cycles refused; `active` names those running. */
function snippetIncluder(templates: CompiledTemplates, context: Record<string, unknown>, active: string[]): (name: unknown, args?: unknown) => string {
  return (name, args) => {
    if (typeof name !== 'string') return abortRender(`include() takes a snippet name, got ${describeValue(name)}`);
    const snippet = templates.snippets.get(name);
    if (!snippet) {
      const known = [...templates.snippets.keys()].join(', ') || 'none';
      return abortRender(`unknown snippet ${JSON.stringify(name)} (snippets: ${known})`);
    }
    if (active.includes(snippet.label)) return abortRender(`include cycle: ${[...active, snippet.label].join(' -> ')}`);
    const locals = snippetLocals(args, context);
    active.push(snippet.label);
    try {
      return snippet.render(locals);
    } catch (thrown) {
      throw faultFrom(thrown, snippet);
    } finally {
      active.pop();
    }
  };
}

/** A mapEntries call's arguments as JSON (plain data, the same for every object of a set), once its snippet is known. */
function entriesArgs(templates: CompiledTemplates, snippet: unknown, args: unknown): string {
  if (typeof snippet !== 'string' || !templates.snippets.has(snippet)) return abortRender(`mapEntries(): ${describeValue(snippet)} is not the name of a snippet`);
  try {
    return JSON.stringify(args ?? {}) ?? 'null';
  } catch (err) {
    return abortRender(`mapEntries(): the arguments must be plain data (${errorText(err)})`);
  }
}

/** A mapEntries snippet rendered for one object: its arguments (JSON) and `object` as locals; what it declared. */
function renderEntries(templates: CompiledTemplates, include: (name: unknown, args?: unknown) => string, snippet: string, json: string, object: unknown, sealedArgs: Map<string, unknown>): ReturnType<typeof readDeclaration> {
  const realm = templateRealm();
  // The same arguments for every object of a set: copied into the realm once per render.
  let parsed = sealedArgs.get(json);
  if (parsed === undefined) sealedArgs.set(json, (parsed = realm.sealText(json)));
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || 'object' in parsed) return abortRender('mapEntries(): the arguments must be an object without a key "object"');
  const text = include(snippet, realm.record([...Object.entries(parsed), ['object', object]]));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return abortRender(`mapEntries(): snippets/${snippet} must write JSON`);
  }
  return readDeclaration(snippet, value, templates.maps);
}

export type ObjectEntriesResult = { ok: true; maps: Record<string, Entry[]>; mapsOnly: boolean; mapsFirst: boolean; warnings: number } | { ok: false; error: RenderError };

/**
 * Renders the mapEntries snippet of one object alone, as the full render would (with
 * `include` and h.once, in a session of its own): the fast path's entries for a new or
 * changed object. An object the snippet skips is an error here; the warnings are counted,
 * not reported (the full render reports them).
 */
export function renderObjectEntries(templates: CompiledTemplates, declaration: { snippet: string; args: string }, object: KubeObject, input: RenderInput, options: RenderOptions = {}): ObjectEntriesResult {
  const active: string[] = [];
  const session = sessions.get(templates);
  try {
    if (!session) return { ok: false, error: { template: 'haproxy.cfg', message: 'templates must come from compileTemplates' } };
    const snippetEscape = snippetEscapes.get(templates)!;
    const realm = templateRealm();
    return realm.run((): ObjectEntriesResult => {
      const collected: RenderSession = {
        ...openSession(unitsOf.get(templates)!, () => active.at(-1) ?? `snippets/${declaration.snippet}`),
        servers: () => abortRender('servers() writes server lines of haproxy.cfg, not of a mapEntries snippet'),
        mapEntries: () => abortRender('mapEntries() cannot be called from the snippet of another mapEntries()'),
        // Rendered alone, only the entries count: the value it gives its caller is not asked for.
        give: () => undefined,
      };
      session.current = collected;
      snippetEscape.current = auxText;
      const context: Record<string, unknown> = { resources: resourceSets(input.resources), values: readOnly(input.values), h: helpersInRealm(templates) };
      const include = snippetIncluder(templates, context, active);
      context.include = realm.expose(include);
      const declared = renderEntries(templates, include, declaration.snippet, entriesArgs(templates, declaration.snippet, JSON.parse(declaration.args)), readOnly(object), new Map());
      const fault = collected.faults.verdict();
      if (fault) return { ok: false, error: fault };
      return { ok: true, ...declared, warnings: collected.warnings.size };
    }, options.timeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS);
  } catch (thrown) {
    if (thrown instanceof RenderTimeout) return { ok: false, error: { template: active.at(-1) ?? `snippets/${declaration.snippet}`, message: thrown.message } };
    const fault = asFault(thrown);
    if (fault) return { ok: false, error: { ...fault.fault } };
    return { ok: false, error: { template: `snippets/${declaration.snippet}`, message: `internal error while rendering: ${errorText(thrown)}` } };
  } finally {
    if (session) session.current = undefined;
  }
}

/** The context plus the include arguments, which may not take a context name. */
function snippetLocals(args: unknown, context: Record<string, unknown>): Record<string, unknown> {
  if (args === undefined || args === null) return context;
  if (typeof args !== 'object' || Array.isArray(args)) return abortRender(`include() arguments must be an object, got ${describeValue(args)}`);
  const locals: Record<string, unknown> = {};
  for (const key of Object.keys(args)) {
    if ((CONTEXT_NAMES as readonly string[]).includes(key)) abortRender(`include() argument ${JSON.stringify(key)} is reserved: ${CONTEXT_NAMES.join(', ')} are always in scope`);
    locals[key] = (args as Record<string, unknown>)[key];
  }
  return Object.assign(locals, context);
}

function errorText(thrown: unknown): string {
  try {
    return templateRealm().isError(thrown) ? thrown.message : describeValue(thrown);
  } catch {
    return describeValue(thrown);
  }
}
