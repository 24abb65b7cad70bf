/**
 * One round of checks of a canary instance through its Data Plane API, and an HTTP probe
 * of the haproxy it runs:
 * - `GET /v3/health`: haproxy must be `up`;
 * - `GET /v3/services/haproxy/reloads`: no reload may fail while the canary is checked
 *   (the agent's record of the master's `show proc`; a failed reload leaves the previous
 *   worker running, so traffic alone would not show it);
 * - the probe of the settings: a GET to the instance's own address on the probe's port,
 *   which must answer one of the expected statuses in time.
 * Each problem is named; a round never throws.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { CanaryProbeSettings } from '../config/controller-config.ts';
import { errorMessage } from '../errors.ts';
import type { CanaryCheck } from '../events.ts';
import type { DataplaneClient } from './client.ts';

interface ReloadRecord {
  id?: unknown;
  status?: unknown;
  response?: unknown;
}

/**
 * The checks of one instance across the rounds of a canary. Reloads that had failed by
 * the first round of a canary (`since` names it) are its baseline: a failure of the
 * canary's own deployment was reported by the deployment, so what counts is a reload
 * that fails later (a pending reload, a process that dies and is reloaded).
 */
export class CanaryChecker {
  private readonly client: Pick<DataplaneClient, 'request'>;
  private readonly address: string;
  private baseline: { since: number; failed: ReadonlySet<string> } | undefined;

  constructor(client: Pick<DataplaneClient, 'request'>, address: string) {
    this.client = client;
    this.address = address;
  }

  async check(since: number, probe: CanaryProbeSettings | undefined, signal?: AbortSignal): Promise<CanaryCheck> {
    const problems = (
      await Promise.all([health(this.client, signal), this.failedReloads(since, signal), probe ? probeOnce(this.address, probe, signal) : Promise.resolve(undefined)])
    ).filter((p): p is string => p !== undefined);
    return problems.length === 0 ? { ok: true } : { ok: false, problems };
  }

  private async failedReloads(since: number, signal?: AbortSignal): Promise<string | undefined> {
    let records: unknown;
    try {
      const res = await this.client.request('GET', '/services/haproxy/reloads', { signal, retry: false });
      records = JSON.parse(res.text) as unknown;
    } catch (err) {
      return `reloads: ${errorMessage(err)}`;
    }
    if (!Array.isArray(records)) return 'reloads: the Data Plane API answered something other than a list';
    const failed = (records as ReloadRecord[]).filter((r) => r.status === 'failed' && typeof r.id === 'string');
    if (this.baseline?.since !== since) {
      this.baseline = { since, failed: new Set(failed.map((r) => r.id as string)) };
      return undefined;
    }
    const known = this.baseline.failed;
    const fresh = failed.filter((r) => !known.has(r.id as string));
    if (fresh.length === 0) return undefined;
    const first = fresh[0]!;
    const why = typeof first.response === 'string' && first.response.trim() ? `: ${first.response.trim().split('\n', 1)[0]}` : '';
    return `${fresh.length} reload(s) failed while the canary was checked, e.g. ${String(first.id)}${why}`;
  }
}

async function health(client: Pick<DataplaneClient, 'request'>, signal?: AbortSignal): Promise<string | undefined> {
  try {
    const res = await client.request('GET', '/health', { signal, retry: false });
    const body = JSON.parse(res.text) as { haproxy?: unknown };
    return body.haproxy === 'up' ? undefined : `Data Plane health: haproxy is ${typeof body.haproxy === 'string' ? body.haproxy : 'not reported'}`;
  } catch (err) {
    return `Data Plane health: ${errorMessage(err)}`;
  }
}

/** The probe's URL at the instance's own address (the host of its Data Plane address). */
export function probeUrl(address: string, probe: CanaryProbeSettings): URL {
  const url = new URL(`${probe.scheme}://placeholder:${probe.port}${probe.path}`);
  url.hostname = new URL(address).hostname;
  return url;
}

function probeOnce(address: string, probe: CanaryProbeSettings, signal?: AbortSignal): Promise<string | undefined> {
  let url: URL;
  try {
    url = probeUrl(address, probe);
  } catch (err) {
    return Promise.resolve(`probe: no URL from ${address}: ${errorMessage(err)}`);
  }
  const what = `probe GET ${url.href}${probe.host ? ` (Host ${probe.host})` : ''}`;
  return new Promise((resolve) => {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // A liveness probe of one instance, not a trust decision: the certificate is not verified.
    const req = request(
      url,
      {
        method: 'GET',
        headers: { ...(probe.host && { host: probe.host }), connection: 'close' },
        timeout: probe.timeoutMs,
        ...(signal && { signal }),
        ...(url.protocol === 'https:' && { rejectUnauthorized: false, ...(probe.host && { servername: probe.host }) }),
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        const expected = probe.expectStatus.length > 0 ? probe.expectStatus.includes(status) : status >= 200 && status < 400;
        resolve(expected ? undefined : `${what}: ${status}${probe.expectStatus.length > 0 ? `, expected ${probe.expectStatus.join(' or ')}` : ''}`);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${probe.timeoutMs} ms`)));
    req.on('error', (err) => resolve(`${what}: ${err.message}`));
    req.end();
  });
}
