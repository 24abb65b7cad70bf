/**
 * Samples how long haprx takes to answer GET /healthz, from a worker thread of its
 * own: the benchmark's main thread writes manifests (YAML) between samples, and a
 * sample taken there would time the benchmark, not haprx. Each sample waits for the
 * previous one, so a stalled event loop shows as one long answer, not as a queue.
 *
 *   const probe = startHealthProbe(port);  ...  const figures = await probe.mark('cold start');
 */
import { request } from 'node:http';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

export interface HealthFigures {
  /** Samples taken in the phase. */
  n: number;
  maxMs: number;
  p99Ms: number;
  /** Answers slower than 100 ms, the budget a liveness probe needs with room to spare. */
  over100ms: number;
  /** Requests with no answer (refused, reset, or none within 5 s), counted once haprx first answered. */
  failed: number;
}

export interface HealthProbe {
  /** The figures since the previous mark (or the start), under this name. */
  mark(phase: string): Promise<HealthFigures>;
  /** Every phase marked so far. */
  readonly phases: Record<string, HealthFigures>;
  stop(): Promise<void>;
}

interface Sample {
  ms: number;
  ok: boolean;
}

function figures(samples: Sample[]): HealthFigures {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const p99 = ms.length === 0 ? 0 : ms[Math.min(ms.length - 1, Math.ceil(0.99 * ms.length) - 1)]!;
  return { n: samples.length, maxMs: Math.round(ms.at(-1) ?? 0), p99Ms: Math.round(p99), over100ms: ms.filter((m) => m > 100).length, failed: samples.filter((s) => !s.ok).length };
}

export function startHealthProbe(port: number, intervalMs = 20): HealthProbe {
  const worker = new Worker(new URL(import.meta.url), { workerData: { port, intervalMs } });
  const phases: Record<string, HealthFigures> = {};
  let waiting: ((samples: Sample[]) => void)[] = [];
  worker.on('message', (samples: Sample[]) => waiting.shift()?.(samples));
  worker.unref();
  return {
    phases,
    mark(phase) {
      return new Promise((resolve) => {
        waiting.push((samples) => {
          phases[phase] = figures(samples);
          resolve(phases[phase]);
        });
        worker.postMessage('mark');
      });
    },
    async stop() {
      waiting = [];
      await worker.terminate();
    },
  };
}

function probeOnce(port: number): Promise<Sample> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (ok: boolean) => resolve({ ms: performance.now() - started, ok });
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => done(true));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('timeout')));
    req.on('error', () => done(false));
    req.end();
  });
}

if (!isMainThread && parentPort) {
  const { port, intervalMs } = workerData as { port: number; intervalMs: number };
  let samples: Sample[] = [];
  let answered = false;
  parentPort.on('message', () => {
    parentPort!.postMessage(samples);
    samples = [];
  });
  for (;;) {
    const sample = await probeOnce(port);
    // Before the listener is up there is nothing to time.
    answered ||= sample.ok;
    if (answered) samples.push(sample);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
