import * as t from 'io-ts';
import { compilePath } from '../k8s/json-path.ts';
import { fieldSelector, labelSelector } from '../k8s/selector.ts';
import { DEFAULT_STRIP } from '../k8s/store.ts';
import { type DecodeResult, decodeWith } from './decode.ts';
import { Duration } from './duration.ts';

const NAME = /^[a-z][A-Za-z0-9_]*$/;
const ResourceName = new t.Type<string, string, unknown>(
  'ResourceName',
  (u): u is string => typeof u === 'string' && NAME.test(u),
  (u, c) => (typeof u === 'string' && NAME.test(u) ? t.success(u) : t.failure(u, c, `"${String(u)}" is not a valid set name: templates use it as resources.<name>, so it must match ${NAME}`)),
  (s) => s,
);

/** One watched resource set: what to list and watch, and how templates look objects up. */
export const WatchedResource = t.intersection([
  t.type({
    /** The name templates use: `resources.<name>`. */
    name: ResourceName,
    /** e.g. `v1`, `networking.k8s.io/v1`, `gateway.networking.k8s.io/v1`. */
    apiVersion: t.string,
    /** The plural resource, e.g. `ingresses`. */
    resource: t.string,
  }),
  t.partial({
    namespace: t.string,
    labelSelector: t.string,
    fieldSelector: t.string,
    /** JSONPath expressions (RFC 9535) whose values key the index used by `get(...)`. */
    indexBy: t.array(t.string),
    /** Dotted paths removed before an object is stored. */
    strip: t.array(t.string),
    /**
     * Holds the set on demand (in-cluster): only the objects that these sets point at
     * are kept, e.g. Secrets named by Ingress spec.tls. Each path's values are names in
     * the referencing object's namespace, or objects with `name` and `namespace`.
     */
    referencedBy: t.array(t.type({ set: t.string, path: t.string })),
  }),
]);
export type WatchedResource = t.TypeOf<typeof WatchedResource>;

export const TemplateSource = t.intersection([
  t.type({ 'haproxy.cfg': t.string }),
  t.partial({
    maps: t.record(t.string, t.string),
    files: t.record(t.string, t.string),
    certs: t.record(t.string, t.string),
    snippets: t.record(t.string, t.string),
  }),
]);

/** How haprx reaches each HAProxy pod's Data Plane API (in-cluster mode). */
export const DataplaneSettings = t.partial({
  /** The container running the Data Plane API: a pod counts once it is Ready. Without it, the pod's Ready condition counts. */
  container: t.string,
  port: t.number,
  scheme: t.keyof({ http: null, https: null }),
});

/** Which pods are the HAProxy instances, and which Service publishes them (in-cluster mode). */
export const HaproxySettings = t.partial({
  /** A label selector, applied by the API server. */
  podSelector: t.string,
  /** Where the pods and the Service are; the controller's namespace by default. */
  namespace: t.string,
  /** The Service whose address goes into Ingress status.loadBalancer; without it no status is written. */
  service: t.string,
  dataplane: DataplaneSettings,
});

/** An HTTP request to the canary instance that must answer as expected. */
export const CanaryProbe = t.intersection([
  t.type({
    /** The port haproxy serves on, at the instance's own address. */
    port: t.number,
  }),
  t.partial({
    path: t.string,
    /** The Host header; the instance's address when unset. */
    host: t.string,
    scheme: t.keyof({ http: null, https: null }),
    /** Statuses that pass; any 2xx or 3xx when unset. */
    expectStatus: t.array(t.number),
    timeout: Duration,
  }),
]);

/** Canary rollout: a configuration that reloads goes to one instance first, checked for `checkFor`. */
export const CanarySettingsCodec = t.intersection([t.type({ checkFor: Duration }), t.partial({ interval: Duration, probe: CanaryProbe })]);

export const Settings = t.partial({
  debounce: Duration,
  debounceMaxWait: Duration,
  confirmMaxWait: Duration,
  minDeployInterval: Duration,
  driftInterval: Duration,
  deployTimeout: Duration,
  /** A render still running after this is stopped; the last good configuration stays live. */
  renderTimeout: Duration,
  /** Instances deployed to at once; 0 means all. */
  maxParallel: t.number,
  haproxy: HaproxySettings,
  canary: CanarySettingsCodec,
});

export const ControllerConfigCodec = t.intersection([
  t.type({ watch: t.array(WatchedResource), templates: TemplateSource }),
  t.partial({ settings: Settings, values: t.record(t.string, t.unknown) }),
]);

export interface ControllerConfig {
  watch: WatchedResource[];
  templates: t.TypeOf<typeof TemplateSource>;
  values: Record<string, unknown>;
  settings: {
    debounceMs: number;
    debounceMaxWaitMs: number;
    /**
     * Renders that only confirm what the fast path already applied start at most once per
     * this interval, and may be cancelled by newer changes until they waited this long.
     * Optional so that graph settings built by hand need not carry it.
     */
    confirmMaxWaitMs?: number;
    minDeployIntervalMs: number;
    driftIntervalMs: number;
    deployTimeoutMs: number;
    /** Optional so that graph settings built by hand need not carry it; renders default to 10 s. */
    renderTimeoutMs?: number;
    maxParallel: number;
    /** Filled in by decodeControllerConfig; optional so that graph settings built by hand need not carry it. */
    haproxy?: HaproxyInstances;
    /** Canary rollout; off when absent. */
    canary?: CanarySettings;
  };
}

export interface CanaryProbeSettings {
  port: number;
  path: string;
  host?: string;
  scheme: 'http' | 'https';
  /** Empty: any 2xx or 3xx. */
  expectStatus: readonly number[];
  timeoutMs: number;
}

export interface CanarySettings {
  checkForMs: number;
  intervalMs: number;
  probe?: CanaryProbeSettings;
}

/** The defaults of a canary setting that is given (canary rollout itself is off unless set). */
export const DEFAULT_CANARY = { intervalMs: 5_000, probe: { path: '/', scheme: 'http', timeoutMs: 2_000 } } as const;

export interface HaproxyInstances {
  podSelector: string;
  namespace?: string;
  service?: string;
  dataplane: { container?: string; port: number; scheme: 'http' | 'https' };
}

export const DEFAULT_SETTINGS: ControllerConfig['settings'] = {
  debounceMs: 500,
  debounceMaxWaitMs: 2_000,
  confirmMaxWaitMs: 10_000,
  minDeployIntervalMs: 2_000,
  driftIntervalMs: 60_000,
  deployTimeoutMs: 30_000,
  renderTimeoutMs: 10_000,
  maxParallel: 0,
  haproxy: { podSelector: 'app.kubernetes.io/name=haproxy', dataplane: { port: 5555, scheme: 'http' } },
};

/** Decodes a controller configuration and fills in the defaults; every error names its field. */
export function decodeControllerConfig(input: unknown): DecodeResult<ControllerConfig> {
  const decoded = decodeWith(ControllerConfigCodec, input);
  if (!decoded.ok) return decoded;
  const { watch, templates, settings = {}, values = {} } = decoded.value;
  const errors = [];
  const names = new Set<string>();
  for (const [i, w] of watch.entries()) {
    if (names.has(w.name)) errors.push({ path: `watch[${i}].name`, message: `"${w.name}" is watched twice` });
    names.add(w.name);
  }
  const byName = new Map(watch.map((w) => [w.name, w]));
  for (const [i, w] of watch.entries()) {
    for (const [j, ref] of (w.referencedBy ?? []).entries()) {
      const target = byName.get(ref.set);
      if (!target || ref.set === w.name) errors.push({ path: `watch[${i}].referencedBy[${j}].set`, message: `"${ref.set}" is not another watched set` });
      // Its own sync would wait for the other's: no chains.
      else if (target.referencedBy?.length) errors.push({ path: `watch[${i}].referencedBy[${j}].set`, message: `"${ref.set}" is itself held on demand` });
      const compiled = compilePath(ref.path);
      if (!compiled.ok) errors.push({ path: `watch[${i}].referencedBy[${j}].path`, message: compiled.message });
    }
    // Every path and selector is compiled now, so that a typo is rejected here and never met on some object later.
    for (const [k, path] of (w.indexBy ?? []).entries()) {
      const compiled = compilePath(path);
      if (!compiled.ok) errors.push({ path: `watch[${i}].indexBy[${k}]`, message: compiled.message });
    }
    for (const [field, parse] of [['labelSelector', labelSelector], ['fieldSelector', fieldSelector]] as const) {
      const selector = parse(w[field]);
      if (!selector.ok) errors.push({ path: `watch[${i}].${field}`, message: selector.message });
    }
  }
  if (settings.renderTimeout !== undefined && settings.renderTimeout < 1) errors.push({ path: 'settings.renderTimeout', message: 'must be at least 1ms: every render has a time limit' });
  if (settings.maxParallel !== undefined && !(Number.isInteger(settings.maxParallel) && settings.maxParallel >= 0)) {
    errors.push({ path: 'settings.maxParallel', message: 'must be a whole number, 0 or more (0 means all)' });
  }
  const haproxy = settings.haproxy ?? {};
  if (haproxy.podSelector !== undefined) {
    const selector = labelSelector(haproxy.podSelector);
    if (!selector.ok) errors.push({ path: 'settings.haproxy.podSelector', message: selector.message });
    else if (!haproxy.podSelector.trim()) errors.push({ path: 'settings.haproxy.podSelector', message: 'must select something: an empty selector matches every pod' });
  }
  errors.push(...canaryErrors(settings.canary));
  const port = haproxy.dataplane?.port;
  if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535)) errors.push({ path: 'settings.haproxy.dataplane.port', message: 'must be a port number, 1 to 65535' });
  if (errors.length > 0) return { ok: false, errors };
  const defaults = DEFAULT_SETTINGS.haproxy!;
  return {
    ok: true,
    value: {
      watch: watch.map((w) => ({ ...w, strip: w.strip ?? DEFAULT_STRIP })),
      templates,
      values,
      settings: {
        debounceMs: settings.debounce ?? DEFAULT_SETTINGS.debounceMs,
        debounceMaxWaitMs: settings.debounceMaxWait ?? DEFAULT_SETTINGS.debounceMaxWaitMs,
        confirmMaxWaitMs: settings.confirmMaxWait ?? DEFAULT_SETTINGS.confirmMaxWaitMs!,
        minDeployIntervalMs: settings.minDeployInterval ?? DEFAULT_SETTINGS.minDeployIntervalMs,
        driftIntervalMs: settings.driftInterval ?? DEFAULT_SETTINGS.driftIntervalMs,
        deployTimeoutMs: settings.deployTimeout ?? DEFAULT_SETTINGS.deployTimeoutMs,
        renderTimeoutMs: settings.renderTimeout ?? DEFAULT_SETTINGS.renderTimeoutMs!,
        maxParallel: settings.maxParallel ?? DEFAULT_SETTINGS.maxParallel,
        ...(settings.canary && { canary: canarySettings(settings.canary) }),
        haproxy: {
          podSelector: haproxy.podSelector ?? defaults.podSelector,
          ...(haproxy.namespace !== undefined && { namespace: haproxy.namespace }),
          ...(haproxy.service !== undefined && { service: haproxy.service }),
          dataplane: {
            ...(haproxy.dataplane?.container !== undefined && { container: haproxy.dataplane.container }),
            port: port ?? defaults.dataplane.port,
            scheme: haproxy.dataplane?.scheme ?? defaults.dataplane.scheme,
          },
        },
      },
    },
  };
}

type CanaryInput = t.TypeOf<typeof CanarySettingsCodec>;

// A printable path, and a host name or address: they go into a request line and a header.
const PROBE_PATH = /^\/[\x21-\x7e]*$/;
const PROBE_HOST = /^[A-Za-z0-9.:[\]-]+$/;

function canaryErrors(canary: CanaryInput | undefined): { path: string; message: string }[] {
  if (!canary) return [];
  const errors: { path: string; message: string }[] = [];
  const at = (field: string, message: string) => errors.push({ path: `settings.canary.${field}`, message });
  if (canary.checkFor < 1) at('checkFor', 'must be at least 1ms: the canary is checked for that long');
  const interval = canary.interval ?? DEFAULT_CANARY.intervalMs;
  if (interval < 1) at('interval', 'must be at least 1ms');
  const probe = canary.probe;
  if (!probe) return errors;
  if (!(Number.isInteger(probe.port) && probe.port >= 1 && probe.port <= 65535)) at('probe.port', 'must be a port number, 1 to 65535');
  if (probe.path !== undefined && !PROBE_PATH.test(probe.path)) at('probe.path', `"${probe.path}" must start with / and hold only printable characters without spaces`);
  if (probe.host !== undefined && !PROBE_HOST.test(probe.host)) at('probe.host', `"${probe.host}" is not a host name or address`);
  for (const [i, status] of (probe.expectStatus ?? []).entries()) {
    if (!(Number.isInteger(status) && status >= 100 && status <= 599)) at(`probe.expectStatus[${i}]`, `${status} is not an HTTP status (100 to 599)`);
  }
  if (probe.timeout !== undefined && probe.timeout > interval) at('probe.timeout', `must be at most settings.canary.interval (${interval}ms): a round of checks that has not answered by the next has failed`);
  return errors;
}

function canarySettings(canary: CanaryInput): CanarySettings {
  const probe = canary.probe;
  const interval = canary.interval ?? DEFAULT_CANARY.intervalMs;
  return {
    checkForMs: canary.checkFor,
    intervalMs: interval,
    ...(probe && {
      probe: {
        port: probe.port,
        path: probe.path ?? DEFAULT_CANARY.probe.path,
        ...(probe.host !== undefined && { host: probe.host }),
        scheme: probe.scheme ?? DEFAULT_CANARY.probe.scheme,
        expectStatus: probe.expectStatus ?? [],
        timeoutMs: probe.timeout ?? Math.min(DEFAULT_CANARY.probe.timeoutMs, interval),
      },
    }),
  };
}
