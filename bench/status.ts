/**
 * The status writer on the main thread, as `haprx run` drives it: the shipped
 * templates render a synthetic cluster of 1k and 10k Ingresses once, for the statuses
 * they declare; the status writer then sees, as in a start, the Ingresses listed, that
 * render, the leadership won, the load balancer's address, and the deployment, after
 * which every Ingress gets its address written; then, as after an endpoint change, the
 * same declarations under a new configuration and its deployment. Twice: on a new
 * cluster, and as after a restart, when every Ingress already shows the address and
 * nothing is left to write. Writes go to a fake API that answers at once.
 *
 * What it reports is the longest stretch the writer (with the debug state's status book,
 * which takes the same events) held the event loop for in each step (an event's own handling and the writes and plans that follow it within the
 * step's second), since a stretch over 100 ms is a late `/healthz`.
 *
 *   npm run bench:status     (SIZES=1000,10000 STEP_MS=1000)
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { BehaviorSubject, Subject, of } from 'rxjs';
import type { ControllerEvent, Reconcile } from '../src/events.ts';
import type { LoadBalancerIngress } from '../src/k8s/addresses.ts';
import type { KubeObject, ResourceChange } from '../src/k8s/resource.ts';
import { Store } from '../src/k8s/store.ts';
import { StatusBook } from '../src/status/book.ts';
import { renderTemplates } from '../src/templating/engine.ts';
import type { RenderedConfig } from '../src/templating/rendered.ts';
import { type PatchAnswer, type StatusTarget, statusWriter } from '../streams/status.ts';
import { shippedTemplates, syntheticCluster } from './synthetic.ts';

const SIZES = (process.env.SIZES ?? '1000,10000').split(',').map(Number);
const STEP_MS = Number(process.env.STEP_MS ?? 1_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const { config, templates } = await shippedTemplates();
const results: Record<string, Record<string, string>> = {};
for (const size of SIZES) {
  const cluster = syntheticCluster({ ingresses: size, endpointsPerService: 5, tlsSecrets: 0 });
  const stores = new Map(config.watch.map((w) => [w.name, new Store(w.name, { ...w, seal: false })]));
  for (const [name, objects] of Object.entries(cluster)) for (const object of objects) stores.get(name)?.apply({ type: 'upsert', resource: name, object });
  const rendered = renderTemplates(templates, { resources: Object.fromEntries(stores), values: { ...config.values, httpPort: 18080, bindAddress: '127.0.0.1' } });
  if (!rendered.ok) throw new Error(rendered.error.message);
  const configAs = (hash: string): RenderedConfig => ({ ...rendered.config, hash });

  // The API: each object as stored, its status merge-patched.
  const objects = new Map<string, KubeObject>();
  let written = 0;
  let rv = 1_000;
  const patch = (target: StatusTarget, body: Record<string, unknown>) => {
    const key = `${target.namespace}/${target.name}`;
    const current = objects.get(key)!;
    const next = { ...current, metadata: { ...current.metadata, resourceVersion: String(++rv) }, status: { ...(current.status as object), ...(body.status as object) } };
    objects.set(key, next);
    written++;
    return of<PatchAnswer>({ ok: true, object: next });
  };
  for (const round of ['new cluster', 'restart'] as const) {
    // A render's statuses cross from the render thread as copies: a restart's are new objects.
    const statuses = structuredClone(rendered.statuses);
    // After a restart every Ingress already shows the address: nothing is left to write.
    const listed = round === 'new cluster' ? cluster.ingresses : cluster.ingresses.map((o) => ({ ...o, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } }));
    for (const o of listed) objects.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    const observed$ = new Subject<ResourceChange>();
    const events$ = new Subject<ControllerEvent>();
    const leader$ = new BehaviorSubject(false);
    const addresses$ = new BehaviorSubject<readonly LoadBalancerIngress[] | undefined>(undefined);
    const sets = new Map([['ingresses', { apiVersion: 'networking.k8s.io/v1', resource: 'ingresses' }]]);
    const subscription = statusWriter({ events$, observed$, leader$, addresses$ }, { patch, sets }).subscribe();
    // The debug state holds a book of its own, fed the same events (src/observability/debug-state.ts).
    const debugBook = new StatusBook({ reportChanges: false });
    subscription.add(events$.subscribe((event) => debugBook.apply(event)));

    const reconcile: Reconcile = { seq: 1, cause: { reason: 'resources', changes: [] }, at: 0 };
    const deployed = (hash: string): ControllerEvent => ({
      type: 'DeploymentCompleted',
      deployment: { id: 1, reconcile, config: configAs(hash), endpoints: [], reason: 'change', queuedAt: 0, startedAt: 0 },
      results: [{ endpoint: { id: 'haproxy-0', address: 'x' }, ok: true, reloaded: false, runtimeOps: 0, durationMs: 1 }],
      durationMs: 1,
    });
    const steps: [string, () => void][] = [
      ['first render', () => events$.next({ type: 'Rendered', reconcile, config: configAs('first'), durationMs: 0, statuses })],
      ['leadership won', () => leader$.next(true)],
      ['address known', () => addresses$.next([{ ip: '192.0.2.1' }])],
      ['first deployment', () => events$.next(deployed('first'))],
      ['a later render, same declarations', () => events$.next({ type: 'Rendered', reconcile, config: configAs('second'), durationMs: 0, statuses })],
      ['its deployment', () => events$.next(deployed('second'))],
    ];
    // The first list arrives as upserts, a slice at a time (src/k8s/list-watch.ts): not a step of its own here.
    for (let i = 0; i < cluster.ingresses.length; i += 200) {
      for (const object of listed.slice(i, i + 200)) observed$.next({ type: 'upsert', resource: 'ingresses', object });
      await new Promise((resolve) => setImmediate(resolve));
    }
    const row: Record<string, string> = {};
    for (const [name, step] of steps) {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const before = written;
      const started = performance.now();
      step();
      const call = performance.now() - started;
      await sleep(STEP_MS);
      delay.disable();
      const longest = Math.max(call, delay.max / 1e6);
      row[name] = `${Math.round(longest)} ms (${written - before} written)`;
    }
    subscription.unsubscribe();
    results[`${size} Ingresses, ${round}`] = row;
  }
}
console.log('Longest stretch the status writer held the event loop, per step:');
console.table(results);
