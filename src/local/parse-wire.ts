import type { KubeObject } from '../k8s/resource.ts';
import type { Steps } from '../steps.ts';
import type { ManifestProblem, ParsedManifests, SkippedDocument } from './manifests.ts';

/**
 * A parsed file as it crosses from the parse thread to the main thread: what each of
 * its documents gave as JSON text, not as objects. A structured clone of thirty
 * thousand objects costs the parse thread its serialisation and the main thread its
 * reading, in one stretch, and what it makes there is larger: each string of each
 * object its own copy. Strings cross as they are, and JSON.parse on the main thread,
 * document by document with turns of the event loop between (fromWireSteps), is faster
 * than that reading and gives objects as compact as those the main thread parses itself.
 */
export type ParseWire = { ok: true; gave: readonly string[]; digests: readonly string[]; skipped: SkippedDocument[] } | { ok: false; problem: ManifestProblem };

export function toWire(parsed: ParsedManifests): ParseWire {
  if (!parsed.ok) return parsed;
  return { ok: true, gave: parsed.documents.gave.map((given) => JSON.stringify(given)), digests: parsed.documents.digests, skipped: parsed.skipped };
}

/**
 * The parsed file again, yielding after each document. Its objects are those its
 * documents gave, in order, as the same objects: a file read again later takes its
 * unchanged documents' objects from `documents`, and they must be the ones the stores hold.
 */
export function* fromWireSteps(wire: ParseWire): Steps<ParsedManifests> {
  if (!wire.ok) return wire;
  const gave: (KubeObject | KubeObject[])[] = [];
  const objects: KubeObject[] = [];
  for (const text of wire.gave) {
    const given = JSON.parse(text) as KubeObject | KubeObject[];
    gave.push(given);
    if (Array.isArray(given)) objects.push(...given);
    else objects.push(given);
    yield;
  }
  return { ok: true, objects, skipped: wire.skipped, documents: { digests: wire.digests, gave } };
}
