/**
 * A rig for Data Plane fault tests: the whole controller graph with its real parts
 * (ejs templates, haproxy -c, DataplaneTarget) deploying to the Data Plane API double,
 * which drives a real haproxy, and a client that keeps sending HTTP requests through
 * that haproxy the whole time. A test breaks something, makes a change, removes the
 * fault, and reads what the client saw and how long the change took to go live.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BehaviorSubject, type Subscription } from 'rxjs';
import { controllerGraph } from '../../src/cli/wiring.ts';
import { dataplaneDeployTo, DataplaneTargets } from '../../src/dataplane/deploy-to.ts';
import type { ControllerEvent, Endpoint } from '../../src/events.ts';
import { Validator } from '../../src/haproxy/validate.ts';
import { logLine } from '../../src/observability/event-log.ts';
import { type Observer, createObserver } from '../../src/observability/observer.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { controller } from '../../streams/controller.ts';
import { type DataplaneDouble, startDataplaneDouble } from '../support/dataplane-double/index.ts';
import { get, startEcho } from '../support/echo-backend.ts';
import { freePort } from '../support/ports.ts';
import { ServicesWatch, serviceRoutingConfig, wrapHaproxy } from '../support/service-graph.ts';
import { until } from '../support/until.ts';

const AUTH = { username: 'admin', password: 'adminpwd' };

export interface RigOptions {
  /** The graph's bound on one instance's deployment; default 10 s. */
  deployTimeoutMs?: number;
  /** The Data Plane client's bound on one call; default 10 s. */
  clientTimeoutMs?: number;
  /** haproxy -c's bound; default 10 s. */
  validateTimeoutMs?: number;
  /** Wraps haproxy for validation: a `sh` body run before `exec haproxy "$@"`. */
  validatorPrelude?: string;
}

/** What the client saw between two instants. */
export interface Served {
  sent: number;
  failed: number;
  /** Answers by body (the echo backend's name). */
  bodies: Record<string, number>;
  /** The first failures, for a message. */
  errors: string[];
}

export class FaultRig {
  double!: DataplaneDouble;
  readonly events: { at: number; event: ControllerEvent }[] = [];
  observer!: Observer;
  private readonly echoes: Awaited<ReturnType<typeof startEcho>>[] = [];
  private readonly services = new ServicesWatch();
  readonly endpoints$ = new BehaviorSubject<readonly Endpoint[]>([]);
  private targets!: DataplaneTargets;
  private subscription: Subscription | undefined;
  private httpPort = 0;
  private tmp = '';
  private traffic: { stop: boolean; done: Promise<void>; log: { at: number; ok: boolean; body: string }[] } | undefined;
  readonly echoPorts: Record<string, number> = {};

  static async start(options: RigOptions = {}): Promise<FaultRig> {
    const rig = new FaultRig();
    await rig.init(options);
    return rig;
  }

  private async init(options: RigOptions): Promise<void> {
    this.httpPort = await freePort();
    for (const name of ['one', 'two']) {
      const echo = await startEcho(name);
      this.echoes.push(echo);
      this.echoPorts[name] = echo.port;
    }
    this.tmp = await mkdtemp(join(tmpdir(), 'haprx-faults-'));
    const haproxyBin = options.validatorPrelude ? await wrapHaproxy(join(this.tmp, 'haproxy-check'), options.validatorPrelude) : 'haproxy';
    this.double = await startDataplaneDouble({ reloadDelayMs: 50 });
    this.targets = new DataplaneTargets({ ...AUTH, reloadPollMs: 25, retryDelayMs: 50, ...(options.clientTimeoutMs !== undefined && { timeoutMs: options.clientTimeoutMs }) });
    this.observer = createObserver({ log: createLogger({ level: 'silent' }), defaultMetrics: false });
    this.setService('one', this.echoPorts.one!, 'app.test');

    const loaded = serviceRoutingConfig(
      '<%= values.port %>',
      { debounce: '50ms', debounceMaxWait: '200ms', minDeployInterval: '200ms', driftInterval: 0, deployTimeout: `${options.deployTimeoutMs ?? 10_000}ms` },
      { port: this.httpPort },
    );
    const validator = new Validator({ haproxyBin, timeoutMs: options.validateTimeoutMs ?? 10_000, cacheSize: 0 });
    const deployTo = dataplaneDeployTo(this.targets.lookup);
    this.subscription = controller(new BehaviorSubject<unknown>(loaded.config), {
      decode: () => loaded,
      graph: (config) =>
        controllerGraph(config, {
          changes: this.services.changes,
          endpoints$: this.endpoints$,
          validator,
          deployTo,
        }),
    }).subscribe((event) => {
      this.events.push({ at: Date.now(), event });
      this.observer.record(event);
    });
    this.endpoints$.next([{ id: 'haproxy-0', address: this.double.url, incarnation: 'first' }]);
    await until('the first configuration serving', async () => ((await get(this.httpPort, '/', 'app.test').catch(() => undefined))?.body === 'one\n' ? true : undefined), 20_000, () => this.describe());
    // Done when the first deployment is, clean-up included: a fault must meet the change, not its tail.
    await this.waitFor('DeploymentCompleted', 0, 20_000, (e) => e.results.every((r) => r.ok));
  }

  /** Creates or changes a Service; `host` routes that host to it. */
  setService(name: string, port: number, host?: string): void {
    this.services.set(name, port, host);
  }

  /** The change every fault test makes: app.test moves to a new backend (a reload, and a map entry). */
  moveToTwo(): void {
    this.setService('one', this.echoPorts.one!);
    this.setService('two', this.echoPorts.two!, 'app.test');
  }

  /** Makes the change source fail, as a watch that ends with an error. */
  failSource(err: Error): void {
    this.services.fail(err);
  }

  /**
   * The HAProxy pod is replaced: the old one goes away (its haproxy with it), a new one
   * starts with the bootstrap configuration at another address, and discovery reports it.
   * Resolves with when discovery reported it.
   */
  async replaceInstance(): Promise<number> {
    const old = this.double;
    await old.stop();
    this.double = await startDataplaneDouble({ reloadDelayMs: 50 });
    const at = Date.now();
    this.endpoints$.next([{ id: 'haproxy-0', address: this.double.url, incarnation: 'second' }]);
    return at;
  }

  /** Starts a client that sends a request through haproxy every 20 ms, each on a new connection. */
  startTraffic(): void {
    const state = { stop: false, done: Promise.resolve(), log: [] as { at: number; ok: boolean; body: string }[] };
    state.done = (async () => {
      while (!state.stop) {
        const at = Date.now();
        try {
          const res = await get(this.httpPort, '/', 'app.test');
          state.log.push({ at, ok: res.status === 200, body: res.status === 200 ? res.body.trim() : `HTTP ${res.status}` });
        } catch (err) {
          state.log.push({ at, ok: false, body: (err as Error).message });
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    this.traffic = state;
  }

  /** What the client saw from `from` on (all of it by default). */
  served(from = 0, to = Infinity): Served {
    const log = (this.traffic?.log ?? []).filter((r) => r.at >= from && r.at < to);
    const bodies: Record<string, number> = {};
    for (const r of log) if (r.ok) bodies[r.body] = (bodies[r.body] ?? 0) + 1;
    const failures = log.filter((r) => !r.ok);
    return { sent: log.length, failed: failures.length, bodies, errors: failures.slice(0, 3).map((r) => r.body) };
  }

  /** When the client was first answered after `from`. */
  firstAnswerAfter(from: number): number {
    return this.traffic?.log.find((r) => r.at >= from && r.ok)?.at ?? Infinity;
  }

  /** Waits until the client is answered by `name`, and returns when it first was. */
  async servedBy(name: string, ms: number): Promise<number> {
    const found = await until(`requests answered by ${name}`, () => this.traffic?.log.find((r) => r.ok && r.body === name)?.at, ms, () => this.describe());
    return found;
  }

  /** Waits for an event of `type` after `from` (an index into events) that `test` accepts. */
  async waitFor<T extends ControllerEvent['type']>(type: T, from: number, ms: number, test: (e: Extract<ControllerEvent, { type: T }>) => boolean = () => true): Promise<Extract<ControllerEvent, { type: T }>> {
    return until(
      type,
      () => this.events.slice(from).map((e) => e.event).find((e): e is Extract<ControllerEvent, { type: T }> => e.type === type && test(e as Extract<ControllerEvent, { type: T }>)),
      ms,
      () => this.describe(),
    );
  }

  /** The log lines the events make, as the controller would write them. */
  logLines(from = 0): string[] {
    return this.events.slice(from).map((e) => logLine(e.event).msg);
  }

  /** Events from `from` on, with their times relative to the first, one per line. */
  timeline(from = 0): string {
    const t0 = this.events[from]?.at ?? 0;
    return this.events
      .slice(from)
      .map((e) => `  +${e.at - t0} ms ${e.event.type}: ${logLine(e.event).msg}`)
      .join('\n');
  }

  private describe(): string {
    return `recent events:\n${this.events
      .slice(-15)
      .map((e) => `  ${e.event.type}: ${logLine(e.event).msg}`)
      .join('\n')}`;
  }

  async stop(): Promise<void> {
    if (this.traffic) {
      this.traffic.stop = true;
      await this.traffic.done;
    }
    this.subscription?.unsubscribe();
    await this.targets.close();
    await this.double.faults.clear();
    await this.double.stop();
    await Promise.all(this.echoes.map((e) => e.close()));
    await rm(this.tmp, { recursive: true, force: true });
  }
}
