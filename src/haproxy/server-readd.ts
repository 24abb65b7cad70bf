/**
 * Taking back a server whose deletion still waits. haproxy refuses `del server` while
 * connections remain, and the server then stays, in maintenance, until they close. If
 * the same server is wanted again meanwhile (an endpoint flapping readiness, moved away
 * and back), `add server` would fail on the name still taken; when the server was
 * declared the same way apart from address, weight and state, re-pointing it and
 * letting it out of maintenance gives what the add would have.
 */
import { parseIpAddress } from './plan-config.ts';
import type { RuntimeOp, ServerAddOp, ServerDelOp, ServerRef } from './plan-types.ts';

/**
 * The operations that turn the server `deleted` left in maintenance into `add`, or why
 * it cannot be taken back (then it must be deleted before it is added again).
 */
export function readdOps(deleted: Pick<ServerDelOp, 'settings'>, add: ServerAddOp): { ops: (RuntimeOp & ServerRef)[] } | { reason: string } {
  const where = `server ${add.backend}/${add.server}`;
  const settings = deleted.settings;
  if (settings === undefined) return { reason: `${where}: the settings of the one being deleted are unknown` };
  // `add.args` is the settings, then `weight N` unless the weight is 1 (plan-servers.ts).
  const tail = add.args.slice(settings.length);
  const same = settings.every((w, i) => add.args[i] === w) && (tail.length === 0 || (tail.length === 2 && tail[0] === 'weight'));
  if (!same) return { reason: `${where}: its settings differ from the one being deleted` };
  // Its agent was stopped for the deletion and cannot be told its last state back.
  if (add.agent) return { reason: `${where} has an agent` };
  const ip = parseIpAddress(add.address);
  if (ip?.port === undefined) return { reason: `${where}: its address "${add.address}" has no port` };
  const ref = { backend: add.backend, server: add.server };
  const ops: (RuntimeOp & ServerRef)[] = [
    { kind: 'server-addr', ...ref, host: ip.host, port: ip.port },
    { kind: 'server-weight', ...ref, weight: tail.length === 2 ? Number(tail[1]) : 1 },
  ];
  // Re-pointed before traffic is let in; it is in maintenance already.
  if (add.state !== 'maint') ops.push({ kind: 'server-state', ...ref, state: add.state });
  return { ops };
}
