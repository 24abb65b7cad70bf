/** At least 1,000 distinct hostile strings, built deterministically from payloads and separators. */
export function hostileStrings(): string[] {
  const payloads = [
    'lua-load /tmp/evil.lua',
    'external-check command /bin/sh',
    'external-check path /tmp',
    'backend be_evil',
    'frontend fe_evil',
    'listen evil',
    'global',
    'stats socket /tmp/evil.sock level admin',
    'server evil 6.6.6.6:80',
    'use_backend be_evil',
    'http-request return status 200',
    'bind :6666',
    '.if defined(HOME)',
    '.endif',
    '%[env(HOME)]',
    '%[src]',
    '${HOME}',
    '"$HOME"',
    '-i',
    '-m reg',
    '--',
    '-f /etc/passwd',
    '{ always_true }',
    'if TRUE',
    'unless FALSE',
    ') , (',
    'map(/etc/passwd)',
    'be_default',
    '*',
    '*.',
    '.',
    '..',
    '/../../etc/passwd',
    '//',
    '%00',
    '%',
    '%%',
    "'",
    '"',
    '\\',
    '#',
    ' ',
    '',
    'é',
    '😀',
    '\u2028',
    '\u00a0',
    'A'.repeat(300),
    'a.'.repeat(140),
    '10.0.0.1 backup',
    '10.0.0.1:80',
    '[::1]',
    '300.1.1.1',
    '0',
    '-1',
    '65536',
    'true',
    'null',
    '$5$salt$hash\nmallory:$5$x$y',
    '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----',
  ];
  const separators = ['\n', '\r\n', '\r', '\t', ' ', '#', ' #', "'", '"', '\\', '\0', '\u0085', ',', ';', '%', '$', '{', '}', '\n  '];
  const out = new Set<string>();
  for (const p of payloads) out.add(p);
  // Each separator before a payload, after a valid-looking prefix (a host, a path, a number).
  separators.forEach((s, i) => {
    for (const [j, p] of payloads.entries()) out.add(`${['ok.example', '/x', '80', 'GET'][(i + j) % 4]}${s}${p}`);
  });
  return [...out];
}

/** Values of other types, which YAML or JSON may put anywhere. */
export const NON_STRINGS: unknown[] = [0, -1, 1.5, 65536, 1e21, NaN, true, false, null, [], ['a'], {}, { a: 1 }, [{}]];
