/**
 * A parse thread that answers every file with a reply that cannot be read (its JSON
 * text cut short), for the tests of what ParseWorker does with such a reply.
 */
import { parentPort } from 'node:worker_threads';

parentPort!.on('message', (request: { id: number }) => {
  parentPort!.postMessage({ id: request.id, parsed: { ok: true, gave: ['{"apiVersion":"v1","kind":"Serv'], digests: ['x'], skipped: [] } });
});
