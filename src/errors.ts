/** The message of anything thrown, for events and logs: stages turn failures into values. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** An error that left a stage of the graph, with the stage's name; the first stage it left names it. */
export class StageError extends Error {
  readonly stage: string;
  override readonly cause: unknown;

  constructor(stage: string, cause: unknown) {
    super(`${stage}: ${errorMessage(cause)}`);
    this.name = 'StageError';
    this.stage = stage;
    this.cause = cause;
  }
}
