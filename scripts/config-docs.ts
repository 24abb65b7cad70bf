/**
 * Writes the configuration reference of docs/install.md (between its markers) from the
 * io-ts codecs of src/config/controller-config.ts and DEFAULT_SETTINGS: every field the
 * codecs accept, its type, whether it is required, and its default. The meaning of each
 * field is kept here, keyed by its path; a field without one is an error, so a new
 * setting cannot reach the codecs undocumented. test/packaging/config-docs.test.ts
 * fails when the document is stale.
 *
 *   npm run docs:config            rewrite the table
 *   npm run docs:config -- --check exit 1 when it is stale
 */
import { readFile, writeFile } from 'node:fs/promises';
import * as t from 'io-ts';
import { DEFAULT_CANARY, DEFAULT_SETTINGS, Settings, WatchedResource } from '../src/config/controller-config.ts';
import { Duration } from '../src/config/duration.ts';
import { DEFAULT_INDEX, DEFAULT_STRIP } from '../src/k8s/store.ts';

export const DOC_PATH = 'docs/install.md';
export const START = '<!-- config-reference:start (npm run docs:config writes this table) -->';
export const END = '<!-- config-reference:end -->';

const MEANINGS: Record<string, string> = {
  'settings.debounce': 'quiet time that ends a burst of cluster changes',
  'settings.debounceMaxWait': 'no change waits longer than this, however long the churn',
  'settings.confirmMaxWait': 'a change the fast path already applied at runtime is confirmed by a full render: such renders start at most once per this interval (the first at once), and newer changes may cancel one until it has waited this long; shorter confirms sooner, at the cost of more renders under churn',
  'settings.minDeployInterval': 'deployments start at least this far apart',
  'settings.driftInterval': 'with nothing deployed for this long, redeploy the last configuration; `0` turns it off',
  'settings.deployTimeout': 'per instance; then its deployment is aborted and reported failed',
  'settings.renderTimeout': 'a render still running after this is stopped (an endless loop in a template) and fails, naming the template; the last good configuration stays live',
  'settings.maxParallel': 'instances deployed to at once; `0` means all',
  'settings.haproxy': 'which pods are the HAProxy instances, and how to reach them',
  'settings.haproxy.podSelector': 'label selector of the HAProxy pods, applied by the API server',
  'settings.haproxy.namespace': "where those pods and the Service are; the controller's namespace when unset",
  'settings.haproxy.service': 'the Service whose address goes into Ingress status; without it no status is written',
  'settings.haproxy.dataplane': "each pod's Data Plane API",
  'settings.haproxy.dataplane.container': "the container that runs the Data Plane API; a pod counts once it is Ready. Without it, the pod's Ready condition decides",
  'settings.haproxy.dataplane.port': 'the Data Plane API port',
  'settings.haproxy.dataplane.scheme': '`http` or `https`; for https, put `ca.crt` in the credentials Secret',
  'settings.canary': 'canary rollout, off when unset: a configuration that reloads goes to one instance first (the first by pod name), is checked, then goes to the rest; a failure rolls that instance back and leaves the rest untouched ([dataplane.md](dataplane.md#canary-rollout))',
  'settings.canary.checkFor': 'how long the canary is checked before the rest get the configuration',
  'settings.canary.interval': 'a round of checks every this often, the first at once; a round that has not answered by the next has failed',
  'settings.canary.probe': 'an HTTP request to the canary, at its own address; without it, the Data Plane health and failed reloads alone are checked',
  'settings.canary.probe.port': 'the port haproxy serves it on',
  'settings.canary.probe.path': 'the path, with its query',
  'settings.canary.probe.host': "the Host header (and TLS server name); the instance's address when unset",
  'settings.canary.probe.scheme': '`http` or `https` (the certificate is not verified: the probe checks the instance, it trusts nothing)',
  'settings.canary.probe.expectStatus': 'the statuses that pass; any 2xx or 3xx when unset',
  'settings.canary.probe.timeout': 'no answer by then fails the round; at most `interval`',
  'watch[].name': 'the name templates use: `resources.<name>`',
  'watch[].apiVersion': 'e.g. `v1`, `networking.k8s.io/v1`',
  'watch[].resource': 'the plural resource, e.g. `ingresses`',
  'watch[].namespace': 'only this namespace; all namespaces when unset',
  'watch[].labelSelector': 'a label selector, applied by the API server',
  'watch[].fieldSelector': 'a field filter, applied by haprx (`metadata.name` by the API server)',
  'watch[].indexBy': 'JSONPath expressions whose values key the index used by `get(...)`',
  'watch[].strip': 'dotted paths removed before an object is stored',
  'watch[].referencedBy': 'hold the set on demand: only the objects these sets name (`{set, path}`) are kept',
};

interface Row {
  path: string;
  type: string;
  required: boolean;
  default: string;
}

function fields(codec: t.Mixed): { props: Record<string, t.Mixed>; required: Set<string> } | undefined {
  if (codec instanceof t.InterfaceType) return { props: codec.props as Record<string, t.Mixed>, required: new Set(Object.keys(codec.props as object)) };
  if (codec instanceof t.PartialType) return { props: codec.props as Record<string, t.Mixed>, required: new Set() };
  if (codec instanceof t.IntersectionType) {
    const parts = (codec.types as t.Mixed[]).map(fields).filter((f) => f !== undefined);
    return { props: Object.assign({}, ...parts.map((p) => p.props)) as Record<string, t.Mixed>, required: new Set(parts.flatMap((p) => [...p.required])) };
  }
  return undefined;
}

function typeName(codec: t.Mixed): string {
  if (codec === Duration) return 'duration';
  if (codec instanceof t.KeyofType) return Object.keys(codec.keys as object).map((k) => `\`${k}\``).join(' \\| ');
  if (codec instanceof t.ArrayType) return `list of ${typeName(codec.type as t.Mixed)}`;
  if (fields(codec)) return 'mapping';
  if (codec.name === 'ResourceName') return 'name';
  return codec.name;
}

function formatMs(ms: number): string {
  if (ms === 0) return '`0`';
  if (ms % 60_000 === 0 && ms >= 60_000 * 60) return `\`${ms / 60_000}m\``;
  if (ms % 1_000 === 0) return `\`${ms / 1_000}s\``;
  return `\`${ms}ms\``;
}

/** The default of settings.<path>, from DEFAULT_SETTINGS (durations are held there as <name>Ms). */
function defaultOf(path: string[], codec: t.Mixed): string {
  // Canary rollout is off by default; its fields have defaults once it is set.
  let node: unknown = { ...DEFAULT_SETTINGS, canary: DEFAULT_CANARY };
  for (const [i, key] of path.entries()) {
    const record = node as Record<string, unknown> | undefined;
    node = i === path.length - 1 && codec === Duration ? record?.[`${key}Ms`] : record?.[key];
  }
  if (node === undefined || typeof node === 'object') return '';
  return codec === Duration ? formatMs(node as number) : `\`${String(node)}\``;
}

function walk(codec: t.Mixed, prefix: string, settingsPath: string[] | undefined, rows: Row[]): void {
  const f = fields(codec)!;
  for (const [key, child] of Object.entries(f.props)) {
    const path = `${prefix}.${key}`;
    const nested = fields(child);
    rows.push({ path, type: typeName(child), required: f.required.has(key), default: settingsPath && !nested ? defaultOf([...settingsPath, key], child) : '' });
    if (nested) walk(child, path, settingsPath && [...settingsPath, key], rows);
  }
}

/** Defaults of watch entries, filled in by decodeControllerConfig and the stores. */
const WATCH_DEFAULTS: Record<string, string[]> = { 'watch[].strip': DEFAULT_STRIP, 'watch[].indexBy': DEFAULT_INDEX };

export function configRows(): Row[] {
  const rows: Row[] = [];
  walk(Settings, 'settings', [], rows);
  walk(WatchedResource, 'watch[]', undefined, rows);
  for (const row of rows) if (WATCH_DEFAULTS[row.path]) row.default = WATCH_DEFAULTS[row.path]!.map((v) => `\`${v}\``).join(', ');
  return rows;
}

export function configTable(): string {
  const rows = configRows();
  const missing = rows.filter((r) => !MEANINGS[r.path]).map((r) => r.path);
  if (missing.length > 0) throw new Error(`scripts/config-docs.ts has no meaning for ${missing.join(', ')}`);
  const lines = ['| field | type | default | meaning |', '|---|---|---|---|'];
  for (const r of rows) lines.push(`| \`${r.path}\` | ${r.type} | ${r.required ? 'required' : r.default || '—'} | ${MEANINGS[r.path]} |`);
  return lines.join('\n');
}

export function withTable(doc: string): string {
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOC_PATH} lacks the markers ${START} … ${END}`);
  return `${doc.slice(0, start + START.length)}\n${configTable()}\n${doc.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const path = new URL(`../${DOC_PATH}`, import.meta.url);
  const doc = await readFile(path, 'utf8');
  const next = withTable(doc);
  if (process.argv.includes('--check')) {
    if (next !== doc) {
      console.error(`${DOC_PATH}: the configuration reference is stale; run npm run docs:config`);
      process.exit(1);
    }
  } else {
    await writeFile(path, next);
    console.log(`wrote the configuration reference in ${DOC_PATH}`);
  }
}
