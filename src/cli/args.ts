import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** `--set key=value` pairs as template values; values are read as YAML scalars (18080 is a number). */
export function parseSets(pairs: readonly string[]): { ok: true; values: Record<string, unknown> } | { ok: false; message: string } {
  const values: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return { ok: false, message: `--set ${pair}: expected key=value` };
    const key = pair.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return { ok: false, message: `--set ${pair}: "${key}" is not a valid value name` };
    const text = pair.slice(eq + 1);
    let value: unknown = text;
    try {
      const parsed: unknown = parse(text);
      if (parsed === null || ['string', 'number', 'boolean'].includes(typeof parsed)) value = parsed ?? '';
    } catch {
      // Not YAML: keep the text as it is.
    }
    values[key] = value;
  }
  return { ok: true, values };
}

/** The template library shipped with haprx, wherever it is installed or built. */
export function shippedTemplates(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'templates'))) return join(dir, 'templates');
    dir = resolve(dir, '..');
  }
  return resolve('templates');
}

/** A `--*-port` flag: 0 to 65535, where 0 turns the listener off. */
export function parsePort(flag: string, text: string): { ok: true; port: number } | { ok: false; message: string } {
  const port = Number(text);
  if (!/^\d+$/.test(text) || !Number.isInteger(port) || port > 65_535) return { ok: false, message: `--${flag} ${text}: expected a port number (0 turns it off)` };
  return { ok: true, port };
}

/** Whether an address is loopback-only (127.0.0.0/8, ::1, localhost): not reachable from other hosts. */
export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address);
}
