import {
  type Observable,
  type SchedulerLike,
  TimeoutError,
  asyncScheduler,
  catchError,
  concat,
  connect,
  defaultIfEmpty,
  defer,
  from,
  map,
  merge,
  mergeMap,
  of,
  take,
  timeout,
  toArray,
} from 'rxjs';
import type { ControllerEvent, DeployRequest, Deployment, Endpoint, InstanceOutcome, InstanceResult } from '../src/events.ts';
import { errorMessage } from '../src/errors.ts';

const EMPTY_RESULT: InstanceOutcome = { ok: false, reloaded: false, runtimeOps: 0, error: 'the target finished without a result' };

export type DeployEvent = Extract<ControllerEvent, { type: 'DeploymentStarted' | 'InstanceDeployed' | 'InstanceDeployFailed' | 'DeploymentCompleted' }>;

export interface DeployDeps {
  /** Applies the deployment's config to one instance; unsubscribing must abort it. */
  deployTo(endpoint: Endpoint, deployment: Deployment): Observable<InstanceOutcome>;
  scheduler?: SchedulerLike;
}

export interface DeployOptions {
  /** How many instances are deployed to at once; 0 means all. */
  maxParallel: number;
  /** An instance that has not answered by then is reported failed and abandoned. */
  timeoutMs: number;
}

/**
 * Returns the function that runs one deployment: fans out to every endpoint with
 * bounded concurrency, reports each instance as it finishes, then the whole. A
 * failing or hanging instance never holds back the others, and nothing here errors:
 * failures are events.
 */
export function deployer(deps: DeployDeps, options: DeployOptions): (request: DeployRequest) => Observable<DeployEvent> {
  const scheduler = deps.scheduler ?? asyncScheduler;
  let nextId = 1;
  return (request) =>
    defer(() => {
      const deployment: Deployment = { ...request, id: nextId++, startedAt: scheduler.now() };
      const concurrency = options.maxParallel > 0 ? options.maxParallel : Infinity;
      const results$ = from(deployment.endpoints).pipe(mergeMap((endpoint) => deployOne(endpoint, deployment), concurrency));
      return concat(
        of<DeployEvent>({ type: 'DeploymentStarted', deployment }),
        results$.pipe(
          connect((shared$) =>
            merge(
              shared$.pipe(map((result): DeployEvent => ({ type: result.ok ? 'InstanceDeployed' : 'InstanceDeployFailed', deployment, result }))),
              shared$.pipe(
                toArray(),
                map((results): DeployEvent => ({ type: 'DeploymentCompleted', deployment, results, durationMs: scheduler.now() - deployment.startedAt })),
              ),
            ),
          ),
        ),
      );
    });

  function deployOne(endpoint: Endpoint, deployment: Deployment): Observable<InstanceResult> {
    return defer(() => {
      const started = scheduler.now();
      return deps.deployTo(endpoint, deployment).pipe(
        take(1),
        defaultIfEmpty(EMPTY_RESULT),
        timeout({ first: options.timeoutMs, scheduler }),
        catchError((err: unknown) =>
          of<InstanceOutcome>({
            ok: false,
            reloaded: false,
            runtimeOps: 0,
            error: err instanceof TimeoutError ? `no answer within ${options.timeoutMs} ms` : errorMessage(err),
          }),
        ),
        map((outcome): InstanceResult => ({ ...outcome, endpoint, durationMs: scheduler.now() - started })),
      );
    });
  }
}
