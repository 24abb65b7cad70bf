import { readFileSync } from 'node:fs';
import { HttpMethod, IsomorphicFetchHttpLibrary, KubeConfig, RequestContext, Watch } from '@kubernetes/client-node';

/** Where a resource, a collection or a subresource lives in the API. */
export interface ResourceRef {
  /** e.g. `v1`, `networking.k8s.io/v1`, or a CRD's `example.com/v1alpha1`. */
  apiVersion: string;
  /** The plural, e.g. `ingresses`. */
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: 'status';
}

/** An API answer. Failures are values: an HTTP status (0 when no answer came) and the Status message. */
export type ApiResult<T = unknown> = { ok: true; status: number; body: T } | { ok: false; status: number; reason: string; message: string };

/** `/api/v1/namespaces/ns/configmaps/name`, `/apis/networking.k8s.io/v1/ingresses`, … */
export function resourcePath(ref: ResourceRef): string {
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  const ns = ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
  const name = ref.name !== undefined ? `/${encodeURIComponent(ref.name)}` : '';
  const sub = ref.name !== undefined && ref.subresource ? `/${ref.subresource}` : '';
  return `${base}${ns}/${ref.resource}${name}${sub}`;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadedKubeConfig {
  config: KubeConfig;
  /** For the startup log: `in-cluster`, or which kubeconfig. */
  source: string;
  /** The namespace of the service account (in-cluster) or of the current context. */
  namespace?: string;
}

/**
 * The client configuration: the file given with --kubeconfig, else KUBECONFIG, else
 * the pod's service account when running in a cluster, else ~/.kube/config.
 */
export function loadKubeConfig(options: { kubeconfig?: string; env?: NodeJS.ProcessEnv; serviceAccountRoot?: string } = {}): LoadedKubeConfig {
  const env = options.env ?? process.env;
  // Where the service account files are mounted, below this prefix (tests set it).
  const root = options.serviceAccountRoot ?? '';
  const config = new KubeConfig();
  if (options.kubeconfig) {
    config.loadFromFile(options.kubeconfig);
    return { config, source: `kubeconfig ${options.kubeconfig}`, ...contextNamespace(config) };
  }
  if (!env.KUBECONFIG && env.KUBERNETES_SERVICE_HOST) {
    // client-node reads the host and port from process.env itself.
    config.loadFromCluster(root);
    let namespace: string | undefined;
    try {
      namespace = readFileSync(`${root}${SERVICE_ACCOUNT_DIR}/namespace`, 'utf8').trim() || undefined;
    } catch {
      namespace = undefined;
    }
    return { config, source: 'in-cluster', ...(namespace !== undefined && { namespace }) };
  }
  config.loadFromDefault();
  return { config, source: env.KUBECONFIG ? `kubeconfig ${env.KUBECONFIG}` : 'kubeconfig ~/.kube/config', ...contextNamespace(config) };
}

function contextNamespace(config: KubeConfig): { namespace?: string } {
  const namespace = config.getContextObject(config.getCurrentContext())?.namespace;
  return namespace ? { namespace } : {};
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Defaults to application/json; merge patches need application/merge-patch+json. */
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export type WatchDone = (err: unknown) => void;
export type WatchEventHandler = (type: string, object: unknown) => void;

/**
 * The Kubernetes API as haprx uses it, on top of @kubernetes/client-node: its
 * KubeConfig (in-cluster token files, client certificates, exec plugins), its
 * authentication of every request, its HTTP library, and its Watch for streams.
 * Nothing here throws for an HTTP or network failure: it is an `ApiResult`.
 */
export class KubeApi {
  readonly config: KubeConfig;
  private readonly http = new IsomorphicFetchHttpLibrary();
  private readonly timeoutMs: number;

  constructor(config: KubeConfig, options: { requestTimeoutMs?: number } = {}) {
    this.config = config;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  async request<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', target: ResourceRef | string, options: RequestOptions = {}): Promise<ApiResult<T>> {
    const cluster = this.config.getCurrentCluster();
    if (!cluster) return { ok: false, status: 0, reason: 'NoCluster', message: 'the client configuration has no current cluster' };
    const url = new URL(cluster.server.replace(/\/+$/, '') + (typeof target === 'string' ? target : resourcePath(target)));
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const context = new RequestContext(url.toString(), HttpMethod[method]);
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    try {
      await this.config.applySecurityAuthentication(context);
      context.setHeaderParam('Accept', 'application/json');
      if (options.body !== undefined) {
        context.setHeaderParam('Content-Type', options.contentType ?? 'application/json');
        context.setBody(JSON.stringify(options.body));
      }
      context.setSignal(options.signal ? AbortSignal.any([options.signal, timeout]) : timeout);
      const response = await this.http.send(context).toPromise();
      const text = await response.body.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // Not JSON: keep the text for the message.
      }
      if (response.httpStatusCode >= 200 && response.httpStatusCode < 300) return { ok: true, status: response.httpStatusCode, body: body as T };
      const statusBody = (body ?? {}) as { reason?: string; message?: string };
      return {
        ok: false,
        status: response.httpStatusCode,
        reason: statusBody.reason ?? `HTTP${response.httpStatusCode}`,
        message: statusBody.message ?? (typeof body === 'string' && body ? body.slice(0, 200) : `HTTP ${response.httpStatusCode}`),
      };
    } catch (err) {
      const aborted = timeout.aborted ? `no answer within ${options.timeoutMs ?? this.timeoutMs} ms` : options.signal?.aborted ? 'aborted' : undefined;
      return { ok: false, status: 0, reason: aborted ? 'Timeout' : 'NetworkError', message: aborted ?? describeError(err) };
    }
  }

  /**
   * Opens a watch stream with the client's Watch. The client aborts a stream on
   * which no data arrives for `inactivityMs` (its default is 30 s, shorter than the
   * minute a real API server leaves between bookmarks on an idle watch); `done` then
   * gets a TimeoutError.
   */
  watch(path: string, query: Record<string, string | number | boolean>, onEvent: WatchEventHandler, done: WatchDone, inactivityMs?: number): Promise<AbortController> {
    const watch = new Watch(this.config);
    // The client keeps the timeout in a field its types call private; set it where it exists.
    if (inactivityMs !== undefined && 'requestTimeoutMs' in watch) (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = inactivityMs;
    return watch.watch(path, query, (type: string, object: unknown) => onEvent(type, object), done);
  }
}

/** A network error's message, with its cause (undici puts the useful part there). */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as Error & { cause?: unknown }).cause;
  const causeText = cause instanceof Error ? cause.message : cause !== undefined ? String(cause) : '';
  return causeText && !err.message.includes(causeText) ? `${err.message}: ${causeText}` : err.message;
}
