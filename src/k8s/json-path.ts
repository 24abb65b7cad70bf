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
