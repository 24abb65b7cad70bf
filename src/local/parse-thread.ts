/**
 * The manifest parse thread (parse-worker.ts): parses whole files, one message each,
 * so that reading thirty thousand YAML documents at a start does not hold the main
 * thread, which meanwhile passes on the files already parsed.
 */
import { parentPort } from 'node:worker_threads';
import { parseManifests } from './manifests.ts';
import { type ParseWire, toWire } from './parse-wire.ts';

export interface ParseRequest {
  id: number;
  file: string;
  text: string;
  maxObjectBytes: number;
}

export interface ParseReply {
  id: number;
  parsed: ParseWire;
}

parentPort!.on('message', (request: ParseRequest) => {
  // Not read back from JSON here: the objects leave as JSON text, and the main thread reads them (parse-wire.ts).
  const parsed = parseManifests(request.file, request.text, request.maxObjectBytes, undefined, { readBack: false });
  parentPort!.postMessage({ id: request.id, parsed: toWire(parsed) } satisfies ParseReply);
});
