import type { KubeObject } from '../k8s/resource.ts';
import type { ManifestProblem, ParsedManifests, SkippedDocument } from './manifests.ts';

/**
 * A parsed file as it crosses from the parse thread to the main thread: what its
 * documents gave as one JSON text, not as objects. A structured clone of thirty
 * thousand objects costs the parse thread its serialisation and the main thread its
 * reading, and what it makes there is larger: each string of each object its own copy.
 * One JSON.parse on the main thread is faster than that reading, and gives objects as
 * compact as those the main thread parses itself.
 */
export type ParseWire = { ok: true; gave: string; digests: readonly string[]; skipped: SkippedDocument[] } | { ok: false; problem: ManifestProblem };

export function toWire(parsed: ParsedManifests): ParseWire {
  if (!parsed.ok) return parsed;
  return { ok: true, gave: JSON.stringify(parsed.documents.gave), digests: parsed.documents.digests, skipped: parsed.skipped };
}

/**
 * The parsed file again. Its objects are those its documents gave, in order, as the
 * same objects: a file read again later takes its unchanged documents' objects from
 * `documents`, and they must be the ones the stores hold.
 */
export function fromWire(wire: ParseWire): ParsedManifests {
  if (!wire.ok) return wire;
  const gave = JSON.parse(wire.gave) as (KubeObject | KubeObject[])[];
  const objects: KubeObject[] = [];
  for (const given of gave) {
    if (Array.isArray(given)) objects.push(...given);
    else objects.push(given);
  }
  return { ok: true, objects, skipped: wire.skipped, documents: { digests: wire.digests, gave } };
}
