/**
 * Thrown by helpers, escapes and the render context to stop a render with a
 * message meant for the template author. ejs rewrites `message` to prepend its
 * source excerpt, so the author's text is kept apart in `reason`.
 */
export class TemplateAbort extends Error {
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.name = 'TemplateAbort';
    this.reason = reason;
  }
}

export function abort(reason: string): never {
  throw new TemplateAbort(reason);
}

/** A short, never-throwing rendering of an arbitrary value for error messages. */
export function describeValue(value: unknown): string {
  try {
    if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
    if (value === null) return 'null';
    if (Array.isArray(value)) return 'an array';
    if (typeof value === 'object') return 'an object';
    if (typeof value === 'function') return 'a function';
    if (typeof value === 'symbol') return 'a symbol';
    return String(value);
  } catch {
    return 'a value';
  }
}
