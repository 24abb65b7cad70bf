import { config } from 'rxjs';

/**
 * Reports errors that escaped every handler instead of letting them end the process:
 * an error thrown inside an RxJS subscriber callback (RxJS rethrows it on a timer,
 * which Node treats as fatal) and a promise rejection nobody handled. The graph has
 * its own boundary; this is the net under the adapters around it. Returns the undo.
 *
 * A synchronous throw outside both (an 'uncaughtException') still ends the process:
 * nothing tells what state it left, and Kubernetes restarts the pod.
 */
export function reportStrayErrors(report: (where: string, err: unknown) => void): () => void {
  const previous = config.onUnhandledError;
  config.onUnhandledError = (err: unknown) => report('a stream subscriber', err);
  const onRejection = (reason: unknown) => report('a promise', reason);
  process.on('unhandledRejection', onRejection);
  return () => {
    config.onUnhandledError = previous;
    process.off('unhandledRejection', onRejection);
  };
}
