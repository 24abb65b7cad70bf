/**
 * What ran in each stall of haprx's event loop: the stalls bench/stall-probe.ts wrote,
 * matched against the CPU profile of the same run (both on the monotonic clock). For
 * each stall, the functions with the most samples, and the outermost and innermost
 * frames of haprx's own code they ran under.
 *
 *   PROFILE_DIR=/tmp/p SIZES=10000 npm run bench:scale
 *   node bench/stalls.ts /tmp/p/CPU.*.0.001.cpuprofile /tmp/p/stalls-*.txt
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [profileFile, stallsFile] = process.argv.slice(2);
if (!profileFile || !stallsFile) {
  process.stderr.write('usage: node bench/stalls.ts <main thread .cpuprofile> <stalls-<pid>.txt>\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
const ours = (n: ProfileNode) => /\/(src|streams)\//.test(n.callFrame.url);

let t = profile.startTime;
const samples = profile.samples.map((id, i) => ({ id, t: (t += profile.timeDeltas[i]!) }));
const top = (counts: Map<string, number>, n: number) => [...counts].sort((a, b) => b[1] - a[1]).slice(0, n);
const add = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

for (const line of readFileSync(stallsFile, 'utf8').split('\n').filter(Boolean)) {
  const [end, ms] = line.split(' ').map(Number) as [number, number];
  const from = end - ms * 1000;
  const inside = samples.filter((s) => s.t >= from && s.t <= end);
  const self = new Map<string, number>();
  const under = new Map<string, number>();
  for (const s of inside) {
    const stack: ProfileNode[] = [];
    for (let id: number | undefined = s.id; id !== undefined; id = parent.get(id)) stack.push(byId.get(id)!);
    add(self, name(stack[0]!));
    const own = stack.filter(ours);
    add(under, own.length > 0 ? `${name(own.at(-1)!)} … ${name(own[0]!)}` : '(no frame of haprx)');
  }
  process.stdout.write(`\nstall of ${ms} ms at +${((from - profile.startTime) / 1e6).toFixed(2)} s (${inside.length} samples)\n`);
  for (const [k, v] of top(self, 5)) process.stdout.write(`  self  ${String(v).padStart(4)}  ${k}\n`);
  for (const [k, v] of top(under, 4)) process.stdout.write(`  under ${String(v).padStart(4)}  ${k}\n`);
}
