/**
 * A rig for the tests of which changes reload haproxy: the shipped templates are
 * rendered from a folder of manifests and deployed through the Data Plane API double
 * to its real haproxy, whose master counts the reloads (`show proc`); an echo
 * backend per Service says who answered.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderOnce } from '../../src/cli/render-once.ts';
import { DataplaneTarget } from '../../src/dataplane/target.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { freePort } from '../support/ports.ts';
import { send, serviceManifest, startEchoBackend } from '../templates/support.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const AUTH = { username: 'admin', password: 'adminpwd' };

export interface Deployed {
  /** Reloads the deployment took, counted by haproxy's master. */
  reloads: number;
  mode: string | undefined;
  reasons: string[];
}

export class ReloadsRig<S extends string> {
  private dir = '';
  /** haproxy's HTTP port on 127.0.0.1. */
  port = 0;
  private readonly echo = {} as Record<S, Awaited<ReturnType<typeof startEchoBackend>>>;
  double: DataplaneDouble | undefined;
  private target: DataplaneTarget | undefined;

  private readonly render: { ingressNginx?: boolean };

  private constructor(render: { ingressNginx?: boolean }) {
    this.render = render;
  }

  /**
   * Starts an echo backend for each Service, the double and its target; `name`
   * names the folder. What started is stopped again if the rest fails to.
   */
  static async start<S extends string>(name: string, services: readonly S[], render: { ingressNginx?: boolean } = {}): Promise<ReloadsRig<S>> {
    const rig = new ReloadsRig<S>(render);
    try {
      rig.dir = await mkdtemp(join(tmpdir(), `haprx-${name}-`));
      rig.port = await freePort();
      for (const service of services) rig.echo[service] = await startEchoBackend(service);
      rig.double = await startDataplaneDouble({ ...AUTH, reloadDelayMs: 50 });
      rig.target = new DataplaneTarget({ ...AUTH, baseUrl: rig.double.url, reloadPollMs: 20 });
      return rig;
    } catch (err) {
      await rig.close();
      throw err;
    }
  }

  /** The Service and EndpointSlice manifests of every echo backend, in namespace shop. */
  services(): string[] {
    return this.echoes().map((e) => serviceManifest(e.name, e.port));
  }

  /** Renders these manifests, deploys them, and says how many reloads that took. */
  async deploy(manifests: string): Promise<Deployed> {
    const double = this.double!;
    await writeFile(join(this.dir, 'manifests.yaml'), manifests);
    const rendered = await renderOnce(this.dir, join(ROOT, 'templates'), { bindAddress: '127.0.0.1', httpPort: this.port, ...this.render });
    assert.ok(rendered.ok, rendered.ok ? '' : rendered.message);
    const before = (await double.reloadCounts()).reloads;
    const outcome = await this.target!.deploy(rendered.config);
    assert.ok(outcome.ok, outcome.error);
    await double.reloadsSettled();
    return { reloads: (await double.reloadCounts()).reloads - before, mode: outcome.detail?.mode, reasons: outcome.detail?.reasons ?? [] };
  }

  /** Which echo backend answered a request, or its status when none did. */
  async who(host: string, path: string, headers?: Record<string, string>): Promise<string> {
    const reply = await send(this.port, { host, path, headers });
    return reply.echo?.name ?? `status ${reply.status}`;
  }

  async close(): Promise<void> {
    await this.target?.close();
    await this.double?.stop();
    await Promise.all(this.echoes().map((e) => e.close()));
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  private echoes(): Awaited<ReturnType<typeof startEchoBackend>>[] {
    return Object.values(this.echo);
  }
}
