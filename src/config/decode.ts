import { isLeft } from 'fp-ts/lib/Either.js';
import type * as t from 'io-ts';

export type DecodeResult<A> = { ok: true; value: A } | { ok: false; errors: DecodeProblem[] };

export interface DecodeProblem {
  /** Where the problem is, e.g. `watch[1].resource`. */
  path: string;
  message: string;
}

/** Decodes with a codec and turns io-ts errors into paths a user can find in their YAML. */
export function decodeWith<A, O>(codec: t.Type<A, O, unknown>, input: unknown): DecodeResult<A> {
  const result = codec.decode(input);
  if (!isLeft(result)) return { ok: true, value: result.right };
  const seen = new Set<string>();
  const errors: DecodeProblem[] = [];
  for (const error of result.left) {
    const problem = { path: pathOf(error.context), message: error.message ?? describe(error) };
    const key = `${problem.path}\u0000${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    errors.push(problem);
  }
  return { ok: false, errors };
}

function pathOf(context: t.Context): string {
  let path = '';
  for (let i = 1; i < context.length; i++) {
    const { key } = context[i]!;
    // Intersection and union members are keyed by their index in the codec, not in the data.
    const parentTag = (context[i - 1]!.type as { _tag?: string })._tag;
    if (key === '' || parentTag === 'IntersectionType' || parentTag === 'UnionType') continue;
    if (/^\d+$/.test(key) && parentTag === 'ArrayType') path += `[${key}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) path += path ? `.${key}` : key;
    else path += `[${JSON.stringify(key)}]`;
  }
  return path || '(root)';
}

function describe(error: t.ValidationError): string {
  const last = error.context[error.context.length - 1];
  const expected = last?.type.name ?? 'a value';
  return error.value === undefined ? `required, expected ${expected}` : `expected ${expected}, got ${JSON.stringify(error.value)?.slice(0, 80)}`;
}
