/**
 * The spawn helper's own program (see spawn-helper.ts): it runs the programs its parent
 * asks for over the IPC channel and answers with how each ended. It holds nothing else,
 * so starting a child from here costs the controller nothing.
 */
import { runChild, type ChildRequest } from './child-run.ts';
import type { HelperReply, HelperRequest } from './spawn-helper.ts';

const running = new Map<number, { abort: AbortController; done: Promise<void> }>();

function reply(message: HelperReply): void {
  // The parent may be gone; its children are then killed on 'disconnect'.
  if (process.connected) process.send?.(message);
}

function isRequest(message: unknown): message is HelperRequest {
  return typeof message === 'object' && message !== null && typeof (message as { id?: unknown }).id === 'number';
}

process.on('message', (message: unknown) => {
  if (!isRequest(message)) return;
  if (message.type === 'abort') {
    running.get(message.id)?.abort.abort();
    return;
  }
  const abort = new AbortController();
  const request: ChildRequest = message.request;
  const done = runChild(request, abort.signal, (pid) => reply({ id: message.id, pid })).then(
    (outcome) => reply({ id: message.id, outcome }),
    (err: unknown) => reply({ id: message.id, outcome: { kind: 'spawn', message: `the spawn helper failed: ${String(err)}` } }),
  ).finally(() => running.delete(message.id));
  running.set(message.id, { abort, done });
});

// A Ctrl-C or a SIGTERM to the process group reaches this process too: it is the
// controller's to act on. This one ends with its channel, when the controller stops it
// or is gone, and a signal ending it first would only be reported as a helper lost.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);

// The controller went away: nothing it started may outlive it.
process.on('disconnect', () => {
  for (const r of running.values()) r.abort.abort();
  void Promise.all([...running.values()].map((r) => r.done)).finally(() => process.exit(0));
});
