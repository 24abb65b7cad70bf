import { type TemplateAbort as RealmTemplateAbort, templateRealm } from './realm.ts';

/**
 * Thrown by helpers, escapes and the render context to stop a render with a
 * message meant for the template author. ejs rewrites `message` to prepend its
 * source excerpt, so the author's text is kept apart in `reason`.
 *
 * `fatal` marks a fault of the templates themselves (an unknown snippet or
 * template, an include cycle, h.fail): it fails the render even inside
 * h.isolate, where other aborts only skip the object being rendered.
 *
 * The class belongs to the template realm (realm.ts): templates can catch it,
 * and what they catch must lead nowhere out of the realm.
 */
export type TemplateAbort = RealmTemplateAbort;
export const TemplateAbort = templateRealm().TemplateAbort;

/** Stops what is being rendered: the render, or inside h.isolate the object. */
export function abort(reason: string): never {
  throw new TemplateAbort(reason);
}

/** Stops the whole render, also inside h.isolate: the templates are at fault, not an object. */
export function abortRender(reason: string): never {
  throw new TemplateAbort(reason, true);
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
