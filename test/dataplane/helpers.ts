/** Shared pieces of the Data Plane tests: the routing configuration and small waits. */
export { type ServerSpec, routingConfig } from '../support/routing-config.ts';

export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} not met within ${timeoutMs} ms`);
}
