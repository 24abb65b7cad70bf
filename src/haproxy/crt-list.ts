/**
 * crt-lists and certificate files as haproxy 2.6 reads them, for the plan
 * (plan-certs.ts) and the certificate check (certificate-check.ts). Pure: no IO.
 */
import { classify } from './aux-refs.ts';
import type { HaproxyConfig } from './config.ts';

/** A crt-list line: blank-separated words, `[…]` options after the certificate, then SNI filters. */
export interface CrtListLine {
  text: string;
  /** The certificate's path as written. */
  path: string;
  options: boolean;
  filters: string[];
}

/** The lines of a crt-list; `#` starts a comment line. */
export function crtListLines(text: string): CrtListLine[] {
  const lines: CrtListLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const words = line.split(/[ \t]+/);
    const options = line.includes('[');
    const close = words.findIndex((w) => w.endsWith(']'));
    lines.push({ text: line, path: words[0]!, options, filters: options ? words.slice(close + 1) : words.slice(1) });
  }
  return lines;
}

/** The certificate files bind lines load as crt-lists (`bind … crt-list ssl/<name>`). */
export function boundCrtLists(config: HaproxyConfig): Set<string> {
  const names = new Set<string>();
  for (const section of config.sections) {
    if (section.type !== 'frontend' && section.type !== 'listen') continue;
    for (const line of section.lines) {
      if (line.keyword !== 'bind') continue;
      for (let i = 0; i < line.args.length - 1; i++) {
        if (line.args[i] !== 'crt-list') continue;
        const file = classify(line.args[i + 1]!);
        if (file?.kind === 'certs') names.add(file.name);
      }
    }
  }
  return names;
}

const PEM_CERTIFICATE = /^-----BEGIN CERTIFICATE-----$/m;
const PEM_KEY = /^-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----$/m;

/** A certificate with its key in one PEM file, the file haproxy loads for a bind or a server. */
export const isKeyPair = (text: string): boolean => PEM_CERTIFICATE.test(text) && PEM_KEY.test(text);
