/** Counts turns of the event loop (a setImmediate each, at most 1,000) until stopped; stop() says how many. */
export function turnCounter(): { stop(): number } {
  let turns = 0;
  let stopped = false;
  const tick = () => {
    turns++;
    if (!stopped && turns < 1_000) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop: () => {
      stopped = true;
      return turns;
    },
  };
}
