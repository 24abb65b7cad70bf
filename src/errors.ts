/** The message of anything thrown, for events and logs: stages turn failures into values. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
