/**
 * Freezes a value and everything it holds, in place: a value one render hands to the
 * next (h.result, a kept h.once) cannot be changed by either. Walks the values only
 * (a descriptor per property costs a render at 10k Ingresses tens of megabytes), and
 * stops at what is frozen already, so a sealed object is not walked again and a cycle
 * ends.
 */
export function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (next === null || (typeof next !== 'object' && typeof next !== 'function') || Object.isFrozen(next)) continue;
    Object.freeze(next);
    if (Array.isArray(next)) for (const item of next) pending.push(item);
    else for (const item of Object.values(next)) pending.push(item);
  }
  return value;
}
