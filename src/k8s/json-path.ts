import { JSONPathEnvironment, type JSONPathQuery } from 'json-p3';

/**
 * JSONPath expressions of the controller configuration (index keys, field
 * selectors, references between sets), in the standard syntax (RFC 9535):
 * `$.metadata.labels["app"]`, `$.spec.tls[*].secretName`, `$..name`,
 * `$.items[?@.ready == true]`. Each is compiled once, when the configuration
 * loads, so that a typo is an error naming the field, never a surprise on
 * some object later; filters are parsed, never evaluated as code.
 */
export interface CompiledPath {
  readonly text: string;
  /** The values the path selects in an object; never throws, an evaluation error is a message. */
  values(object: unknown): { ok: true; values: unknown[] } | { ok: false; message: string };
}

export type PathResult = { ok: true; path: CompiledPath } | { ok: false; message: string };

/** How deep `..` descends: deeper objects are that object's problem, never a stack overflow. */
export const MAX_DESCENT = 200;
const environment = new JSONPathEnvironment({ strict: true, maxRecursionDepth: MAX_DESCENT });
const compiled = new Map<string, PathResult>();

export function compilePath(text: string): PathResult {
  let result = compiled.get(text);
  if (result === undefined) {
    result = compile(text);
    // Paths come from configurations, which are few: the cache stays small.
    if (compiled.size < 10_000) compiled.set(text, result);
  }
  return result;
}

function compile(text: string): PathResult {
  let query: JSONPathQuery;
  try {
    query = environment.compile(text);
  } catch (err) {
    return { ok: false, message: `${text} is not a JSONPath (RFC 9535): ${errorText(err)}` };
  }
  const members = memberPath(text);
  if (members) return { ok: true, path: { text, values: (object) => ({ ok: true, values: memberValues(object, members) }) } };
  return {
    ok: true,
    path: {
      text,
      values: (object) => {
        try {
          return { ok: true, values: query.query(object as Parameters<JSONPathQuery['query']>[0]).values() };
        } catch (err) {
          // A recursion limit on a deeply nested object, say: that object's problem only.
          return { ok: false, message: `JSONPath ${text}: ${errorText(err)}` };
        }
      },
    },
  };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The member names of a path made of name selectors only (`$.metadata.labels["app"]`),
 * which most index keys and references are; undefined for any other path. Such a path
 * selects the member's value at each step, or nothing once a step is not an object or
 * lacks the member: walked directly, it costs a few property reads, where the general
 * evaluator builds a node list per step (a tenth of reading a manifest at 10k objects).
 */
export function memberPath(text: string): string[] | undefined {
  const steps = /^\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[(?:"[^"\\]*"|'[^'\\]*')\])*)$/.exec(text);
  if (!steps) return undefined;
  return [...steps[1]!.matchAll(/\.([A-Za-z_][A-Za-z0-9_]*)|\[(?:"([^"\\]*)"|'([^'\\]*)')\]/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

function memberValues(object: unknown, members: readonly string[]): unknown[] {
  let at = object;
  for (const name of members) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, name)) return [];
    at = (at as Record<string, unknown>)[name];
  }
  return [at];
}
