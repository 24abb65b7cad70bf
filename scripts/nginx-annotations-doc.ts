/**
 * Writes the table of ingress-nginx annotations in docs/ingress-nginx.md (between its
 * markers) from templates/snippets/nginx-catalogue, the file the templates read, so
 * the table says what the templates do. test/templates/nginx-catalogue.test.ts fails
 * when the document is stale.
 *
 *   npm run docs:nginx            rewrite the table
 *   npm run docs:nginx -- --check exit 1 when it is stale
 */
import { readFile, writeFile } from 'node:fs/promises';

export const DOC_PATH = 'docs/ingress-nginx.md';
export const CATALOGUE_PATH = 'templates/snippets/nginx-catalogue';
export const START = '<!-- nginx-annotations:start (npm run docs:nginx writes this table) -->';
export const END = '<!-- nginx-annotations:end -->';

export interface CatalogueEntry {
  support: 'yes' | 'differs' | 'no';
  refusal: 'skip' | 'ignore';
  note: string;
}

/** The catalogue: the snippet's JSON after its leading template comment. */
export function parseCatalogue(text: string): Record<string, CatalogueEntry> {
  return JSON.parse(text.replace(/^<%#[\s\S]*?-%>\s*/, '')) as Record<string, CatalogueEntry>;
}

const SUPPORT = { yes: 'yes', differs: 'with a difference', no: 'no' } as const;
const REFUSAL = { skip: 'not served', ignore: 'served without it' } as const;

export function annotationTable(catalogue: Record<string, CatalogueEntry>): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const counts = { yes: 0, differs: 0, no: 0 };
  const rows = Object.entries(catalogue)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, e]) => {
      counts[e.support]++;
      return `| \`${name}\` | ${SUPPORT[e.support]} | ${REFUSAL[e.refusal]} | ${cell(e.note)} |`;
    });
  return [
    `${rows.length} annotations: ${counts.yes} supported as ingress-nginx does, ${counts.differs} with a difference, ${counts.no} not supported.`,
    '',
    '| annotation (`nginx.ingress.kubernetes.io/…`) | supported | value refused, or not supported: the Ingress is | notes |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export function withTable(doc: string, catalogue: Record<string, CatalogueEntry>): string {
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOC_PATH} lacks the markers ${START} … ${END}`);
  return `${doc.slice(0, start + START.length)}\n${annotationTable(catalogue)}\n${doc.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const path = new URL(`../${DOC_PATH}`, import.meta.url);
  const catalogue = parseCatalogue(await readFile(new URL(`../${CATALOGUE_PATH}`, import.meta.url), 'utf8'));
  const doc = await readFile(path, 'utf8');
  const next = withTable(doc, catalogue);
  if (process.argv.includes('--check')) {
    if (next !== doc) {
      console.error(`${DOC_PATH}: the annotation table is stale; run npm run docs:nginx`);
      process.exit(1);
    }
  } else {
    await writeFile(path, next);
    console.log(`wrote the annotation table in ${DOC_PATH}`);
  }
}
