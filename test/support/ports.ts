import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Where test ports are taken from: below the kernel's ephemeral range. A port the kernel
 * hands out for `listen(0)` comes from that range, and so does the local port of every
 * outgoing connection: between the check here and haproxy's bind, any test's HTTP client
 * could take it ("Address already in use"). Below the range, only another listener can.
 */
function testPortRange(): [number, number] {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 21_000) return [20_000, low - 1];
  } catch {
    // Not Linux, or no procfs: the range Linux uses by default starts at 32768.
  }
  return [20_000, 32_767];
}

const [LOW, HIGH] = testPortRange();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Ports this process has handed out. A test often takes two before anything binds the
 * first (haproxy's port and haprx's health port), so "free a moment ago" alone could give
 * the same port twice; a port handed out is also not handed out again once its listener
 * has gone, since a haproxy that lets go of it may still be finishing.
 */
const handedOut = new Set<number>();

/** A TCP port on 127.0.0.1 that was free a moment ago (haproxy configs cannot bind port 0). */
export async function freePort(): Promise<number> {
  // Random, so that test files running at once rarely try the same one; each is checked.
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port between ${LOW} and ${HIGH} after 100 tries`);
}
