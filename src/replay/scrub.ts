/**
 * What a recording must not hold: the values of Secrets, credentials in configurations
 * and private keys. A replay needs none of them: renders, validations and deployments
 * are replayed from their recorded outcomes, not done again.
 */
import type { KubeObject, ResourceChange } from '../k8s/resource.ts';
import { REDACTED, redactHaproxyConfig, redactPem, safeAddress } from '../observability/redact.ts';
import type { RenderedConfig, ServerSet } from '../templating/rendered.ts';

type Scrub = (text: string) => string;

/** A Secret keeps its keys, not its values; other objects lose what `scrub` blanks out. */
export function scrubObject(object: KubeObject, scrub: Scrub): KubeObject {
  const { managedFields: _managed, ...metadata } = object.metadata;
  const copy: KubeObject = { ...object, metadata };
  if (object.kind === 'Secret') {
    for (const field of ['data', 'stringData'] as const) {
      const values = object[field];
      if (values !== null && typeof values === 'object') copy[field] = Object.fromEntries(Object.keys(values).map((key) => [key, REDACTED]));
    }
    // kubectl apply keeps the whole object, values too, in an annotation.
    if (metadata.annotations) {
      const { 'kubectl.kubernetes.io/last-applied-configuration': _applied, ...annotations } = metadata.annotations;
      copy.metadata = { ...metadata, annotations };
    }
  }
  return scrubStrings(copy, scrub);
}

export function scrubChange(change: ResourceChange, scrub: Scrub): ResourceChange {
  switch (change.type) {
    case 'upsert':
    case 'delete':
      return { ...change, object: scrubObject(change.object, scrub) };
    case 'replace':
      return { ...change, objects: change.objects.map((o) => scrubObject(o, scrub)) };
    default:
      return scrubStrings(change, scrub);
  }
}

/**
 * A configuration without credentials, private keys or Secret values. The server sets
 * point into haproxy.cfg: each piece between them is scrubbed on its own and their
 * offsets follow, so that the fast path reads the same server lines in a replay.
 */
export function scrubConfig(config: RenderedConfig, scrub: Scrub): Omit<RenderedConfig, 'hash'> {
  const text = (s: string) => scrub(redactHaproxyConfig(s));
  const aux = (files: Readonly<Record<string, string>>) => Object.fromEntries(Object.entries(files).map(([name, content]) => [name, scrub(redactPem(content))]));
  const { main, serverSets } = config;
  let scrubbedMain: string;
  let sets: ServerSet[] | undefined;
  if (serverSets && serverSets.sets.length > 0) {
    const ordered = [...serverSets.sets].sort((a, b) => a.start - b.start);
    let out = '';
    let pos = 0;
    sets = [];
    for (const set of ordered) {
      if (set.start < pos) return scrubConfig({ ...config, serverSets: undefined }, scrub);
      out += text(main.slice(pos, set.start));
      const lines = text(main.slice(set.start, set.end));
      sets.push({ ...set, start: out.length, end: out.length + lines.length });
      out += lines;
      pos = set.end;
    }
    scrubbedMain = out + text(main.slice(pos));
  } else {
    scrubbedMain = text(main);
  }
  return {
    main: scrubbedMain,
    maps: aux(config.maps),
    files: aux(config.files),
    certs: aux(config.certs),
    ...(config.referencing && { referencing: config.referencing }),
    ...(serverSets && { serverSets: { ...serverSets, sets: sets ?? serverSets.sets } }),
  };
}

/** A copy with `scrub` applied to every string and credentials taken out of URLs. */
export function scrubStrings<T>(value: T, scrub: Scrub): T {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? scrubText(v, scrub) : v))) as T;
}

export function scrubText(text: string, scrub: Scrub): string {
  return scrub(urlsWithoutCredentials(text));
}

const URL_WITH_USER = /\b[a-z][a-z0-9+.-]*:\/\/[^\s/@]+@[^\s]*/gi;

function urlsWithoutCredentials(text: string): string {
  return text.includes('@') ? text.replace(URL_WITH_USER, (url) => safeAddress(url)) : text;
}
