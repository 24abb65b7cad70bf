/**
 * Runs one Data Plane API double in its own process, as a real instance runs on
 * its own machine: benchmarks and timing tests measure haprx, not an event loop
 * shared with ten doubles. Options come as JSON in argv[2]; the double's
 * addresses go to stdout as one JSON line; SIGTERM stops it.
 */
import { startDataplaneDouble } from './index.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as Parameters<typeof startDataplaneDouble>[0];
const double = await startDataplaneDouble(options);
process.stdout.write(`${JSON.stringify({ url: double.url, root: double.root, configFile: double.configFile, masterSocket: double.haproxy.masterSocket, storageDirs: double.storageDirs })}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  double.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop);
