import * as t from 'io-ts';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/** Milliseconds from a number (ms) or a string such as `500ms`, `2s`, `1m`, `1.5h`. */
export const Duration = new t.Type<number, string | number, unknown>(
  'Duration',
  (u): u is number => typeof u === 'number' && Number.isFinite(u) && u >= 0,
  (u, context) => {
    if (typeof u === 'number') return Number.isFinite(u) && u >= 0 ? t.success(u) : t.failure(u, context, 'a duration must be a finite number of ms, 0 or more');
    if (typeof u !== 'string') return t.failure(u, context, 'a duration is a number of ms or a string such as "500ms", "2s", "1m"');
    const match = PATTERN.exec(u.trim());
    if (!match) return t.failure(u, context, `"${u}" is not a duration such as "500ms", "2s", "1m"`);
    return t.success(Math.round(Number(match[1]) * UNITS[match[2]!]!));
  },
  (ms) => `${ms}ms`,
);
