/** The server part of the deployment plan: one backend's servers, before and after. */
import type { ConfigLine, HaproxyConfig, Section } from './config.ts';
import { balanceOf, compareStrings, defaultsChain, parseIpAddress, sectionLabel } from './plan-config.ts';
import type { IpAddress } from './plan-config.ts';
import {
  PRELOADED_FILE_KEYWORDS,
  RUNTIME_SERVER_KEYWORDS,
  effectiveServer,
  groupOptions,
} from './plan-server-options.ts';
import type { EffectiveServer, OptionGroup, ServerState } from './plan-server-options.ts';
import type { RuntimeOp, ServerAddOp, ServerDelOp, ServerRef } from './plan-types.ts';
import { MAX_CLI_WORDS, addServerWords } from './runtime-commands.ts';

/** The comment word that marks a server for draining (see plan.ts). */
export const DRAIN_MARKER = 'haprx:drain';

export interface ServerDecl {
  name: string;
  line: ConfigLine;
  address: string;
  ip: IpAddress | undefined;
  /** Own words plus the default-server words in force, for comparing unreadable servers. */
  rawContext: string;
  /** Undefined when a setting could not be read. */
  effective: EffectiveServer | undefined;
  problem: string | undefined;
  state: ServerState;
  explicitId: boolean;
}

/** The servers of a backend or listen section with the settings they really get. */
export function collectServers(config: HaproxyConfig, section: Section): ServerDecl[] {
  const inherited: string[][] = [];
  for (const d of defaultsChain(config, section)) {
    for (const l of d.lines) if (l.keyword === 'default-server') inherited.push(l.args);
  }
  const servers: ServerDecl[] = [];
  for (const line of section.lines) {
    if (line.keyword === 'default-server') {
      // Applies to the servers declared after it only.
      inherited.push(line.args);
      continue;
    }
    if (line.keyword !== 'server') continue;
    const [name = '', address = '', ...own] = line.args;
    const words = [...inherited.flat(), ...own];
    const grouped = groupOptions(words);
    const ip = parseIpAddress(address);
    const effective = 'groups' in grouped ? effectiveServer(grouped.groups, ip !== undefined) : undefined;
    const drain = line.comment.split(/\s+/).includes(DRAIN_MARKER);
    servers.push({
      name,
      line,
      address,
      ip,
      rawContext: JSON.stringify([inherited, own]),
      effective,
      problem: 'error' in grouped ? grouped.error : address === '' ? 'no address' : undefined,
      state: effective?.disabled ? 'maint' : drain ? 'drain' : 'ready',
      explicitId: (effective?.settings ?? []).some((g) => g[0] === 'id'),
    });
  }
  return servers;
}

/** What the running process loaded and what refers to its servers, for adds and deletes. */
export interface RunningFacts {
  /** `keyword\0file` of every file server lines load (crt, ca-file, crl-file). */
  loadedFiles: { has(key: string): boolean };
  /** `backend/server` of every server some `track` points at. */
  tracked: { has(key: string): boolean };
}

/** The facts as counts, so that the facts of an edited configuration follow from its edits. */
interface CountedFacts {
  loadedFiles: Map<string, number>;
  tracked: Map<string, number>;
}

// Sections without any of these words hold nothing for RunningFacts and are not read.
const FACT_WORDS = /\b(track|ca-file|crl-file|crt)\b/;

/** Each configuration's facts, once found: kept as long as the configuration is. */
const factsOf = new WeakMap<HaproxyConfig, CountedFacts>();

export function runningFacts(config: HaproxyConfig): RunningFacts {
  let facts = factsOf.get(config);
  if (!facts) {
    facts = { loadedFiles: new Map(), tracked: new Map() };
    for (const section of config.sections) countFacts(facts, section, 1);
    factsOf.set(config, facts);
  }
  return facts;
}

/**
 * The facts of `next`, made from `previous` by replacing the sections `pairs` name
 * (`was` by `is`), from those of `previous` when they are known: the sections the
 * edits touch are read again, not the whole configuration.
 */
export function carryFacts(previous: HaproxyConfig, next: HaproxyConfig, pairs: readonly { was: Section; is: Section }[]): void {
  const known = factsOf.get(previous);
  if (!known || factsOf.has(next)) return;
  const facts = { loadedFiles: new Map(known.loadedFiles), tracked: new Map(known.tracked) };
  for (const { was, is } of pairs) {
    countFacts(facts, was, -1);
    countFacts(facts, is, 1);
  }
  factsOf.set(next, facts);
}

function countFacts(facts: CountedFacts, section: Section, sign: 1 | -1): void {
  if (!FACT_WORDS.test(section.text)) return;
  const count = (map: Map<string, number>, key: string) => {
    const n = (map.get(key) ?? 0) + sign;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  };
  for (const line of section.lines) {
    if (line.keyword !== 'server' && line.keyword !== 'default-server') continue;
    line.args.forEach((word, i) => {
      const value = line.args[i + 1];
      if (value === undefined) return;
      if (PRELOADED_FILE_KEYWORDS.has(word)) count(facts.loadedFiles, `${word}\0${value}`);
      if (word === 'track') count(facts.tracked, value.includes('/') ? value : `${section.name}/${value}`);
    });
  }
}

const settingsKey = (e: EffectiveServer) => JSON.stringify(e.settings);
const validWeight = (w: string) => /^\d{1,3}$/.test(w) && Number(w) <= 256;
const flat = (groups: readonly OptionGroup[]) => groups.flat();

export interface ServerPlan {
  reasons: string[];
  /** Deletes that must run before the adds: an added server takes the id they free. */
  earlyDels: ServerDelOp[];
  /** Per server, in the order they must run; the caller arranges servers into phases. */
  adds: ServerAddOp[];
  changes: (RuntimeOp & ServerRef)[][];
  dels: ServerDelOp[];
}

/** Why a server cannot be created at runtime to match a fresh start, if so. */
function addProblem(decl: ServerDecl, op: ServerAddOp, running: RunningFacts): string | undefined {
  if (decl.problem !== undefined) return decl.problem;
  if (!decl.ip) return `its address "${decl.address}" is not an IP literal (added servers never resolve names)`;
  const settings = decl.effective!.settings;
  for (const group of settings) {
    const keyword = group[0]!;
    if (keyword === 'track') return 'it uses "track", which fails when the tracked server was added at runtime';
    if (!RUNTIME_SERVER_KEYWORDS.has(keyword)) return `it uses "${keyword}", which "add server" does not accept`;
    if (PRELOADED_FILE_KEYWORDS.has(keyword) && !running.loadedFiles.has(`${keyword}\0${group[1]}`)) {
      return `its ${keyword} "${group[1]}" is not loaded by the running configuration`;
    }
  }
  if (!validWeight(decl.effective!.weight)) return `its weight "${decl.effective!.weight}" is not a number from 0 to 256`;
  const words = addServerWords(op);
  if (words.some((w) => w === '')) return 'it has an empty setting value, which the runtime API cannot carry';
  if (words.length > MAX_CLI_WORDS) return `its "add server" line would exceed the CLI's ${MAX_CLI_WORDS} words`;
  return undefined;
}

/** Plans one backend whose lines other than `server` lines are unchanged. */
export function planServers(
  section: Section,
  before: ServerDecl[],
  after: ServerDecl[],
  config: HaproxyConfig,
  /** Read only when a server is added or removed. */
  running: () => RunningFacts,
): ServerPlan {
  const label = sectionLabel(section);
  const backend = section.name;
  const plan: ServerPlan = { reasons: [], earlyDels: [], adds: [], changes: [], dels: [] };
  const fail = (reason: string) => plan.reasons.push(`${label}: ${reason}`);
  const byName = (list: ServerDecl[], which: string) => {
    const map = new Map<string, ServerDecl>();
    for (const s of list) {
      if (map.has(s.name)) fail(`server ${s.name} is declared twice in the ${which} configuration`);
      map.set(s.name, s);
    }
    return map;
  };
  const old = byName(before, 'previous');
  const next = byName(after, 'new');
  const balance = balanceOf(config, section);
  const names = [...new Set([...old.keys(), ...next.keys()])].sort(compareStrings);
  const added = names.filter((n) => !old.has(n));
  const removed = names.filter((n) => !next.has(n));

  if (added.length > 0 || removed.length > 0) {
    const which = [...added.map((n) => `server ${n} added`), ...removed.map((n) => `server ${n} removed`)].join(', ');
    if (!balance.dynamic) {
      fail(`uses ${balance.description}, which cannot take dynamic servers (${which})`);
    } else if (balance.algorithm === 'first' && ![...before, ...after].every((s) => s.explicitId)) {
      // `first` picks servers by id; runtime ids reuse freed numbers, a fresh start numbers by line order.
      fail(`uses balance first and not every server has an "id", so runtime changes would order servers differently (${which})`);
    }
  }

  // Ids the running process gave servers are only known when every server carries one.
  const allIds = [...before, ...after].every((s) => s.explicitId);
  const idOf = (s: ServerDecl) => s.effective?.settings.findLast((g) => g[0] === 'id')?.[1];
  const takenIds = new Set<string>();

  for (const name of added) {
    const decl = next.get(name)!;
    const id = idOf(decl);
    if (id !== undefined) {
      if (!allIds) {
        fail(`server ${name} cannot be added at runtime: its "id ${id}" may be taken by an id the running process assigned (give every server an id)`);
        continue;
      }
      takenIds.add(id);
    }
    const settings = decl.effective?.settings ?? [];
    const weight = decl.effective?.weight ?? '1';
    const op: ServerAddOp = {
      kind: 'server-add',
      backend,
      server: name,
      address: decl.address,
      args: [...flat(settings), ...(weight === '1' ? [] : ['weight', weight])],
      state: decl.state,
      health: settings.some((g) => g[0] === 'check'),
      agent: settings.some((g) => g[0] === 'agent-check'),
    };
    const problem = addProblem(decl, op, running());
    if (problem !== undefined) fail(`server ${name} cannot be added at runtime: ${problem}`);
    else plan.adds.push(op);
  }

  for (const name of removed) {
    const decl = old.get(name)!;
    if (running().tracked.has(`${backend}/${name}`)) fail(`server ${name} cannot be deleted at runtime: another server tracks it`);
    else {
      const agent = (decl.effective?.settings ?? []).some((g) => g[0] === 'agent-check');
      const id = idOf(decl);
      const settings = decl.effective ? { settings: flat(decl.effective.settings) } : {};
      (id !== undefined && takenIds.has(id) ? plan.earlyDels : plan.dels).push({ kind: 'server-del', backend, server: name, agent, ...settings });
    }
  }

  for (const name of names) {
    const a = old.get(name);
    const b = next.get(name);
    if (!a || !b) continue;
    const ref = { backend, server: name };
    if (!a.effective || !b.effective) {
      if (a.address !== b.address || a.rawContext !== b.rawContext || a.state !== b.state) {
        fail(`server ${name} changed and its settings cannot be read (${b.problem ?? a.problem})`);
      }
      continue;
    }
    if (settingsKey(a.effective) !== settingsKey(b.effective)) {
      fail(`server ${name} changed in more than address, weight and state: "${a.line.text}" became "${b.line.text}"`);
      continue;
    }
    const ops: (RuntimeOp & ServerRef)[] = [];
    if (a.address !== b.address) {
      if (a.ip?.port === undefined || b.ip?.port === undefined) {
        fail(`server ${name} address "${a.address}" → "${b.address}" cannot change at runtime (IP literal with port needed)`);
      } else {
        ops.push({ kind: 'server-addr', ...ref, host: b.ip.host, port: b.ip.port });
      }
    }
    if (a.effective.weight !== b.effective.weight) {
      if (!validWeight(b.effective.weight)) fail(`server ${name} weight "${b.effective.weight}" is not a number from 0 to 256`);
      else if (!balance.dynamic) fail(`uses ${balance.description}, whose server weights cannot change at runtime (server ${name})`);
      else ops.push({ kind: 'server-weight', ...ref, weight: Number(b.effective.weight) });
    }
    if (a.state !== b.state) {
      const state: RuntimeOp & ServerRef = { kind: 'server-state', ...ref, state: b.state };
      // Leave traffic before re-pointing a server, re-point it before letting traffic in.
      if (b.state === 'ready') ops.push(state);
      else ops.unshift(state);
    }
    if (ops.length > 0) plan.changes.push(ops);
  }
  return plan;
}
