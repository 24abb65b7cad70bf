/**
 * The check of a render that differs from one haproxy -c passed only in certificates:
 * a renewal, a new TLS host's certificate and crt-list line, a host removed. At 10k
 * certificates haproxy 2.6 with OpenSSL 3.0 takes 9-11 s to check the whole
 * configuration, about a millisecond per certificate, and almost all of it reloads
 * certificates that did not change. So such a render is checked as a small
 * configuration instead: the same global section, and one bind whose crt-list holds
 * the new lines, and a line for each renewed certificate, with their files.
 *
 * That is what haproxy -c would find wrong in the whole render: everything else is
 * byte for byte what passed. Taken only when:
 * - haproxy.cfg, the maps, the general files and the marked files are the same;
 * - every other changed certificate file is a certificate with its key, or a crt-list
 *   a bind line loads, whose new lines carry no `[…]` options (a CA or CRL file there
 *   is loaded in ways a bind of its own does not repeat);
 * - a removed certificate file is named by nothing left (haproxy.cfg, a crt-list);
 * - the global section sets no `crt-base` or `ca-base`, which move where files are read.
 * Pure: no IO.
 */
import { auxPath, type RenderedFiles, sameAux } from '../templating/rendered.ts';
import { classify } from './aux-refs.ts';
import type { HaproxyConfig } from './config.ts';
import { type CrtListLine, boundCrtLists, crtListLines, isKeyPair } from './crt-list.ts';

/** The crt-list of the small configuration. */
export const CHECK_LIST = '.certificate-check.crtlist';

/**
 * The small configuration that checks what `next` changed from `passed` (a render
 * haproxy -c passed), or undefined when `next` must be checked whole. `parse` gives
 * `next`'s haproxy.cfg as the plan reads it, asked for only when it is the same text.
 */
export function certificateCheck(passed: RenderedFiles, next: RenderedFiles, parse: () => HaproxyConfig): RenderedFiles | undefined {
  if (passed.main !== next.main || !sameAux(passed, next, ['maps', 'files'])) return undefined;
  const parsed = parse();
  const global = parsed.sections[0]?.type === 'global' ? parsed.sections[0] : undefined;
  if (global && global.lines.some((l) => l.keyword === 'crt-base' || l.keyword === 'ca-base')) return undefined;
  const changed = [...new Set([...Object.keys(passed.certs), ...Object.keys(next.certs)])].filter((n) => passed.certs[n] !== next.certs[n]);
  if (changed.length === 0 || changed.includes(CHECK_LIST)) return undefined;
  const lists = boundCrtLists(parsed);
  const lines: string[] = [];
  const files = new Map<string, string>();
  // The rendered certificate a line loads, if it is one a bind of its own loads alike.
  const loads = (line: CrtListLine) => {
    const file = classify(line.path);
    const pem = file?.kind === 'certs' ? next.certs[file.name] : undefined;
    return line.options || pem === undefined ? undefined : { name: file!.name, pem };
  };
  const removed: string[] = [];
  const onLines = new Set<string>();
  // A line a changed crt-list keeps: what is checked when lines were only removed.
  let kept: CrtListLine | undefined;
  for (const name of changed) {
    const is = next.certs[name];
    if (is === undefined) removed.push(auxPath('certs', name));
    else if (lists.has(name)) {
      const before = new Set(crtListLines(passed.certs[name] ?? '').map((l) => l.text));
      const now = crtListLines(is);
      if (now.length === 0) return undefined;
      kept ??= now[0];
      for (const line of now) {
        if (before.has(line.text)) continue;
        const file = loads(line);
        if (!file) return undefined;
        lines.push(line.text);
        files.set(file.name, file.pem);
        onLines.add(file.name);
      }
    } else if (isKeyPair(is)) files.set(name, is);
    else return undefined;
  }
  // A renewed certificate no new line loads gets a line of its own.
  for (const name of files.keys()) if (!onLines.has(name)) lines.push(auxPath('certs', name));
  // A removed file that something still names fails the whole check, and would here go unseen.
  if (removed.length > 0) {
    const named = (text: string) => removed.some((path) => text.includes(path));
    if (named(next.main) || [...lists].some((list) => named(next.certs[list] ?? ''))) return undefined;
  }
  // Lines only removed: haproxy still reads the list, so one line of it is checked.
  if (lines.length === 0 && kept) {
    const file = loads(kept);
    if (!file) return undefined;
    lines.push(kept.text);
    files.set(file.name, file.pem);
  }
  if (lines.length === 0) return undefined;
  const main = [
    ...(global ? [global.header.text, ...global.lines.map((l) => `    ${l.text}`)] : []),
    'defaults',
    '    mode http',
    '    timeout connect 1s',
    '    timeout client 1s',
    '    timeout server 1s',
    'frontend certificate-check',
    `    bind 127.0.0.1:1 ssl crt-list ${auxPath('certs', CHECK_LIST)}`,
    '',
  ].join('\n');
  return { main, maps: {}, files: next.files, certs: { ...Object.fromEntries(files), [CHECK_LIST]: `${lines.join('\n')}\n` } };
}
