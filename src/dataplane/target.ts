/**
 * One HAProxy instance behind a Data Plane API v3, as a deployment target.
 *
 * Each deployment is planned against the configuration the instance runs (as
 * far as haprx knows: what it deployed last, checked against the instance's
 * configuration version) and applied runtime first:
 * - runtime plans: server and map changes through the runtime endpoints, changed
 *   map files through storage (no reload), then the whole configuration posted
 *   with skip_reload=true, so that a later reload keeps the same state;
 * - structural plans: auxiliary files through storage first, then the
 *   configuration posted with its version, then a bounded wait for the reload
 *   by its Reload-ID, then removal of stored files nothing references any more.
 * The configuration is posted with its auxiliary references rewritten to the
 * instance's storage paths (aux-refs.ts), and ends with a marker comment that
 * names the render's hash and the version the post creates.
 *
 * A version conflict (409) refetches the version and retries, a bounded number
 * of times. A configuration version other than the one this target left is read
 * through the marker: a marker at the current version means another replica of
 * haprx wrote it (the leader while this one followed), which is adopted when it is
 * the render wanted (no reload) and otherwise replaced, without crying drift. No
 * marker, or a marker at an older version, means someone else changed the
 * instance: the deployment overwrites the change with a full post and a reload,
 * and says so in `detail.drift`.
 */
import type { CanaryProbeSettings } from '../config/controller-config.ts';
import type { CanaryCheck, InstanceOutcome } from '../events.ts';
import { type ReferencingFile, changedReferencingMap, referencingFiles, rewriteFileRefs } from '../haproxy/aux-file-refs.ts';
import { auxRefSteps, rewriteAuxRefs } from '../haproxy/aux-refs.ts';
import type { Plan, RuntimeOp } from '../haproxy/plan.ts';
import { readdOps } from '../haproxy/server-readd.ts';
import { type RenderedConfig, auxPath } from '../templating/rendered.ts';
import { runInTurns } from '../turns.ts';
import { CanaryChecker } from './canary-check.ts';
import { FLEET_PLANS } from './plan-cache.ts';
import { DataplaneClient, type DataplaneClientOptions, DataplaneError, type ApiInfo, atLeast } from './client.ts';
import { type ApiCall, translateOps } from './runtime-ops.ts';
import { type Placement, SAFE_DIR, STORAGE_KINDS, type StorageKind, joinPath, placeFiles, placementKey } from './storage.ts';

/** One instance's connection settings (as for the client), plus how deployments go. */
export interface DataplaneTargetOptions extends Omit<DataplaneClientOptions, 'onRetry'> {
  /** How long to wait for a reload to succeed or fail; default 30 s. */
  reloadTimeoutMs?: number;
  /** How often to ask about a pending reload; default 100 ms. */
  reloadPollMs?: number;
  /** Attempts after a 409 version conflict; default 3. */
  conflictRetries?: number;
  /** Prefix of every file haprx stores; it removes only files with it. Default `haprx-`. */
  storagePrefix?: string;
  /** Storage directories, used only where the API has not told (it does in every listing and upload). */
  storageDirs?: Partial<Record<StorageKind, string>>;
  /** Retry interval of a server deletion refused while connections remain; default 1 s. */
  deleteRetryMs?: number;
  /** Told about each step, for logs; never carries credentials or file contents. */
  onStep?: (step: { kind: DataplaneStepKind; detail: string }) => void;
}

export type DataplaneStepKind = 'contact' | 'runtime' | 'upload' | 'post' | 'reload' | 'cleanup' | 'fallback' | 'drift' | 'retry';

export interface DataplaneDeployDetail {
  /** What the deployment did: nothing, runtime changes only, or a reload. */
  mode: 'none' | 'runtime' | 'reload';
  /** Why it reloaded. */
  reasons?: string[];
  ops: { servers: number; maps: number; uploaded: number; deleted: number };
  /** The instance's configuration version afterwards, when known. */
  version?: number;
  reloadId?: string;
  /** 409 conflicts met (and retried). */
  conflicts: number;
  /** Set when someone else had changed the instance; the deployment overwrote it. */
  drift?: string;
  durationMs: number;
  apiVersion?: string;
  /** Servers whose deletion waits for their connections to close (in maintenance meanwhile). */
  pendingDeletes?: string[];
}

export type DataplaneOutcome = InstanceOutcome & { detail?: DataplaneDeployDetail };

const DEFAULT_DIRS: Record<StorageKind, string> = { maps: '/etc/haproxy/maps', general: '/etc/haproxy/general', ssl_certificates: '/etc/haproxy/ssl' };
const MARKER = /^# haprx-config sha256=([0-9a-f]{64}) version=(\d+)\s*$/m;
const STILL_CONNECTED = /still has connections/i;
const DELETE_ATTEMPTS = 120;

interface PlacedFile extends Placement {
  path: string;
  /** For a file that names other files: the content as uploaded, its references rewritten. */
  sent?: string;
}

interface Deployed {
  config: RenderedConfig;
  /** The configuration version the last write of haprx left. */
  version: number;
  placements: Map<string, PlacedFile>;
}

interface Listing {
  files: Map<StorageKind, Map<string, string>>;
  dirs: Partial<Record<StorageKind, string>>;
}

class Aborted extends Error {}


function dirOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/')) || '/';
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function endLine(main: string): string {
  return main.endsWith('\n') || main === '' ? main : `${main}\n`;
}

/** One Data Plane API instance as a deployment target. Deployments to it never overlap. */
export class DataplaneTarget {
  readonly client: DataplaneClient;
  private readonly options: DataplaneTargetOptions;
  private readonly prefix: string;
  private state: Deployed | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Servers whose deletion waits for their connections; wanted again meanwhile, they are taken back (server-readd.ts). */
  private readonly pendingDeletes = new Map<string, { backend: string; server: string; attempts: number; settings: string[] | undefined }>();
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private checker: CanaryChecker | undefined;

  constructor(options: DataplaneTargetOptions) {
    this.options = options;
    this.prefix = options.storagePrefix ?? 'haprx-';
    if (!/^[A-Za-z0-9_-]*$/.test(this.prefix)) throw new RangeError('storagePrefix may only hold letters, digits, _ and -');
    for (const [kind, dir] of Object.entries(options.storageDirs ?? {})) {
      if (dir !== undefined && !SAFE_DIR.test(dir)) throw new RangeError(`storageDirs.${kind} must be an absolute path of letters, digits and ._/@+-`);
    }
    this.client = new DataplaneClient({
      baseUrl: options.baseUrl,
      username: options.username,
      password: options.password,
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.cert !== undefined ? { cert: options.cert } : {}),
      ...(options.key !== undefined ? { key: options.key } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.retries !== undefined ? { retries: options.retries } : {}),
      ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}),
      onRetry: (r) => this.step('retry', `${r.method} ${r.path} attempt ${r.attempt} after ${r.reason}`),
    });
  }

  /** Where the API is reached (scheme, host, port), for display. */
  get origin(): string {
    return this.client.origin;
  }

  /** The configuration haprx last deployed to the instance and still vouches for; unknown before the first deployment. */
  get running(): RenderedConfig | undefined {
    return this.state?.config;
  }

  /** One round of canary checks of the instance (src/dataplane/canary-check.ts). */
  check(since: number, probe: CanaryProbeSettings | undefined, signal?: AbortSignal): Promise<CanaryCheck> {
    this.checker ??= new CanaryChecker(this.client, this.options.baseUrl);
    return this.checker.check(since, probe, signal);
  }

  /** Servers whose deletion waits for their connections to close. */
  get deletionsPending(): readonly string[] {
    return [...this.pendingDeletes.keys()];
  }

  /**
   * Deploys a configuration. With `fast` (the fast path's runtime operations from the
   * configuration hashed `from`), it goes through the runtime API or not at all: never
   * by a reload, which the full deployment that follows is there for.
   */
  deploy(config: RenderedConfig, signal?: AbortSignal, fast?: { from: string; ops: readonly RuntimeOp[] }): Promise<DataplaneOutcome> {
    const started = Date.now();
    const run = this.queue.then(() => this.apply(config, signal, started, fast));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Stops the deletion retries and closes connections; deployments already queued still finish. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.queue;
    this.client.close();
  }

  private async apply(config: RenderedConfig, signal: AbortSignal | undefined, started: number, fast?: { from: string; ops: readonly RuntimeOp[] }): Promise<DataplaneOutcome> {
    const detail: DataplaneDeployDetail = { mode: 'none', ops: { servers: 0, maps: 0, uploaded: 0, deleted: 0 }, conflicts: 0, durationMs: 0 };
    const ctx: Ctx = { detail, signal, touched: false };
    const finish = (outcome: InstanceOutcome): DataplaneOutcome => {
      detail.durationMs = Date.now() - started;
      if (this.pendingDeletes.size > 0) detail.pendingDeletes = [...this.pendingDeletes.keys()];
      return { ...outcome, ...(detail.drift !== undefined && { drift: detail.drift }), detail };
    };
    /** A fast change goes by the runtime API or not at all: why not, for the full deployment that follows. */
    const leftToFull = (why: string) => finish({ ok: false, reloaded: false, runtimeOps: 0, error: `fast path: ${why}; left to the full deployment` });
    try {
      if (signal?.aborted) throw new Aborted('aborted before it started');
      const info = await this.client.info(signal);
      detail.apiVersion = info.version;
      // A fast change planned from what this target last wrote goes out while the
      // version is read, not after: runtime calls change nothing the version counts, and
      // its read is a round trip the traffic would otherwise wait for. The version still
      // decides before the configuration is stored (runtime()): when someone else changed
      // the instance meanwhile, the full deployment that follows adopts or overwrites it.
      const known = this.state;
      if (fast && known && known.config.hash === fast.from) {
        const versionRead = this.fetchVersion(ctx);
        versionRead.catch(() => undefined);
        const result = await this.runtime(config, fast.ops, known, versionRead, info, ctx);
        if (!result.ok) return leftToFull(result.reasons.join('; '));
        detail.mode = 'runtime';
        return finish({ ok: true, reloaded: false, runtimeOps: fast.ops.length });
      }
      let version = await this.fetchVersion(ctx);
      let previous = this.state;
      if (!previous || previous.version !== version) {
        // Unknown, or changed since this target's last write: what runs is adopted when
        // it is exactly this render. Another replica of haprx (the leader while this one
        // followed) leaves its marker at the version its write made: that is no drift.
        previous = await this.adopt(config, version, ctx, previous?.version);
        this.state = previous;
      }
      // The fast path planned from what this instance runs: apply as planned.
      let plan: Plan = fast && previous?.config.hash === fast.from ? { kind: 'runtime', ops: [...fast.ops] } : await FLEET_PLANS.plan(previous?.config, config);
      // Another text that runs the same (a map in another order: what a full render does after the
      // fast path appended an entry) is stored as a runtime change of nothing: the next fast path
      // plans from this render, and from anything else the plan is done again in full.
      if (plan.kind === 'none' && previous && previous.config.hash !== config.hash) plan = { kind: 'runtime', ops: [] };
      if (plan.kind === 'none') return finish({ ok: true, reloaded: false, runtimeOps: 0 });
      if (fast && (plan.kind !== 'runtime' || !previous)) return leftToFull(plan.kind === 'reload' ? (plan.reasons[0] ?? 'needs a reload') : 'nothing known deployed');
      let reasons = plan.kind === 'reload' ? plan.reasons : [];
      if (plan.kind === 'runtime' && previous) {
        const result = await this.runtime(config, plan.ops, previous, version, info, ctx);
        if (result.ok) {
          detail.mode = 'runtime';
          return finish({ ok: true, reloaded: false, runtimeOps: plan.ops.length });
        }
        reasons = result.reasons;
        if (fast) return leftToFull(reasons.join('; '));
        this.step('fallback', reasons.join('; '));
        if (result.refetch) version = await this.fetchVersion(ctx);
      }
      const after = plan.kind === 'reload' ? plan.after : [];
      return finish(await this.structural(config, reasons, after, previous, version, info, ctx));
    } catch (err) {
      // A failure after the first change leaves the instance in a state haprx cannot vouch for.
      if (ctx.touched) this.state = undefined;
      const message = err instanceof Aborted ? `deployment aborted: ${err.message}` : this.client.redact(reasonOf(err));
      return finish({ ok: false, reloaded: false, runtimeOps: 0, error: message });
    }
  }

  /**
   * Takes over what haprx deployed (this process earlier, or another replica) when the
   * instance runs exactly this render, untouched since. `lastVersion` is the version
   * this target's own last write left, when it had one.
   */
  private async adopt(config: RenderedConfig, version: number, ctx: Ctx, lastVersion?: number): Promise<Deployed | undefined> {
    const raw = await this.client.request('GET', '/services/haproxy/configuration/raw', { signal: ctx.signal });
    const m = MARKER.exec(raw.text);
    if (m && Number(m[2]) !== version) {
      ctx.detail.drift = `the configuration haprx posted as version ${m[2]} is at version ${version}: someone else changed the instance, and this deployment overwrites the change`;
    } else if (!m && lastVersion !== undefined) {
      ctx.detail.drift = `the configuration version is ${version}, not ${lastVersion} as haprx left it: someone else changed the instance, and this deployment overwrites the change`;
    }
    if (ctx.detail.drift !== undefined) this.step('drift', ctx.detail.drift);
    if (!m || m[1] !== config.hash || Number(m[2]) !== version) return undefined;
    const placed = placeFiles(config, this.prefix);
    if ('error' in placed) return undefined;
    const listing = await this.listStorage(new Set([...placed.placements.values()].map((p) => p.storage)), ctx);
    const placements = new Map<string, PlacedFile>();
    for (const [key, p] of placed.placements) {
      const path = listing.files.get(p.storage)?.get(p.stored);
      if (path === undefined) return undefined;
      placements.set(key, { ...p, path });
    }
    this.step('contact', `adopted the running configuration (version ${version})`);
    return { config, version, placements };
  }

  private async runtime(
    config: RenderedConfig,
    ops: readonly RuntimeOp[],
    previous: Deployed,
    versionRead: number | Promise<number>,
    info: ApiInfo,
    ctx: Ctx,
  ): Promise<{ ok: true } | { ok: false; reasons: string[]; refetch?: boolean }> {
    const placements = previous.placements;
    const serverPutFields = atLeast(info, 3, 3, 1);
    const taken = await this.takeBack(ops, serverPutFields, ctx.signal);
    if ('reason' in taken) return { ok: false, reasons: [taken.reason] };
    const translation = translateOps(taken.ops, {
      serverPutFields,
      mapName: (name) => {
        const p = placements.get(placementKey('maps', name));
        return p?.storage === 'maps' ? p.stored : undefined;
      },
      resolvePath: (ref) => placements.get(placementKey(ref.kind, ref.name))?.path,
    });
    if (!translation.ok) return { ok: false, reasons: translation.reasons };
    // No longer pending before anything is sent, so that no later retry deletes them.
    for (const key of taken.cancelled) this.pendingDeletes.delete(key);
    const named = changedReferencingMap(previous.config, config);
    if (named !== undefined) return { ok: false, reasons: [`map ${named} names other files: it is rewritten and uploaded, with a reload`] };
    try {
      for (const call of translation.calls) await this.call(call, ctx);
      // The map files, so that a reload or restart finds what the runtime now holds.
      for (const [name, content] of Object.entries(config.maps)) {
        if (previous.config.maps[name] === content) continue;
        const p = placements.get(placementKey('maps', name));
        if (!p) return { ok: false, reasons: [`map ${name} has no place in storage`] };
        ctx.touched = true;
        await this.client.request('PUT', `/services/haproxy/storage/${p.storage}/${encodeURIComponent(p.stored)}`, {
          query: { skip_reload: true },
          body: content,
          signal: ctx.signal,
        });
      }
    } catch (err) {
      if (err instanceof DataplaneError && err.kind === 'aborted') throw new Aborted(err.message);
      return { ok: false, reasons: [reasonOf(err)] };
    }
    this.step('runtime', `${translation.calls.length} runtime calls${translation.actions.length ? `, ${translation.actions.length} runtime actions` : ''}`);
    const version = await versionRead;
    if (version !== previous.version) return { ok: false, reasons: [`the configuration is at version ${version}, not ${previous.version} as haprx left it: someone else changed the instance`] };
    const text = this.render(config, placements, version);
    try {
      ctx.touched = true;
      const res = await this.client.request('POST', '/services/haproxy/configuration/raw', {
        query: { version, skip_reload: true },
        body: text,
        retry: false,
        signal: ctx.signal,
        ...(translation.actions.length ? { headers: { 'X-Runtime-Actions': translation.actions.join(';') } } : {}),
      });
      const next = res.configurationVersion ?? (await this.fetchVersion(ctx));
      this.state = { config, version: next, placements };
      ctx.detail.version = next;
    } catch (err) {
      if (err instanceof DataplaneError && err.status === 409) {
        ctx.detail.conflicts++;
        ctx.detail.drift ??= `someone else changed the configuration during the deployment (${err.apiMessage ?? '409'}); a full deployment overwrites the change`;
        return { ok: false, reasons: ['version conflict while saving the configuration after runtime changes'], refetch: true };
      }
      if (err instanceof DataplaneError && err.kind === 'aborted') throw new Aborted(err.message);
      return { ok: false, reasons: [reasonOf(err)], refetch: true };
    }
    return { ok: true };
  }

  private async structural(
    config: RenderedConfig,
    reasons: string[],
    after: readonly RuntimeOp[],
    previous: Deployed | undefined,
    firstVersion: number,
    info: ApiInfo,
    ctx: Ctx,
  ): Promise<InstanceOutcome> {
    const { detail } = ctx;
    detail.mode = 'reload';
    detail.reasons = reasons;
    const placed = placeFiles(config, this.prefix);
    if ('error' in placed) return { ok: false, reloaded: false, runtimeOps: 0, error: placed.error };
    const listing = await this.listStorage(new Set(STORAGE_KINDS), ctx);
    const placements = new Map<string, PlacedFile>();
    // The file references of haproxy.cfg, scanned in turns: the scans below (referencingFiles,
    // the rewrite in render) then find every piece known. A first deployment at 10k Ingresses
    // would otherwise hold the event loop some 100 ms for it.
    await runInTurns(auxRefSteps(config.main));
    const referencing = referencingFiles(config);
    const pathOf = (p: Placement) => listing.files.get(p.storage)?.get(p.stored) ?? joinPath(listing.dirs[p.storage] ?? this.options.storageDirs?.[p.storage] ?? DEFAULT_DIRS[p.storage], p.stored);
    // Files that name other files go last: what they name must be stored, and its path known, first.
    const ordered = [...placed.placements].sort(([, a], [, b]) => Number(referencing.has(auxPath(a.kind, a.name))) - Number(referencing.has(auxPath(b.kind, b.name))));
    for (const [key, p] of ordered) {
      const names: ReferencingFile | undefined = referencing.get(auxPath(p.kind, p.name));
      const rendered = config[p.kind][p.name]!;
      const content = names
        ? rewriteFileRefs(rendered, names.as, config, (ref) => {
            const other = placed.placements.get(placementKey(ref.kind, ref.name));
            return other ? (placements.get(placementKey(ref.kind, ref.name))?.path ?? pathOf(other)) : undefined;
          })
        : rendered;
      const existing = listing.files.get(p.storage)?.get(p.stored);
      const before = previous?.placements.get(key);
      const same = names ? before?.sent === content : before?.sent === undefined && previous?.config[p.kind][p.name] === content;
      if (existing !== undefined && before?.stored === p.stored && before.storage === p.storage && same) {
        placements.set(key, { ...p, path: existing, ...(names && { sent: content }) });
        continue;
      }
      ctx.touched = true;
      placements.set(key, { ...p, path: await this.upload(p, content, existing, listing, ctx), ...(names && { sent: content }) });
      detail.ops.uploaded++;
    }
    this.step('upload', `${detail.ops.uploaded} files uploaded`);

    let version = firstVersion;
    let posted: Awaited<ReturnType<DataplaneClient['request']>> | undefined;
    const attempts = (this.options.conflictRetries ?? 3) + 1;
    for (let attempt = 1; attempt <= attempts && !posted; attempt++) {
      ctx.touched = true;
      try {
        posted = await this.client.request('POST', '/services/haproxy/configuration/raw', {
          query: { version },
          body: this.render(config, placements, version),
          retry: false,
          signal: ctx.signal,
        });
      } catch (err) {
        if (!(err instanceof DataplaneError) || err.status !== 409) throw err;
        detail.conflicts++;
        detail.drift ??= `someone else changed the configuration during the deployment (${err.apiMessage ?? '409'}); this deployment overwrote the change`;
        this.step('retry', `version conflict on attempt ${attempt}: ${err.apiMessage ?? ''}`);
        version = await this.fetchVersion(ctx);
      }
    }
    if (!posted) {
      return { ok: false, reloaded: false, runtimeOps: 0, error: `the configuration version kept changing: ${attempts} attempts met a 409 conflict` };
    }
    this.step('post', `configuration posted at version ${version}`);

    if (posted.status === 202 && posted.reloadId) {
      detail.reloadId = posted.reloadId;
      const reload = await this.waitReload(posted.reloadId, ctx);
      if (!reload.ok) {
        // The API puts the last configuration that loaded back in the file: what runs is unknown to haprx now.
        this.state = undefined;
        return { ok: false, reloaded: false, runtimeOps: 0, error: reload.error };
      }
    }
    const next = posted.configurationVersion ?? (await this.fetchVersion(ctx));
    detail.version = next;
    this.state = { config, version: next, placements };
    // The new process started from the file: no server of the old one is left to delete.
    this.pendingDeletes.clear();

    let failure: string | undefined;
    if (after.length > 0) {
      const translation = translateOps(after, { serverPutFields: atLeast(info, 3, 3, 1), mapName: () => undefined, resolvePath: () => undefined });
      try {
        if (!translation.ok) throw new Error(translation.reasons.join('; '));
        for (const call of translation.calls) await this.call(call, ctx);
      } catch (err) {
        failure = `reloaded, but ${reasonOf(err)}`;
      }
    }
    await this.cleanup(listing, placements, ctx);
    return failure ? { ok: false, reloaded: true, runtimeOps: 0, error: failure } : { ok: true, reloaded: true, runtimeOps: after.length };
  }

  /** The text posted: aux references rewritten to storage paths, and the marker. */
  private render(config: RenderedConfig, placements: Map<string, PlacedFile>, version: number): string {
    const { text } = rewriteAuxRefs(config.main, (ref) => placements.get(placementKey(ref.kind, ref.name))?.path);
    // The API stores the post as version + 1; the marker lets a later haprx adopt it untouched.
    return `${endLine(text)}# haprx-config sha256=${config.hash} version=${version + 1}\n`;
  }

  private async upload(p: Placement, content: string, existing: string | undefined, listing: Listing, ctx: Ctx): Promise<string> {
    const base = `/services/haproxy/storage/${p.storage}`;
    const put = async (): Promise<void> => {
      // maps and ssl_certificates take the file as text/plain, general storage as multipart.
      const body = p.storage === 'general' ? formWith(p.stored, content) : content;
      await this.client.request('PUT', `${base}/${encodeURIComponent(p.stored)}`, { query: { skip_reload: true }, body, signal: ctx.signal });
    };
    const known = () => existing ?? joinPath(listing.dirs[p.storage] ?? this.options.storageDirs?.[p.storage] ?? DEFAULT_DIRS[p.storage], p.stored);
    if (existing !== undefined) {
      await put();
      return existing;
    }
    try {
      const res = await this.client.request('POST', base, { query: { skip_reload: true }, body: formWith(p.stored, content), signal: ctx.signal });
      const file = fileOf(res.text);
      if (file === undefined) return known();
      if (!SAFE_DIR.test(file)) throw new Error(`${p.storage} storage put ${p.kind}/${p.name} at a path haproxy.cfg cannot name unquoted: ${JSON.stringify(file)}`);
      listing.dirs[p.storage] ??= dirOf(file);
      return file;
    } catch (err) {
      // Created meanwhile (e.g. by an earlier attempt whose answer was lost): replace it.
      if (!(err instanceof DataplaneError) || err.status !== 409) throw err;
      await put();
      return known();
    }
  }

  private async listStorage(kinds: ReadonlySet<StorageKind>, ctx: Ctx): Promise<Listing> {
    const listing: Listing = { files: new Map(), dirs: {} };
    await Promise.all(
      [...kinds].map(async (kind) => {
        const res = await this.client.request('GET', `/services/haproxy/storage/${kind}`, { signal: ctx.signal });
        const files = new Map<string, string>();
        let parsed: unknown;
        try {
          parsed = JSON.parse(res.text);
        } catch {
          throw new Error(`GET /v3/services/haproxy/storage/${kind}: the answer is not JSON`);
        }
        for (const entry of Array.isArray(parsed) ? parsed : []) {
          const { file, storage_name: name } = (entry ?? {}) as { file?: unknown; storage_name?: unknown };
          if (typeof file !== 'string') continue;
          const stored = typeof name === 'string' && name !== '' ? name : file.slice(file.lastIndexOf('/') + 1);
          files.set(stored, file);
          if (SAFE_DIR.test(file)) listing.dirs[kind] ??= dirOf(file);
        }
        listing.files.set(kind, files);
      }),
    );
    return listing;
  }

  /** Removes stored files with haprx's prefix that the new configuration does not use. */
  private async cleanup(listing: Listing, placements: Map<string, PlacedFile>, ctx: Ctx): Promise<void> {
    const keep = new Set([...placements.values()].map((p) => `${p.storage}/${p.stored}`));
    for (const [kind, files] of listing.files) {
      for (const stored of files.keys()) {
        if (!stored.startsWith(this.prefix) || this.prefix === '' || keep.has(`${kind}/${stored}`)) continue;
        try {
          await this.client.request('DELETE', `/services/haproxy/storage/${kind}/${encodeURIComponent(stored)}`, {
            ...(kind === 'ssl_certificates' ? { query: { skip_reload: true } } : {}),
            signal: ctx.signal,
          });
          ctx.detail.ops.deleted++;
        } catch (err) {
          // 409: still referenced; 404: already gone. Either way nothing to do now.
          if (!(err instanceof DataplaneError) || (err.status !== 409 && err.status !== 404)) throw err;
        }
      }
    }
    if (ctx.detail.ops.deleted > 0) this.step('cleanup', `${ctx.detail.ops.deleted} stored files removed`);
  }

  private async waitReload(id: string, ctx: Ctx): Promise<{ ok: true } | { ok: false; error: string }> {
    const timeout = this.options.reloadTimeoutMs ?? 30_000;
    const poll = Math.max(20, this.options.reloadPollMs ?? 100);
    const deadline = Date.now() + timeout;
    for (;;) {
      let status: string | undefined;
      let response: string;
      try {
        const res = await this.client.request('GET', `/services/haproxy/reloads/${encodeURIComponent(id)}`, { signal: ctx.signal });
        const body = JSON.parse(res.text) as { status?: unknown; response?: unknown };
        status = typeof body.status === 'string' ? body.status : undefined;
        response = typeof body.response === 'string' ? body.response.trim() : '';
      } catch (err) {
        if (err instanceof DataplaneError && err.status === 404) return { ok: false, error: `the instance does not know reload ${id}` };
        if (err instanceof DataplaneError && err.kind === 'aborted') throw new Aborted(err.message);
        throw err;
      }
      if (status === 'succeeded') {
        this.step('reload', `reload ${id} succeeded`);
        return { ok: true };
      }
      if (status === 'failed') return { ok: false, error: `reload ${id} failed${response ? `: ${this.client.redact(response)}` : ''}` };
      if (Date.now() + poll > deadline) return { ok: false, error: `reload ${id} did not finish within ${timeout} ms` };
      await sleep(poll, ctx.signal);
    }
  }

  /**
   * The operations with each add of a server whose name is still taken by one waiting
   * to be deleted replaced: by nothing when it went meanwhile, else by taking that one
   * back (runtime server PUTs, which keep their order from API 3.3.1 on), whose pending
   * deletion the caller calls off; or why it can be neither.
   */
  private async takeBack(
    planned: readonly RuntimeOp[],
    serverPutFields: boolean,
    signal: AbortSignal | undefined,
  ): Promise<{ ops: RuntimeOp[]; cancelled: string[] } | { reason: string }> {
    const ops: RuntimeOp[] = [];
    const cancelled: string[] = [];
    for (const op of planned) {
      const key = op.kind === 'server-add' ? `${op.backend}/${op.server}` : '';
      if (op.kind === 'server-add' && this.pendingDeletes.has(key)) await this.retryDeletes(signal);
      const pending = this.pendingDeletes.get(key);
      if (op.kind !== 'server-add' || !pending) {
        ops.push(op);
        continue;
      }
      // Before 3.3.1 address and weight go as runtime actions after every call, so after the server is let in.
      const readd = serverPutFields ? readdOps(pending, op) : { reason: 'the API sets address and weight after the state before 3.3.1' };
      if ('reason' in readd) return { reason: `server ${key} is still being deleted (${readd.reason})` };
      cancelled.push(key);
      ops.push(...readd.ops);
    }
    return { ops, cancelled };
  }

  private async fetchVersion(ctx: Ctx): Promise<number> {
    const res = await this.client.request('GET', '/services/haproxy/configuration/version', { signal: ctx.signal });
    const version = Number(res.text.trim());
    if (!Number.isInteger(version)) throw new Error(`GET /v3/services/haproxy/configuration/version: not a version number`);
    return version;
  }

  private async call(call: ApiCall, ctx: Ctx): Promise<void> {
    ctx.touched = true;
    const servers = (backend: string) => `/services/haproxy/runtime/backends/${encodeURIComponent(backend)}/servers`;
    const server = (backend: string, name: string) => `${servers(backend)}/${encodeURIComponent(name)}`;
    const entries = (map: string) => `/services/haproxy/runtime/maps/${encodeURIComponent(map)}/entries`;
    const signal = ctx.signal;
    switch (call.kind) {
      case 'server-add':
        await this.client.request('POST', servers(call.backend), { body: call.body, signal });
        // An added server starts in maintenance.
        if (call.state !== 'maint') await this.client.request('PUT', server(call.backend, call.server), { body: { admin_state: call.state }, signal });
        ctx.detail.ops.servers++;
        return;
      case 'server-put':
        await this.client.request('PUT', server(call.backend, call.server), { body: call.body, signal });
        ctx.detail.ops.servers++;
        return;
      case 'server-del':
        try {
          await this.client.request('DELETE', server(call.backend, call.server), { retry: false, signal });
        } catch (err) {
          if (err instanceof DataplaneError && err.status === 404) return;
          if (!(err instanceof DataplaneError) || !STILL_CONNECTED.test(err.apiMessage ?? '')) throw err;
          // In maintenance already, so it takes no new traffic: delete it once its connections are gone.
          const settings = call.op.kind === 'server-del' ? call.op.settings : undefined;
          this.pendingDeletes.set(`${call.backend}/${call.server}`, { backend: call.backend, server: call.server, attempts: 0, settings });
          this.scheduleRetry();
        }
        ctx.detail.ops.servers++;
        return;
      case 'map-add':
        await this.client.request('POST', entries(call.map), { body: { key: call.key, value: call.value }, signal });
        ctx.detail.ops.maps++;
        return;
      case 'map-set':
        await this.client.request('PUT', `${entries(call.map)}/${encodeURIComponent(call.key)}`, { body: { value: call.value }, signal });
        ctx.detail.ops.maps++;
        return;
      case 'map-del':
        try {
          await this.client.request('DELETE', `${entries(call.map)}/${encodeURIComponent(call.key)}`, { signal });
        } catch (err) {
          if (!(err instanceof DataplaneError) || err.status !== 404) throw err;
        }
        ctx.detail.ops.maps++;
        return;
    }
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.pendingDeletes.size === 0 || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      const retried = this.queue.then(() => this.retryDeletes());
      this.queue = retried.catch(() => undefined);
      void retried.finally(() => this.scheduleRetry());
    }, this.options.deleteRetryMs ?? 1_000);
    this.retryTimer.unref();
  }

  private async retryDeletes(signal?: AbortSignal): Promise<void> {
    for (const [key, pending] of this.pendingDeletes) {
      try {
        await this.client.request('DELETE', `/services/haproxy/runtime/backends/${encodeURIComponent(pending.backend)}/servers/${encodeURIComponent(pending.server)}`, {
          retry: false,
          ...(signal ? { signal } : {}),
        });
        this.pendingDeletes.delete(key);
        this.step('runtime', `server-del ${key} (retried)`);
      } catch (err) {
        if (err instanceof DataplaneError && err.status === 404) {
          this.pendingDeletes.delete(key);
        } else if (++pending.attempts >= DELETE_ATTEMPTS) {
          // It stays in maintenance until the next reload drops it.
          this.pendingDeletes.delete(key);
          this.step('fallback', `server ${key} kept its connections; it stays in maintenance until the next reload`);
        }
      }
    }
  }

  private step(kind: DataplaneStepKind, detail: string): void {
    this.options.onStep?.({ kind, detail: this.client.redact(detail) });
  }
}

interface Ctx {
  detail: DataplaneDeployDetail;
  signal: AbortSignal | undefined;
  /** A change was sent to the instance. */
  touched: boolean;
}

function formWith(name: string, content: string): FormData {
  const form = new FormData();
  form.append('file_upload', new Blob([content], { type: 'application/octet-stream' }), name);
  return form;
}

function fileOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { file?: unknown };
    return typeof body.file === 'string' ? body.file : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Aborted('aborted while waiting for the reload'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Aborted('aborted while waiting for the reload'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

