/**
 * The test ports of test/support/ports.ts. A test often takes two ports before anything
 * binds either (haproxy's and haprx's health port): the second pick must not be the first,
 * or one of the two listeners fails with "Address already in use".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freePort } from '../support/ports.ts';

describe('test ports', () => {
  it('never hands out a port twice in one process, even before anything binds it', async () => {
    // 2,000 picks in a range of about 12,000 ports: a pick that ignored the earlier ones
    // would repeat one about 150 times over.
    const ports: number[] = [];
    for (let i = 0; i < 2_000; i++) ports.push(await freePort());
    assert.equal(new Set(ports).size, ports.length, 'every port is new');
    for (const port of ports) assert.ok(port >= 20_000 && port < 65_536, `${port} is a TCP port above 20000`);
  });
});
