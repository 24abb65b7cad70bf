/**
 * `haprx local` as a user runs it, for tests that break its inputs or its haproxy:
 * a child process on a temp folder of manifests and a copy of the shipped templates,
 * real haproxy, echo backends, the JSON log kept, and a client that keeps sending
 * requests and counts the ones that fail.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopLeftHaproxy } from '../../src/local/haproxy-process.ts';
import { cliCommand, parseShowProc } from '../../src/local/master-cli.ts';
import { get, startEcho } from './echo-backend.ts';
import { freePort } from './ports.ts';
import { until as poll } from './until.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface LogRecord {
  msg: string;
  level: number;
  event?: string;
  [field: string]: unknown;
}

export interface LocalHaprxOptions {
  /** Manifest files to start with: name → YAML. */
  manifests: Record<string, string>;
  /** Echo backends to start, by name (each answers with its name). */
  echoes: string[];
  /** Overrides of the `settings:` in the copied templates' haprx.yaml, e.g. {debounce: '50ms'}. */
  settings?: Record<string, string>;
  /** Extra node options, e.g. the heap cap the image runs with. */
  nodeOptions?: string[];
  /** The haproxy binary haprx runs (default haproxy). */
  haproxyBin?: string;
  /** More flags for `haprx local`, e.g. `--record FILE`. */
  args?: string[];
  /** Edits the copied main template (haproxy.cfg) before haprx starts. */
  editMain?: (text: string) => string;
  /** The port haproxy is to listen on (default: a free one). */
  port?: number;
  /** Whether start() waits for the first deployment (default true). */
  awaitDeployment?: boolean;
}

export interface Traffic {
  /** Stops sending; resolves with what was sent and what failed. */
  stop(): Promise<{ sent: number; failed: number; failures: string[] }>;
  readonly sent: number;
  readonly failed: number;
}

export class LocalHaprx {
  readonly logs: LogRecord[] = [];
  readonly echo: Record<string, { port: number; close(): Promise<void> }> = {};
  dir = '';
  manifests = '';
  templates = '';
  stateDir = '';
  port = 0;
  healthPort = 0;
  private child: ChildProcess | undefined;
  private exitCode: number | null | undefined;
  private readonly running = new Set<Traffic>();

  /** Starts everything and waits for the first deployment (unless told not to). */
  async start(options: LocalHaprxOptions): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), 'haprx-faults-'));
    this.manifests = join(this.dir, 'manifests');
    this.templates = join(this.dir, 'templates');
    this.stateDir = join(this.dir, 'state');
    await mkdir(this.manifests);
    await cp(join(ROOT, 'templates'), this.templates, { recursive: true });
    if (options.settings) {
      const settingsFile = join(this.templates, 'haprx.yaml');
      let text = await readFile(settingsFile, 'utf8');
      for (const [key, value] of Object.entries(options.settings)) {
        const line = new RegExp(`^  ${key}: .*$`, 'm');
        text = line.test(text) ? text.replace(line, `  ${key}: ${value}`) : text.replace(/^settings:$/m, `settings:\n  ${key}: ${value}`);
      }
      await writeFile(settingsFile, text);
    }
    if (options.editMain) {
      const main = join(this.templates, 'haproxy.cfg');
      await writeFile(main, options.editMain(await readFile(main, 'utf8')));
    }
    for (const name of options.echoes) this.echo[name] = await startEcho(name);
    for (const [name, text] of Object.entries(options.manifests)) await writeFile(join(this.manifests, name), text);
    this.port = options.port ?? (await freePort());
    this.healthPort = await freePort();
    const args = [
      ...(options.nodeOptions ?? []),
      'bin/haprx.js',
      'local',
      this.manifests,
      '--templates',
      this.templates,
      '--state-dir',
      this.stateDir,
      '--haproxy-bin',
      options.haproxyBin ?? 'haproxy',
      '--set',
      `httpPort=${this.port}`,
      '--set',
      'bindAddress=127.0.0.1',
      '--health-port',
      String(this.healthPort),
      '--metrics-port',
      String(this.healthPort),
      '--debug-port',
      '0',
      ...(options.args ?? []),
    ];
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HAPRX_LOG_LEVEL: 'debug' } });
    this.child = child;
    child.once('exit', (code) => (this.exitCode = code));
    createInterface({ input: child.stdout!, crlfDelay: Infinity }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      try {
        this.logs.push(JSON.parse(line) as LogRecord);
      } catch {
        this.logs.push({ msg: line, level: 30 });
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.logs.push({ msg: `stderr: ${chunk}`, level: 50 }));
    if (options.awaitDeployment !== false) await this.until('the first deployment', () => this.logs.find((l) => l.msg.startsWith('deployed to local')), 30_000);
  }

  /** Sends haprx a signal (SIGUSR2 toggles its recording). */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** The haprx process's id, once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Its exit code once it has exited (null when a signal ended it). */
  async exit(): Promise<number | null> {
    const child = this.child;
    if (!child) throw new Error('haprx was never started');
    if (this.exitCode === undefined) await new Promise((r) => child.once('exit', r));
    return this.exitCode ?? null;
  }

  /** Whether the haprx process is still running. */
  get alive(): boolean {
    return this.child !== undefined && this.exitCode === undefined;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running].map((t) => t.stop()));
    const child = this.child;
    if (child && this.exitCode === undefined) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    await Promise.all(Object.values(this.echo).map((e) => e.close()));
    // A haprx that died without its clean stop leaves its haproxy serving the ports.
    if (this.stateDir) await stopLeftHaproxy(this.stateDir);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  recentLogs(): string {
    return `haprx ${this.alive ? 'running' : `exited (${this.exitCode})`}; last log lines:\n${this.logs.slice(-25).map((l) => l.msg).join('\n')}`;
  }

  until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 15_000): Promise<T> {
    return poll(what, probe, ms, () => this.recentLogs(), 20);
  }

  /** The body an HTTP request through haproxy gets, trimmed; undefined when it fails. */
  async body(host: string, path = '/'): Promise<string | undefined> {
    return get(this.port, path, host).then(
      (r) => (r.status === 200 ? r.body.trim() : `status ${r.status}`),
      () => undefined,
    );
  }

  /** Waits until `host` answers with `expected`; returns the milliseconds it took. */
  async served(host: string, expected: string, ms = 15_000, path = '/'): Promise<number> {
    const started = Date.now();
    await this.until(`${host}${path} to answer ${expected}`, async () => ((await this.body(host, path)) === expected ? true : undefined), ms);
    return Date.now() - started;
  }

  /** Log lines logged after `mark` (an index into logs) that match. */
  logged(mark: number, pattern: RegExp): LogRecord | undefined {
    return this.logs.slice(mark).find((l) => pattern.test(l.msg));
  }

  async health(path: '/healthz' | '/readyz' | '/metrics'): Promise<{ status: number; body: string }> {
    return get(this.healthPort, path);
  }

  async showProc() {
    return parseShowProc(await cliCommand(join(this.stateDir, 'master.sock'), 'show proc'));
  }

  /**
   * Keeps requests going to `host` until stopped, over keep-alive connections and new
   * ones; a request fails when it errors or does not answer `expected`. stop() ends
   * whatever is still sending.
   */
  traffic(host: string, expected: string): Traffic {
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const failures: string[] = [];
    let sent = 0;
    let running = true;
    const one = (via: Agent | false) =>
      new Promise<void>((resolve) => {
        const req = request({ host: '127.0.0.1', port: this.port, path: '/', headers: { host }, agent: via }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => {
            if (res.statusCode !== 200 || body.trim() !== expected) failures.push(`status ${res.statusCode}: ${body.trim().slice(0, 40)}`);
            resolve();
          });
          res.on('error', (err) => {
            failures.push(err.message);
            resolve();
          });
        });
        req.setTimeout(5_000, () => req.destroy(new Error('timeout')));
        req.on('error', (err) => {
          failures.push((err as NodeJS.ErrnoException).code ?? err.message);
          resolve();
        });
        req.end();
      });
    const loop = async (via: Agent | false) => {
      while (running) {
        sent++;
        await one(via);
        // A refused connection answers at once: pace the loop so a down haproxy is not a busy loop.
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const loops = [loop(agent), loop(agent), loop(false)];
    const traffic: Traffic = {
      get sent() {
        return sent;
      },
      get failed() {
        return failures.length;
      },
      stop: async () => {
        running = false;
        this.running.delete(traffic);
        await Promise.all(loops);
        agent.destroy();
        return { sent, failed: failures.length, failures };
      },
    };
    this.running.add(traffic);
    return traffic;
  }
}

export const manifest = {
  service: (name: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: shop}\nspec:\n  ports: [{name: http, port: 80}]\n`,
  slice: (name: string, service: string, port: number) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}, namespace: shop, labels: {kubernetes.io/service-name: ${service}}}
addressType: IPv4
ports: [{name: http, port: ${port}}]
endpoints:
  - {addresses: [127.0.0.1], conditions: {ready: true}}
`,
  ingress: (name: string, host: string, service: string, extra = '') => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop${extra}}
spec:
  rules:
    - host: ${host}
      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ${service}, port: {number: 80}}}}]}
`,
};
