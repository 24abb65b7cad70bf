/**
 * The manifest parse thread (parse-worker.ts): parses whole files, one message each,
 * so that reading thirty thousand YAML documents at a start does not hold the main
 * thread, which meanwhile passes on the files already parsed.
 */
import { parentPort } from 'node:worker_threads';
import { type ParsedManifests, parseManifests } from './manifests.ts';

export interface ParseRequest {
  id: number;
  file: string;
  text: string;
  maxObjectBytes: number;
}

export interface ParseReply {
  id: number;
  parsed: ParsedManifests;
}

parentPort!.on('message', (request: ParseRequest) => {
  parentPort!.postMessage({ id: request.id, parsed: parseManifests(request.file, request.text, request.maxObjectBytes) } satisfies ParseReply);
});
