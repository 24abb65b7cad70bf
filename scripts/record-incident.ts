/**
 * Records the scripted incident of test/replay/incident-scenario.ts to a file:
 *
 *   node scripts/record-incident.ts marble-tests/fixtures/incident.jsonl
 *   haprx replay marble-tests/fixtures/incident.jsonl --marble-test marble-tests/recorded-incident.test.ts
 */
import { recordIncident } from '../test/replay/incident-scenario.ts';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node scripts/record-incident.ts FILE\n');
  process.exit(2);
}
await recordIncident(file, (message) => process.stderr.write(`${message}\n`));
