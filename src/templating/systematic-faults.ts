import type { RenderError } from '../events.ts';

/**
 * Tells a fault of the templates from objects at fault.
 *
 * h.isolate takes a throw as its object's fault and skips the object. But a
 * template typo (`ing.spce.rules`) throws for every object it reads, and
 * skipping them all would deploy a configuration that serves none of them.
 * So each isolation is counted at its site (the template it runs in, the kind
 * of its object and the part, indices left out), and each unexpected error (a
 * TypeError: reading a field of undefined, calling what is not a function) at
 * the template line that threw it. When one line threw for every object
 * isolated at a site, or for at least MIN_OBJECTS of them and more than half,
 * the render fails there as a template fault and the last good configuration
 * stays live. h.skip, h.list and helpers refusing a value say on purpose that
 * the object is at fault, and are never counted.
 *
 * With one object at a site, its failure is the template's too: a broken
 * template must not deploy an empty configuration, and a single hostile object
 * cannot make well-written templates throw a TypeError (the shipped ones are
 * fuzzed for it; the admission webhook refuses an object that fails a render).
 */
export const MIN_OBJECTS = 3;

/** Where an unexpected error was thrown, and its message. */
export interface Thrown {
  template: string;
  line?: number;
  message: string;
}

/** One isolation as enter() counts it: where, of what, which part. */
export interface Isolation {
  template: string;
  subject: unknown;
  part: string | undefined;
}

interface Group {
  site: string;
  thrown: Thrown;
  objects: Set<unknown>;
  names: string[];
}

const NAMES_SHOWN = 3;

export class SystematicFaults {
  /** The objects isolated at each site, by identity (a store hands out the same object for the whole render). */
  private readonly sites = new Map<string, { kind: string; objects: Set<unknown> }>();
  private readonly groups = new Map<string, Group>();
  private readonly siteKeys = new Map<string, Map<string, Map<string, string>>>();
  /** While set, every isolation counted is also noted here (an h.servers call the next render may reuse). */
  recording: Isolation[] | undefined;

  /**
   * Counts an isolation of `subject` at its site and returns the site, or
   * undefined when the subject is not a Kubernetes object (text, a number).
   */
  enter(template: string, subject: unknown, part: string | undefined): string | undefined {
    this.recording?.push({ template, subject, part });
    const kind = kindOf(subject);
    if (kind === undefined) return undefined;
    const site = this.siteOf(template, kind, part ?? '');
    let entry = this.sites.get(site);
    if (!entry) this.sites.set(site, (entry = { kind, objects: new Set() }));
    entry.objects.add(subject);
    return site;
  }

  /**
   * The site's key, made once per template, kind and part: a render at 10k Ingresses
   * counts some 50k isolations, and a key made for each was a tenth of what it allocated.
   */
  private siteOf(template: string, kind: string, part: string): string {
    let byPart = this.siteKeys.get(template);
    if (!byPart) this.siteKeys.set(template, (byPart = new Map()));
    let byKind = byPart.get(part);
    if (!byKind) byPart.set(part, (byKind = new Map()));
    let site = byKind.get(kind);
    if (site === undefined) byKind.set(kind, (site = `${template}\u0000${kind}\u0000${part.replace(/\[\d+\]/g, '[]')}`));
    return site;
  }

  /** Records an unexpected error that an isolation at `site` caught for `subject`, named `name` (`namespace/name`). */
  failed(site: string, subject: unknown, name: string, thrown: Thrown): void {
    const key = `${site}\u0000${thrown.template}\u0000${thrown.line ?? ''}`;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { site, thrown, objects: new Set(), names: [] }));
    if (group.objects.has(subject)) return;
    group.objects.add(subject);
    if (group.names.length < NAMES_SHOWN) group.names.push(name);
  }

  /** The first line that failed as a template fault, as the render's error; undefined when every failure may be its object's. */
  verdict(): RenderError | undefined {
    for (const group of this.groups.values()) {
      const site = this.sites.get(group.site);
      if (!site) continue;
      const failed = group.objects.size;
      const isolated = site.objects.size;
      if (failed < isolated && (failed < MIN_OBJECTS || failed * 2 <= isolated)) continue;
      const more = failed > group.names.length ? ', …' : '';
      const share = failed === isolated ? `every ${site.kind} read there (${failed} of ${isolated}: ` : `${failed} of ${isolated} ${site.kind} objects read there (`;
      const { template, line, message } = group.thrown;
      return {
        template,
        ...(line !== undefined && { line }),
        message: `${message}, thrown for ${share}${group.names.join(', ')}${more}): a fault of the template, not of the objects`,
      };
    }
    return undefined;
  }
}

/** The kind of a Kubernetes object (one with a name), '' when it has none; undefined for anything else. Never throws. */
function kindOf(subject: unknown): string | undefined {
  try {
    if (subject === null || typeof subject !== 'object') return undefined;
    const metadata: unknown = Object.hasOwn(subject, 'metadata') ? (subject as { metadata: unknown }).metadata : undefined;
    if (metadata === null || typeof metadata !== 'object' || !Object.hasOwn(metadata, 'name') || typeof (metadata as { name: unknown }).name !== 'string') return undefined;
    const kind: unknown = Object.hasOwn(subject, 'kind') ? (subject as { kind: unknown }).kind : undefined;
    return typeof kind === 'string' ? kind : '';
  } catch {
    return undefined;
  }
}
