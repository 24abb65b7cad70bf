/**
 * Freezes a value and everything it holds, in place: a value one render hands to the
 * next (h.result, a kept h.once) cannot be changed by either. Walks the values only
 * (a descriptor per property costs a render at 10k Ingresses tens of megabytes), and
 * stops at what is frozen already, so a sealed object is not walked again and a cycle
 * ends.
 */
export function deepFreeze<T>(value: T): T {
  freezeData(value);
  return value;
}

/**
 * Freezes as deepFreeze does, and answers whether the value is plain data all through
 * (arrays and plain objects, of any realm), which freezing makes immutable: a Map, a
 * Set, a Date or a function stays changeable behind its frozen object.
 */
export function freezeData(value: unknown): boolean {
  let plain = true;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (next === null || (typeof next !== 'object' && typeof next !== 'function')) continue;
    if (typeof next === 'function') plain = false;
    else if (!Array.isArray(next)) {
      // A plain object's prototype is its realm's Object.prototype (whose own is null), or null.
      const proto: unknown = Object.getPrototypeOf(next);
      if (proto !== null && Object.getPrototypeOf(proto) !== null) plain = false;
    }
    if (Object.isFrozen(next)) continue;
    Object.freeze(next);
    if (Array.isArray(next)) for (const item of next) pending.push(item);
    else for (const item of Object.values(next)) pending.push(item);
  }
  return plain;
}
