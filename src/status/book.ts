/**
 * What each object's status is now: the templates' latest declarations, with the
 * conditions declared `live` held back until the configuration that serves the
 * object is live on every instance. Pure: it reads controller events and keeps no
 * clock; the status writer and the debug state each hold one.
 *
 * An object's configuration is live when its declaration in the newest render
 * equals its declaration in the render whose configuration was last deployed to
 * every instance: an object a newer render did not change is still served by what
 * runs. Otherwise its live conditions (`Programmed`) are Unknown/Pending while the
 * deployment is on its way, False/Invalid once haproxy refused the configuration,
 * and False/Pending once its deployment failed; and `served` is what the live
 * render said (a new Ingress gets its address once it is served, an updated one
 * keeps it meanwhile), unsaid until a deployment since the start made one live.
 * Until then, too, a held condition leaves the one the object shows as it is
 * (`keepShown`): after a restart, what the instances run is most likely what it was
 * written for.
 */
import type { ControllerEvent } from '../events.ts';
import { type Steps, runSteps } from '../steps.ts';
import { textDigest } from '../text-digest.ts';
import { type DeclaredCondition, type ObjectStatus, statusKey } from './types.ts';

interface Held {
  status: ObjectStatus;
  /** A digest of the declaration's text: equal digest, equal declaration. Not the text: 10k of them would be held per render kept. */
  digest: string;
}

type Declared = ReadonlyMap<string, Held>;

/** How many renders' declarations are kept for a deployment that may still report on them. */
const KEPT_RENDERS = 4;

/** Objects gone through between two steps of applySteps(). */
const STEP = 256;

type Failure = { hash: string; reason: 'Invalid' | 'Pending'; message: string };

/**
 * Each status's key and digest, found once per status object, whichever book takes it
 * first: the render thread passes an unchanged status on as the same object, and in
 * `haprx run` two books (the status writer's and the debug state's) take every render's
 * statuses, 10k of them at 10k objects. Held as long as the status object is.
 */
const keyOf = new WeakMap<ObjectStatus, string>();
const digestOf = new WeakMap<ObjectStatus, string>();

function keyFor(status: ObjectStatus): string {
  let key = keyOf.get(status);
  if (key === undefined) keyOf.set(status, (key = statusKey(status.ref)));
  return key;
}

function digestFor(status: ObjectStatus): string {
  let digest = digestOf.get(status);
  if (digest === undefined) digestOf.set(status, (digest = textDigest(JSON.stringify(status))));
  return digest;
}

export interface StatusBookOptions {
  /**
   * Whether apply() tells which keys' composed status changed (the status writer's
   * book); a book that is only read (the debug state's) skips going through every key.
   */
  reportChanges?: boolean;
}

interface Composed {
  /** What held the live conditions back (gate()). */
  gate: string;
  held: Held;
  liveHeld: Held | undefined;
  /** Whether a deployment since the start made a render live (until then `served` is unsaid). */
  liveKnown: boolean;
  failure: Failure | undefined;
}

export class StatusBook {
  private latest: Declared = new Map();
  private latestHash: string | undefined;
  /** Declarations by configuration hash, newest last. */
  private readonly byHash = new Map<string, Declared>();
  private live: { hash: string; declared: Declared } | undefined;
  private failure: Failure | undefined;
  /** What each key's composed status was made of, to tell which ones an event changed. */
  private readonly composedText = new Map<string, Composed>();
  /** The declarations were replaced since the last recompose: keys may have gone. */
  private latestKeysMayBeGone = false;
  /** The statuses list the declarations were last made from. */
  private taken: readonly ObjectStatus[] | undefined;
  private readonly reportChanges: boolean;

  constructor(options: StatusBookOptions = {}) {
    this.reportChanges = options.reportChanges ?? true;
  }

  /** Applies one controller event; returns the keys whose composed status changed (none without reportChanges). */
  apply(event: ControllerEvent): string[] {
    return runSteps(this.applySteps(event));
  }

  /**
   * apply() as steps (src/steps.ts), one every few hundred objects: at 10k objects a
   * render's declarations and the keys they change take tens of milliseconds, which the
   * status writer runs in slices. The book is read between steps: what it composes is
   * the state before the event until the new declarations are taken whole, then the new
   * state; the changed keys come at the end.
   */
  *applySteps(event: ControllerEvent): Steps<string[]> {
    switch (event.type) {
      case 'Rendered':
        yield* this.take(event.config.hash, event.statuses ?? []);
        if (this.failure && this.failure.hash !== event.config.hash) this.failure = undefined;
        break;
      case 'RenderUnchanged':
        if (event.statuses === undefined) return [];
        yield* this.take(event.hash, event.statuses);
        break;
      case 'ValidationFailed': {
        const [first] = event.problems;
        const where = first ? `${first.file}${first.line !== undefined ? `:${first.line}` : ''}: ${first.message.split('\n')[0]}` : 'no details';
        this.failure = { hash: event.config.hash, reason: 'Invalid', message: `haproxy refused the configuration, the last good one stays live: ${where}` };
        break;
      }
      case 'DeploymentCompleted': {
        const { hash } = event.deployment.config;
        const failed = event.results.filter((r) => !r.ok);
        if (event.results.length > 0 && failed.length === 0) {
          const declared = this.byHash.get(hash);
          // Most deployments at 10k objects are the fast path's, of a configuration no render
          // declared anything for: nothing a status is made of changed, and 10k keys are not gone through.
          const unchanged = (declared === undefined || (this.live?.hash === hash && this.live.declared === declared)) && this.failure?.hash !== hash;
          if (unchanged) return [];
          if (declared) this.live = { hash, declared };
          if (this.failure?.hash === hash) this.failure = undefined;
        } else if (hash === this.latestHash) {
          const why = failed[0] ? `${failed[0].endpoint.id}: ${(failed[0].error ?? 'failed').split('\n')[0]}` : 'no HAProxy instance to deploy to';
          this.failure = { hash, reason: 'Pending', message: `the configuration is not live on every instance: ${why}` };
        } else return [];
        break;
      }
      default:
        return [];
    }
    return this.reportChanges ? yield* this.recompose() : [];
  }

  /** The status to show for this key now, or undefined when nothing is declared for it. */
  composed(key: string): ObjectStatus | undefined {
    const held = this.latest.get(key);
    return held && this.compose(key, held);
  }

  /** Every key with a declaration now. */
  keys(): IterableIterator<string> {
    return this.latest.keys();
  }

  get size(): number {
    return this.latest.size;
  }

  /** Every composed status, in key order. */
  all(): ObjectStatus[] {
    return [...this.latest.keys()].map((k) => this.composed(k)!);
  }

  private *take(hash: string, statuses: readonly ObjectStatus[]): Steps<void> {
    // The very list taken last (the render thread's statuses did not change): the same declarations.
    const declared = statuses === this.taken ? this.latest : yield* this.declarations(statuses);
    this.taken = statuses;
    if (declared !== this.latest) this.latestKeysMayBeGone = true;
    this.latest = declared;
    this.latestHash = hash;
    this.byHash.delete(hash);
    this.byHash.set(hash, declared);
    for (const old of this.byHash.keys()) {
      if (this.byHash.size <= KEPT_RENDERS) break;
      this.byHash.delete(old);
    }
    // The configuration is live and unchanged: so is what is declared about it now.
    if (this.live?.hash === hash) this.live = { hash, declared };
  }

  private *declarations(statuses: readonly ObjectStatus[]): Steps<Declared> {
    const declared = new Map<string, Held>();
    let n = 0;
    for (const status of statuses) {
      if (++n % STEP === 0) yield;
      // Found once per status object: at 10k objects a render's declarations build no new
      // key strings, and the maps keyed by them look up strings whose hash is known.
      const key = keyFor(status);
      const before = this.latest.get(key);
      // The render thread passes an unchanged status on as the same object: no need to compare its text.
      if (before !== undefined && before.status === status) {
        declared.set(key, before);
        continue;
      }
      const digest = digestFor(status);
      // Unchanged since the last render: the same record, so that the renders kept share it
      // (at 10k objects, each render's declarations would otherwise be held several times over).
      declared.set(key, before !== undefined && before.digest === digest ? before : { status, digest });
    }
    return declared;
  }

  /** Recomputes what each key's composed status depends on; returns the keys where it changed, and those gone. */
  private *recompose(): Steps<string[]> {
    const changed: string[] = [];
    const failure = this.failure?.hash === this.latestHash ? this.failure : undefined;
    const liveKnown = this.live !== undefined;
    let n = 0;
    for (const [key, held] of this.latest) {
      if (++n % STEP === 0) yield;
      const liveHeld = this.live?.declared.get(key);
      const before = this.composedText.get(key);
      // Made of the same records as before: the same text (most keys, on most events, at 10k objects).
      if (before !== undefined && before.held === held && before.liveHeld === liveHeld && before.liveKnown === liveKnown && before.failure === failure) continue;
      const gate = this.gate(key, held);
      this.composedText.set(key, { gate, held, liveHeld, liveKnown, failure });
      // Equal declarations have equal digests: compared in place, not joined into one more string per key.
      if (before === undefined || before.gate !== gate || (before.held !== held && before.held.digest !== held.digest)) changed.push(key);
    }
    // Keys go only with a new render's declarations.
    if (this.latestKeysMayBeGone) {
      this.latestKeysMayBeGone = false;
      for (const key of [...this.composedText.keys()]) {
        if (++n % STEP === 0) yield;
        if (!this.latest.has(key)) {
          this.composedText.delete(key);
          changed.push(key);
        }
      }
    }
    return changed;
  }

  /** What holds a key's live conditions back, as text: '' when nothing does. */
  private gate(key: string, held: Held): string {
    if (!isGated(held.status)) return '';
    const liveHeld = this.live?.declared.get(key);
    if (liveHeld !== undefined && liveHeld.digest === held.digest) return 'live';
    const failure = this.failure?.hash === this.latestHash ? this.failure : undefined;
    return `${failure ? `${failure.reason}:${failure.message}` : 'pending'}\u0000${this.live === undefined ? 'unknown' : liveHeld?.status.served === true}`;
  }

  private compose(key: string, held: Held): ObjectStatus {
    const { status } = held;
    const liveHeld = this.live?.declared.get(key);
    const isLive = liveHeld !== undefined && liveHeld.digest === held.digest;
    if (isLive || !isGated(status)) return status;
    const failure = this.failure?.hash === this.latestHash ? this.failure : undefined;
    const keepShown = this.live === undefined;
    const hold = (c: DeclaredCondition): DeclaredCondition => {
      if (!c.live || c.status !== 'True') return c;
      if (!failure) return { type: c.type, status: 'Unknown', reason: 'Pending', message: 'waiting for the configuration to be deployed to every instance', live: true, ...(keepShown && { keepShown }) };
      return { type: c.type, status: 'False', reason: failure.reason, message: failure.message, live: true };
    };
    // Nothing deployed since the start: what the instances run is unknown (after a restart, most
    // likely what served the object), so its address is left as the cluster shows it, not taken away.
    const served = status.served === true ? (this.live === undefined ? undefined : liveHeld?.status.served === true) : status.served;
    const { served: _declared, ...rest } = status;
    return {
      ...rest,
      ...(served !== undefined && { served }),
      conditions: status.conditions.map(hold),
      entries: status.entries.map((e) => ({ ...e, conditions: e.conditions.map(hold) })),
    };
  }
}

/** Whether deployments decide part of the status: live conditions, or being served. */
function isGated(status: ObjectStatus): boolean {
  return status.served === true || status.conditions.some((c) => c.live) || status.entries.some((e) => e.conditions.some((c) => c.live));
}
