/**
 * An HTTP client for one HAProxy Data Plane API v3 instance, on axios and
 * axios-retry: Basic auth, TLS with a private CA and a client certificate,
 * a timeout per request, retries with exponential backoff on network errors and
 * 5xx answers for idempotent calls only, `GET /v3/info` on first contact, and
 * error bodies parsed whatever their content type.
 *
 * Errors are DataplaneError values whose message names the call, the status
 * and the API's own message. Credentials never appear in them: messages are
 * built here from the method, the path and the parsed body, never from axios
 * errors (which carry the request configuration, headers included), and any
 * echo of the password is masked.
 */
import { readFile } from 'node:fs/promises';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import axios, { type AxiosError, type AxiosInstance, type AxiosResponse, isAxiosError } from 'axios';
import axiosRetry from 'axios-retry';

export interface DataplaneClientOptions {
  /** Where the API is reached, without the `/v3` base path, e.g. `https://10.0.0.7:5555`. */
  baseUrl: string;
  username: string;
  password: string;
  /** CA certificate(s) to trust for an https baseUrl: PEM text or a file path. */
  ca?: string;
  /** Client certificate for mTLS: PEM text or a file path. */
  cert?: string;
  /** Private key of the client certificate: PEM text or a file path. */
  key?: string;
  /** Per request (each retry gets its own); default 10 s. */
  timeoutMs?: number;
  /** Retries of an idempotent call after a network error or a 5xx; default 3. */
  retries?: number;
  /** First retry delay; each further one doubles, plus up to 20 % jitter. Default 200 ms. */
  retryDelayMs?: number;
  /** Told about each retry, for logs; carries no credentials. */
  onRetry?: (retry: { method: string; path: string; attempt: number; reason: string }) => void;
}

export type DataplaneErrorKind = 'http' | 'network' | 'timeout' | 'tls' | 'aborted' | 'protocol';

/** A failed call, with a message fit for logs and events. */
export class DataplaneError extends Error {
  readonly kind: DataplaneErrorKind;
  readonly method: string;
  readonly path: string;
  /** HTTP status, for kind 'http'. */
  readonly status: number | undefined;
  /** The API's own message (the `message` of its `{code, message}` body), when it sent one. */
  readonly apiMessage: string | undefined;
  /** The network error code (ECONNREFUSED, ERR_SSL_…), when there was no answer. */
  readonly code: string | undefined;

  constructor(fields: { kind: DataplaneErrorKind; method: string; path: string; message: string; status?: number; apiMessage?: string; code?: string }) {
    super(fields.message);
    this.name = 'DataplaneError';
    this.kind = fields.kind;
    this.method = fields.method;
    this.path = fields.path;
    this.status = fields.status;
    this.apiMessage = fields.apiMessage;
    this.code = fields.code;
  }
}

export interface ApiInfo {
  /** As the API reports it, e.g. `v3.2.4 8c7bce50`. */
  version: string;
  /** Parsed from `version`; 0.0.0 when it holds no version number. */
  major: number;
  minor: number;
  patch: number;
  buildDate?: string;
}

export interface DataplaneResponse {
  status: number;
  /** Lower-case header names. */
  headers: Readonly<Record<string, string>>;
  /** The body as text. */
  text: string;
  /** The `Configuration-Version` header, when present. */
  configurationVersion: number | undefined;
  /** The `Reload-ID` header (sent as `Reload-Id`), when present. */
  reloadId: string | undefined;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RequestOptions {
  query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** A string is sent as text/plain, FormData as multipart, anything else as JSON. */
  body?: unknown;
  headers?: Readonly<Record<string, string>>;
  signal?: AbortSignal;
  /** Set false to never retry this call, even when its method is idempotent. */
  retry?: boolean;
}

const IDEMPOTENT: ReadonlySet<string> = new Set(['get', 'head', 'options', 'put', 'delete']);
// Transport failures that a retry cannot fix: the TLS setup is wrong on one side.
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|EPROTO$|ERR_OSSL_)/;
// How a TLS 1.3 server's refusal of the client certificate usually reaches a client that already sent its request.
const RESET_CODE = /^(ECONNRESET|EPIPE)$/;

/** The API's message from an error body: JSON whatever the content type, possibly a JSON string of JSON. */
export function parseErrorBody(text: string): { code?: number; message?: string } {
  let value: unknown = text;
  for (let i = 0; i < 2 && typeof value === 'string'; i++) {
    try {
      value = JSON.parse(value);
    } catch {
      break;
    }
  }
  if (value !== null && typeof value === 'object') {
    const { code, message } = value as { code?: unknown; message?: unknown };
    return {
      ...(typeof code === 'number' ? { code } : {}),
      ...(typeof message === 'string' ? { message } : {}),
    };
  }
  const plain = (typeof value === 'string' ? value : text).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
  return plain === '' ? {} : { message: plain.length > 500 ? `${plain.slice(0, 500)}…` : plain };
}

export function parseApiVersion(version: string): Pick<ApiInfo, 'major' | 'minor' | 'patch'> {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(version);
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) } : { major: 0, minor: 0, patch: 0 };
}

/** Whether an API version is at least major.minor.patch. */
export function atLeast(info: Pick<ApiInfo, 'major' | 'minor' | 'patch'>, major: number, minor: number, patch = 0): boolean {
  if (info.major !== major) return info.major > major;
  if (info.minor !== minor) return info.minor > minor;
  return info.patch >= patch;
}

async function pem(value: string | undefined): Promise<string | undefined> {
  if (value === undefined || value === '') return undefined;
  return value.includes('-----BEGIN') ? value : readFile(value, 'utf8');
}

function headerMap(response: AxiosResponse): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers ?? {})) {
    if (value !== undefined && value !== null) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

export class DataplaneClient {
  /** Scheme, host and port only: safe to show. */
  readonly origin: string;
  private readonly options: DataplaneClientOptions;
  private readonly secrets: string[];
  private http: Promise<AxiosInstance> | undefined;
  private agents: (HttpAgent | HttpsAgent)[] = [];
  private tls: { ca?: string; cert?: string; key?: string } = {};
  private readonly refusals = new WeakMap<object, string>();
  private infoPromise: Promise<ApiInfo> | undefined;

  constructor(options: DataplaneClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new RangeError('the Data Plane API address is not a URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`the Data Plane API address must be http or https, not ${url.protocol}`);
    if (url.username || url.password) throw new RangeError('the Data Plane API address must not carry credentials: use username and password');
    this.origin = url.origin;
    this.options = options;
    const token = Buffer.from(`${options.username}:${options.password}`).toString('base64');
    this.secrets = [options.password, token].filter((s) => s.length >= 3);
  }

  /** `GET /v3/info`, once: the first call contacts the instance, later ones reuse the answer (a failure is retried next time). */
  info(signal?: AbortSignal): Promise<ApiInfo> {
    this.infoPromise ??= this.request('GET', '/info', { signal }).then((res) => {
      let body: { api?: { version?: unknown; build_date?: unknown } };
      try {
        body = JSON.parse(res.text) as typeof body;
      } catch {
        throw new DataplaneError({ kind: 'protocol', method: 'GET', path: '/info', message: `GET /v3/info: ${this.origin} answered something other than JSON: is it a Data Plane API v3?` });
      }
      const version = typeof body.api?.version === 'string' ? body.api.version : '';
      return { version, ...parseApiVersion(version), ...(typeof body.api?.build_date === 'string' ? { buildDate: body.api.build_date } : {}) };
    });
    const pending = this.infoPromise;
    pending.catch(() => {
      if (this.infoPromise === pending) this.infoPromise = undefined;
    });
    return pending;
  }

  /** Sends one call to `/v3<path>`; resolves on 2xx, rejects with a DataplaneError otherwise. */
  async request(method: HttpMethod, path: string, options: RequestOptions = {}): Promise<DataplaneResponse> {
    const http = await this.instance();
    const { body } = options;
    const headers: Record<string, string> = { ...options.headers };
    if (typeof body === 'string') headers['content-type'] = 'text/plain';
    else if (body !== undefined && !(body instanceof FormData)) headers['content-type'] = 'application/json';
    const params = Object.fromEntries(Object.entries(options.query ?? {}).filter(([, v]) => v !== undefined));
    try {
      const response = await http.request<string>({
        method,
        url: `/v3${path}`,
        params,
        data: typeof body === 'string' || body instanceof FormData || body === undefined ? body : JSON.stringify(body),
        headers,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.retry === false ? { 'axios-retry': { retries: 0 } } : {}),
      });
      return this.toResponse(response);
    } catch (err) {
      if (isAxiosError(err)) await this.diagnoseReset(err);
      throw this.toError(method, path, err, options.signal);
    }
  }

  /**
   * In TLS 1.3 a server checks the client certificate after the handshake, so a
   * refusal often shows as a reset of a connection that looked fine. After such a
   * reset, a bare TLS connection tells the two apart: an accepted client gets a
   * session ticket, a refused one an alert or a closed connection.
   */
  private async diagnoseReset(err: AxiosError): Promise<string | undefined> {
    if (this.refusals.has(err)) return this.refusals.get(err);
    if (err.response || !RESET_CODE.test(err.code ?? '') || !this.origin.startsWith('https:')) return undefined;
    const url = new URL(this.origin);
    const verdict = await new Promise<string | undefined>((resolve) => {
      let handshaken = false;
      const socket = tlsConnect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 443), servername: isIP(url.hostname.replace(/^\[|\]$/g, '')) ? undefined : url.hostname, ...this.tls });
      const done = (value: string | undefined) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(value);
      };
      const timer = setTimeout(() => done(undefined), Math.min(this.options.timeoutMs ?? 10_000, 2_000));
      socket.once('secureConnect', () => (handshaken = true));
      socket.once('session', () => done(undefined));
      socket.once('error', (e: NodeJS.ErrnoException) => done(TLS_CODE.test(e.code ?? '') ? `the instance refused the TLS connection (${e.code})` : undefined));
      socket.once('close', () => done(handshaken ? 'the instance closed the connection right after the TLS handshake: it did not accept the client certificate' : undefined));
    });
    if (verdict !== undefined) this.refusals.set(err, verdict);
    return verdict;
  }

  /** Closes kept-alive connections. */
  close(): void {
    for (const agent of this.agents) agent.destroy();
    this.agents = [];
    this.http = undefined;
  }

  /** Masks any echo of the credentials in a text meant for logs. */
  redact(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = out.split(secret).join('***');
    return out;
  }

  private instance(): Promise<AxiosInstance> {
    this.http ??= this.create();
    const pending = this.http;
    pending.catch(() => {
      if (this.http === pending) this.http = undefined;
    });
    return pending;
  }

  private async create(): Promise<AxiosInstance> {
    const o = this.options;
    let tls: { ca?: string; cert?: string; key?: string };
    try {
      const [ca, cert, key] = await Promise.all([pem(o.ca), pem(o.cert), pem(o.key)]);
      tls = { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
    } catch (err) {
      throw new DataplaneError({ kind: 'tls', method: 'GET', path: '/info', message: `cannot read the TLS files for ${this.origin}: ${(err as Error).message}` });
    }
    if (Boolean(tls.cert) !== Boolean(tls.key)) {
      throw new DataplaneError({ kind: 'tls', method: 'GET', path: '/info', message: `a client certificate needs its key and a key its certificate (${this.origin})` });
    }
    const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 8 });
    const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 8, rejectUnauthorized: true, ...tls });
    this.agents = [httpAgent, httpsAgent];
    this.tls = tls;
    const http = axios.create({
      baseURL: this.origin,
      auth: { username: o.username, password: o.password },
      timeout: o.timeoutMs ?? 10_000,
      httpAgent,
      httpsAgent,
      // Environment proxies must not see the instance's credentials, and redirects must not carry them elsewhere.
      proxy: false,
      maxRedirects: 0,
      responseType: 'text',
      transformResponse: [(data: unknown) => data],
      decompress: true,
    });
    const base = o.retryDelayMs ?? 200;
    axiosRetry(http, {
      retries: o.retries ?? 3,
      shouldResetTimeout: true,
      retryCondition: async (error) => this.retryable(error) && (await this.diagnoseReset(error)) === undefined,
      retryDelay: (attempt) => base * 2 ** (attempt - 1) * (1 + 0.2 * Math.random()),
      onRetry: (attempt, error, config) => {
        o.onRetry?.({
          method: (config.method ?? 'get').toUpperCase(),
          path: String(config.url ?? ''),
          attempt,
          reason: error.response ? `HTTP ${error.response.status}` : (error.code ?? 'network error'),
        });
      },
    });
    return http;
  }

  /** Network errors and 5xx answers of idempotent calls; never timeouts, cancellations or TLS refusals. */
  private retryable(error: AxiosError): boolean {
    const method = (error.config?.method ?? '').toLowerCase();
    if (!IDEMPOTENT.has(method)) return false;
    if (error.response) return error.response.status >= 500 && error.response.status <= 599;
    const code = error.code ?? '';
    if (code === 'ECONNABORTED' || code === 'ETIMEDOUT' || code === 'ERR_CANCELED' || TLS_CODE.test(code)) return false;
    return code !== '';
  }

  private toResponse(response: AxiosResponse<string>): DataplaneResponse {
    const headers = headerMap(response);
    const version = Number(headers['configuration-version']);
    return {
      status: response.status,
      headers,
      text: typeof response.data === 'string' ? response.data : '',
      configurationVersion: headers['configuration-version'] !== undefined && Number.isInteger(version) ? version : undefined,
      reloadId: headers['reload-id'] || undefined,
    };
  }

  private toError(method: string, path: string, err: unknown, signal: AbortSignal | undefined): DataplaneError {
    const call = `${method} /v3${path}`;
    if (err instanceof DataplaneError) return err;
    if (!isAxiosError(err)) {
      return new DataplaneError({ kind: 'protocol', method, path, message: this.redact(`${call}: ${(err as Error)?.message ?? String(err)}`) });
    }
    if (err.response) {
      const status = err.response.status;
      const text = typeof err.response.data === 'string' ? err.response.data : '';
      const parsed = parseErrorBody(text);
      const apiMessage = parsed.message === undefined ? undefined : this.redact(parsed.message);
      const hint = status === 401 ? ' (check the Data Plane API username and password)' : '';
      const statusText = err.response.statusText ? ` ${err.response.statusText}` : '';
      return new DataplaneError({
        kind: 'http',
        method,
        path,
        status,
        ...(apiMessage !== undefined ? { apiMessage } : {}),
        message: `${call}: ${status}${statusText}${apiMessage ? `: ${apiMessage}` : ''}${hint}`,
      });
    }
    const code = err.code ?? '';
    const detail = this.redact(err.message);
    const refusal = this.refusals.get(err);
    if (refusal !== undefined) return new DataplaneError({ kind: 'tls', method, path, code, message: `${call}: TLS with ${this.origin} failed: ${refusal}` });
    if (code === 'ERR_CANCELED' || signal?.aborted) return new DataplaneError({ kind: 'aborted', method, path, code, message: `${call}: aborted` });
    if (code === 'ECONNABORTED' || code === 'ETIMEDOUT') {
      return new DataplaneError({ kind: 'timeout', method, path, code, message: `${call}: no answer from ${this.origin} within ${this.options.timeoutMs ?? 10_000} ms` });
    }
    if (TLS_CODE.test(code) || /certificate|ssl|tls/i.test(detail)) {
      return new DataplaneError({ kind: 'tls', method, path, code, message: `${call}: TLS with ${this.origin} failed${code ? ` (${code})` : ''}: ${detail}` });
    }
    if (code === 'ECONNREFUSED') return new DataplaneError({ kind: 'network', method, path, code, message: `${call}: ${this.origin} refused the connection (ECONNREFUSED)` });
    return new DataplaneError({ kind: 'network', method, path, code, message: `${call}: no answer from ${this.origin}${code ? ` (${code})` : ''}: ${detail}` });
  }
}
