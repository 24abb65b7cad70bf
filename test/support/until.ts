/**
 * Polls `probe` until it returns something other than undefined, or fails after
 * `ms` with what it last threw and whatever `context` says (e.g. recent logs).
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 15_000,
  context: () => string = () => '',
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}\n${context()}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
