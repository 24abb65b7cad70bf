import type { Subscription } from 'rxjs';
import type { KubeApi } from '../k8s/api.ts';
import type { ListWatchOptions } from '../k8s/list-watch.ts';
import type { Admission } from './admission.ts';
import { type ServingCertificate, certificateSource } from './certificate.ts';
import { type WebhookServer, type WebhookServerOptions, startWebhookServer } from './server.ts';

export interface WebhookOptions {
  api: KubeApi;
  /** Where the serving certificate's Secret is (the controller's namespace). */
  namespace: string;
  secret: string;
  host: string;
  port: number;
  admission: Admission;
  listWatch?: ListWatchOptions;
  onNotice(level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void;
}

export interface RunningWebhook {
  /** The bound port once a certificate was loaded. */
  readonly port: number | undefined;
  close(): Promise<void>;
}

/**
 * The admission webhook of `haprx run`: it starts serving once the certificate
 * Secret holds a valid certificate and key, takes each renewal without a restart,
 * and keeps the last good certificate when the Secret goes wrong. Until it serves,
 * the API server cannot reach it and, with failurePolicy Ignore, admits everything.
 */
export function startWebhook(options: WebhookOptions): RunningWebhook {
  const { onNotice } = options;
  let server: WebhookServer | undefined;
  let starting: Promise<void> | undefined;
  let closed = false;
  let latest: string | undefined;
  let current: ServingCertificate | undefined;
  const serverOptions: WebhookServerOptions = {
    host: options.host,
    port: options.port,
    review: (request) => options.admission.review(request),
    onReviewed: (o) =>
      onNotice(o.allowed ? 'debug' : 'info', `admission ${o.operation} ${o.resource}: ${o.allowed ? 'allowed' : `refused: ${o.message ?? ''}`} (${o.durationMs} ms)`, {
        uid: o.uid,
        allowed: o.allowed,
        durationMs: o.durationMs,
      }),
    onError: (message) => onNotice('error', message),
  };
  const subscription: Subscription = certificateSource(options.api, options.namespace, options.secret, options.listWatch).subscribe((result) => {
    if (!result.ok) return onNotice('warn', `admission webhook certificate: ${result.message}${server ? '; the last good one stays in use' : '; the webhook does not serve until it is fixed'}`);
    const { certificate } = result;
    latest = certificate.version;
    current = certificate;
    if (server) {
      server.setCertificate(certificate);
      return onNotice('info', `admission webhook certificate renewed (version ${certificate.version}, valid until ${certificate.notAfter})`);
    }
    if (starting) return;
    let pending = certificate;
    starting = startWebhookServer(serverOptions, certificate).then(
      async (started) => {
        if (closed) return started.close();
        server = started;
        // A renewal that came while the server was starting.
        if (latest !== pending.version && current) started.setCertificate((pending = current));
        onNotice('info', `admission webhook on https://${options.host}:${started.port}/validate (certificate version ${certificate.version}, valid until ${certificate.notAfter})`, { port: started.port });
      },
      (err: unknown) => onNotice('error', `admission webhook cannot listen on ${options.host}:${options.port}: ${(err as Error).message}`),
    );
  });
  return {
    get port() {
      return server?.port;
    },
    async close() {
      closed = true;
      subscription.unsubscribe();
      await starting;
      await server?.close();
    },
  };
}

export { Admission, type AdmissionBasis } from './admission.ts';
