/**
 * The template realm: where templates run, and where the data they read lives.
 *
 * Templates are code from the controller configuration. They run in a realm of
 * their own (a node:vm context) whose global holds only the JavaScript built-ins:
 * no `process`, `require`, `import()`, timers, console, promises, WebAssembly,
 * shared memory or finalizers, and no way to make code from strings (`eval`, `Function`), so
 * `x.constructor.constructor('return process')()` fails. Every built-in object of
 * the realm is frozen, so one render cannot leave anything behind for the next.
 *
 * A realm is only as closed as what is handed into it: a single object of the
 * controller's own realm would lead, through `.constructor`, to the controller's
 * Function and from there to everything. So nothing of the host crosses as it is:
 *
 * - data (stored objects, values) is sealed into the realm: deep copies made by
 *   realm code, keys sorted, frozen (`seal`); stores seal their objects here once,
 *   when they take them, so renders copy nothing;
 * - host functions (helpers, include, the escapes) cross as realm functions that
 *   call them (`expose`): their results are brought into the realm (`adopt`),
 *   functions passed to them are wrapped so that what the host passes back to a
 *   template's callback is adopted too, and what they throw becomes a realm
 *   error; the errors the templating code throws on purpose (TemplateAbort,
 *   ObjectSkip, TemplateFault) are realm classes to begin with;
 * - a render runs inside one evaluation with a time limit (`run`): an endless
 *   loop (or a regular expression that backtracks without end) is stopped there,
 *   and the render fails naming the template that was running.
 *
 * There is one realm per thread, made on first use: pure data in, text out.
 * What it does not bound is memory: a template that allocates without end can
 * still exhaust the process, as any code the configuration holds could.
 */
import vm from 'node:vm';

/** Stops a render: a message for the template author; `fatal` marks a fault of the templates themselves. */
export interface TemplateAbort extends Error {
  readonly reason: string;
  readonly fatal: boolean;
}

/** Thrown by h.skip: the object being rendered cannot be served; `field` says which of its fields is at fault. */
export interface ObjectSkip extends TemplateAbort {
  readonly field: string | undefined;
  /** Why, as a status condition's reason (e.g. UnsupportedValue), when the template gave one. */
  readonly statusReason: string | undefined;
}

/** A failure already attributed to a template; passes unchanged through the templates that included it. */
export interface TemplateFault extends Error {
  readonly fault: { readonly template: string; readonly line?: number; readonly message: string };
  /** The templates are at fault: h.isolate lets it through. */
  readonly fatal: boolean;
  /** The field an h.skip named. */
  readonly field: string | undefined;
  /** The status reason an h.skip gave. */
  readonly statusReason: string | undefined;
  /** A TypeError the template did not mean (see systematic-faults.ts). */
  readonly unexpected: boolean;
}

/** A render that ran past its time limit. */
export class RenderTimeout extends Error {
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`stopped after the render time limit of ${timeoutMs} ms (a loop that does not end?)`);
    this.name = 'RenderTimeout';
    this.timeoutMs = timeoutMs;
  }
}

type AnyFunction = (...args: never[]) => unknown;

interface RealmParts {
  TemplateAbort: new (reason: string, fatal?: boolean) => TemplateAbort;
  ObjectSkip: new (reason: string, field?: string, statusReason?: string) => ObjectSkip;
  TemplateFault: new (fault: { template: string; line?: number; message: string }, fatal?: boolean, field?: string, statusReason?: string, unexpected?: boolean) => TemplateFault;
  seal<T>(value: T): T;
  /** Sealed data from JSON text with keys in code-unit order (see sealData in k8s/sealed.ts). */
  sealText(text: string): unknown;
  isSealed(value: object): boolean;
  expose<F extends AnyFunction>(fn: F): F;
  adopt<T>(value: T): T;
  /** A null-prototype realm object with these own properties (values must be realm values). */
  record(entries: readonly (readonly [string, unknown])[]): Record<string, unknown>;
  /** A frozen view of a realm object: names it does not hold go to `missing`, any write to `denied`. */
  guarded<T extends object>(target: T, missing: (name: string) => unknown, denied: () => never): T;
  setJob(job: (() => unknown) | undefined): void;
  isRealmValue(value: unknown): boolean;
  errors: { Error: ErrorConstructor; TypeError: TypeErrorConstructor; ReferenceError: ReferenceErrorConstructor; SyntaxError: SyntaxErrorConstructor; RangeError: RangeErrorConstructor };
}

/**
 * Evaluated once in the new realm. It receives two host functions, keeps them in
 * its closure (unreachable from templates) and returns the realm's parts. It is
 * realm code, so every object it makes belongs to the realm.
 */
const REALM_SOURCE = String.raw`(function (describeHost) {
  'use strict';
  const { apply, ownKeys, getOwnPropertyDescriptor, getPrototypeOf, defineProperty } = Reflect;
  const { freeze, fromEntries, keys, create } = Object;
  const isArray = Array.isArray;
  const ObjectProto = Object.prototype;
  const sealed = new WeakSet();
  const CYCLE = Symbol('cycle');

  // The built-in prototypes are frozen, so 'name' is defined, not assigned (see tamed() below).
  const named = (error, name) => defineProperty(error, 'name', { value: name, writable: true, configurable: true });
  class TemplateAbort extends Error {
    constructor(reason, fatal = false) {
      super(reason);
      named(this, 'TemplateAbort');
      this.reason = reason;
      this.fatal = fatal;
    }
  }
  class ObjectSkip extends TemplateAbort {
    constructor(reason, field, statusReason) {
      super(reason);
      named(this, 'ObjectSkip');
      this.field = field;
      this.statusReason = statusReason;
    }
  }
  class TemplateFault extends Error {
    constructor(fault, fatal = false, field, statusReason, unexpected = false) {
      super(String(fault.message));
      named(this, 'TemplateFault');
      const copy = { template: String(fault.template), message: String(fault.message) };
      if (fault.line !== undefined) copy.line = Number(fault.line);
      this.fault = freeze(copy);
      this.fatal = fatal === true;
      this.field = field === undefined ? undefined : String(field);
      this.statusReason = statusReason === undefined ? undefined : String(statusReason);
      this.unexpected = unexpected === true;
    }
  }
  const ERRORS = { Error, TypeError, ReferenceError, SyntaxError, RangeError, EvalError, URIError };
  const compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

  // Whether an object's prototype chain ends in this realm's Object.prototype.
  function inRealm(value) {
    let at = value;
    for (;;) {
      const proto = getPrototypeOf(at);
      if (proto === null) return at === ObjectProto;
      at = proto;
    }
  }
  function isRealmValue(value) {
    return value === null || (typeof value !== 'object' && typeof value !== 'function') || inRealm(value);
  }

  function seal(value, seen) {
    if (value === null || typeof value !== 'object') {
      if (typeof value === 'function') throw new TypeError('a function is not data');
      return value;
    }
    if (sealed.has(value)) return value;
    // An object met twice in one value is copied once, so identities hold within it.
    seen ??= new Map();
    if (seen.has(value)) {
      const known = seen.get(value);
      if (known === CYCLE) throw new TypeError('data that contains itself cannot be sealed');
      return known;
    }
    seen.set(value, CYCLE);
    let copy;
    if (isArray(value)) {
      copy = [];
      for (let i = 0; i < value.length; i++) copy.push(seal(value[i], seen));
    } else {
      // fromEntries defines (never assigns) each key: '__proto__' or 'toString' from a cluster stay plain data.
      copy = fromEntries(keys(value).sort(compare).map((k) => [k, seal(value[k], seen)]));
    }
    seen.set(value, copy);
    freeze(copy);
    sealed.add(copy);
    return copy;
  }

  // JSON text (stored objects, whose canonical text sealData makes) as sealed data:
  // JSON.parse builds compact objects and shares short strings, at a fraction of the
  // memory a copy takes. Only the whole value is marked sealed.
  const parseJson = JSON.parse;
  function freezeAll(value) {
    if (value === null || typeof value !== 'object') return;
    if (isArray(value)) for (let i = 0; i < value.length; i++) freezeAll(value[i]);
    else for (const k of keys(value)) freezeAll(value[k]);
    freeze(value);
  }
  function sealText(text) {
    const value = parseJson(String(text));
    freezeAll(value);
    if (value !== null && typeof value === 'object') sealed.add(value);
    return value;
  }

  // A host error as a realm error of the same kind, message and stack.
  function adoptError(thrown) {
    if (isRealmValue(thrown)) return thrown;
    let name = 'Error';
    let message = 'an error';
    let stack;
    try {
      const d = describeHost(thrown);
      name = d.name;
      message = d.message;
      stack = d.stack;
    } catch {}
    const Kind = ERRORS[name] ?? Error;
    const error = new Kind(message);
    if (stack !== undefined) defineProperty(error, 'stack', { value: stack, writable: true, configurable: true });
    return error;
  }

  // A host value as a realm value: realm values as they are, host functions exposed,
  // host arrays and objects copied (own enumerable properties, adopted in turn).
  function adopt(value, seen) {
    if (isRealmValue(value)) return value;
    if (typeof value === 'function') return expose(value);
    seen ??= new Map();
    if (seen.has(value)) return seen.get(value);
    if (isArray(value)) {
      const copy = [];
      seen.set(value, copy);
      for (let i = 0; i < value.length; i++) copy.push(adopt(value[i], seen));
      return copy;
    }
    const copy = {};
    seen.set(value, copy);
    for (const k of keys(value)) defineProperty(copy, k, { value: adopt(value[k], seen), writable: true, enumerable: true, configurable: true });
    return copy;
  }
  const adoptArg = (value) => adopt(value);

  // A host function as a realm function. Calls with up to three arguments, none of them
  // a function, take the short path: helpers and escapes are called for every value.
  const small = (r) => (r === null || (typeof r !== 'object' && typeof r !== 'function') ? r : adopt(r));
  function expose(hostFn) {
    const exposed = {
      exposed(a, b, c) {
        const n = arguments.length;
        if (n <= 3 && typeof a !== 'function' && typeof b !== 'function' && typeof c !== 'function') {
          let result;
          try {
            result = n === 0 ? hostFn() : n === 1 ? hostFn(a) : n === 2 ? hostFn(a, b) : hostFn(a, b, c);
          } catch (thrown) {
            throw adoptError(thrown);
          }
          return small(result);
        }
        const args = [];
        for (let i = 0; i < n; i++) {
          const f = arguments[i];
          // What the host passes to a template's callback is adopted before the callback sees it.
          args.push(typeof f === 'function' ? (...inner) => apply(f, undefined, inner.map(adoptArg)) : f);
        }
        let result;
        try {
          result = apply(hostFn, undefined, args);
        } catch (thrown) {
          throw adoptError(thrown);
        }
        return small(result);
      },
    }.exposed;
    return freeze(exposed);
  }

  function record(entries) {
    const target = create(null);
    for (const [k, v] of entries) defineProperty(target, k, { value: v, writable: true, enumerable: true, configurable: true });
    return target;
  }

  function guarded(target, missing, denied) {
    freeze(target);
    return new Proxy(target, {
      get(t, key) {
        if (typeof key === 'symbol') return undefined;
        if (Object.hasOwn(t, key)) return t[key];
        return missing(key);
      },
      set: denied,
      defineProperty: denied,
      deleteProperty: denied,
      setPrototypeOf: denied,
      preventExtensions: denied,
    });
  }

  let job;
  defineProperty(globalThis, '__haprxRender', {
    value: () => {
      const run = job;
      job = undefined;
      if (typeof run !== 'function') throw new TypeError('no render is running');
      return run();
    },
  });

  // Nothing that reaches out of a computation: consoles, shared memory, WebAssembly,
  // finalizers (their callbacks would run later, outside the time limit), and promises:
  // a render is synchronous, and stopping a promise job at the time limit would leave
  // Node's async context tracking (AsyncLocalStorage, tracing) in a state it cannot
  // recover from. compile.ts refuses async functions and import() for the same reason.
  for (const name of ['console', 'Atomics', 'SharedArrayBuffer', 'WebAssembly', 'FinalizationRegistry', 'WeakRef', 'eval', 'Promise', 'AsyncDisposableStack']) delete globalThis[name];
  delete Array.fromAsync;
  // Nor the collector, which a process run with --expose-gc gives every context (as a
  // property that cannot be deleted): a template calling it would stop the thread for a
  // full collection each time.
  if ('gc' in globalThis) globalThis.gc = undefined;

  // Assigning a property that a frozen prototype holds fails ('the override mistake'):
  // e.name = 'X' on an error, o.toString = f on an object. These become accessors whose
  // setter defines the property on the object itself, as it would be on unfrozen built-ins.
  function tamed(proto, name) {
    const d = getOwnPropertyDescriptor(proto, name);
    if (!d || !('value' in d) || !d.writable) return;
    const value = d.value;
    defineProperty(proto, name, {
      get() { return value; },
      set(next) {
        if (this === proto) throw new TypeError('Cannot assign to read only property ' + String(name) + ' of a built-in prototype');
        defineProperty(this, name, { value: next, writable: true, enumerable: true, configurable: true });
      },
      enumerable: d.enumerable,
      configurable: false,
    });
  }
  for (const name of ownKeys(ObjectProto)) if (name !== '__proto__') tamed(ObjectProto, name);
  for (const E of [Error, TypeError, ReferenceError, SyntaxError, RangeError, EvalError, URIError, AggregateError]) {
    tamed(E.prototype, 'name');
    tamed(E.prototype, 'message');
  }
  tamed(Function.prototype, 'toString');
  tamed(Array.prototype, 'toString');

  // Freeze everything reachable from the global (built-ins, their prototypes, accessors)
  // and the error classes templates can catch.
  const pending = [globalThis, TemplateAbort, ObjectSkip, TemplateFault];
  const visited = new WeakSet();
  while (pending.length > 0) {
    const at = pending.pop();
    if (visited.has(at)) continue;
    visited.add(at);
    freeze(at);
    const proto = getPrototypeOf(at);
    if (proto !== null) pending.push(proto);
    for (const key of ownKeys(at)) {
      const d = getOwnPropertyDescriptor(at, key);
      for (const v of [d.value, d.get, d.set]) if ((typeof v === 'object' && v !== null) || typeof v === 'function') pending.push(v);
    }
  }

  return {
    TemplateAbort, ObjectSkip, TemplateFault, expose, record, guarded,
    seal: (value) => seal(value),
    sealText: (text) => sealText(text),
    adopt: (value) => adopt(value),
    isSealed: (value) => sealed.has(value),
    isRealmValue,
    setJob: (f) => { job = f; },
    errors: { Error, TypeError, ReferenceError, SyntaxError, RangeError },
  };
})`;

/** What the realm reads from a host error to make its own copy. */
function describeHost(thrown: unknown): { name: string; message: string; stack?: string } {
  if (thrown instanceof Error) return { name: thrown.name, message: thrown.message, ...(typeof thrown.stack === 'string' && { stack: thrown.stack }) };
  return { name: 'Error', message: `a value of type ${typeof thrown}` };
}

export interface Realm extends RealmParts {
  readonly context: vm.Context;
  /** Compiles a function body in the realm; parameters as named. */
  compile(body: string, params: readonly string[], filename: string): (...args: unknown[]) => unknown;
  /** Runs `job` (host code that calls into templates) within one evaluation bounded by `timeoutMs`. */
  run<T>(job: () => T, timeoutMs: number): T;
  /** Whether a value is an Error of this realm or of the host (optionally of one kind). */
  isError(value: unknown, kind?: 'TypeError' | 'ReferenceError'): value is Error;
}

let realm: Realm | undefined;
let running = false;

/** The thread's template realm, made on first use. */
export function templateRealm(): Realm {
  if (realm) return realm;
  const context = vm.createContext(vm.constants.DONT_CONTEXTIFY, {
    name: 'haprx templates',
    codeGeneration: { strings: false, wasm: false },
    // Templates cannot make promises; should one appear all the same, its jobs run within the render.
    microtaskMode: 'afterEvaluate',
  });
  const make = vm.runInContext(REALM_SOURCE, context, { filename: 'haprx-template-realm' }) as (describe: typeof describeHost) => RealmParts;
  const parts = make(describeHost);
  const entry = new vm.Script('__haprxRender()', { filename: 'haprx-render' });
  const isError = (value: unknown, kind?: 'TypeError' | 'ReferenceError'): value is Error => {
    try {
      if (kind === 'TypeError') return value instanceof TypeError || value instanceof parts.errors.TypeError;
      if (kind === 'ReferenceError') return value instanceof ReferenceError || value instanceof parts.errors.ReferenceError;
      return value instanceof Error || value instanceof parts.errors.Error;
    } catch {
      // instanceof runs getPrototypeOf, which a thrown proxy may trap.
      return false;
    }
  };
  realm = {
    ...parts,
    context,
    isError,
    compile: (body, params, filename) => vm.compileFunction(body, [...params], { parsingContext: context, filename }) as (...args: unknown[]) => unknown,
    run<T>(job: () => T, timeoutMs: number): T {
      // A render inside a render (none today) shares the outer one's bound.
      if (running) return job();
      running = true;
      parts.setJob(job);
      try {
        return entry.runInContext(context, { timeout: Math.max(1, Math.round(timeoutMs)) }) as T;
      } catch (err) {
        if ((err as { code?: unknown } | null)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new RenderTimeout(timeoutMs);
        throw err;
      } finally {
        parts.setJob(undefined);
        running = false;
      }
    },
  };
  return realm;
}
