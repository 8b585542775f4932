import type { Rng } from './random.ts';
import type { Member, World } from './world.ts';

/** The kinds of fault the suite injects, each counted when it took effect. */
export const FAULT_KINDS = [
  'kill',
  'pause',
  'serverKill',
  'http503',
  'truncated',
  'flipped',
  'latency',
  'clockSkew',
  'deleted',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export type FaultCounts = Record<FaultKind, number>;

export const noFaults = (): FaultCounts => Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as FaultCounts;

/** What a step's faults were, for its log line. */
export interface StepFaultPlan {
  wire?: {
    member: string;
    kind: 'pause' | 'serverKill' | 'http503' | 'truncated' | 'flipped' | 'latency';
    atMs: number;
    forMs: number;
    rate: number;
  };
}

/**
 * Draws the faults on the wire and the servers for one step and puts them in place; the returned
 * function ends them (servers running again, proxies clean) and adds what took effect to `counts`.
 */
export function planWireFault(rng: Rng, world: World): StepFaultPlan {
  if (!rng.chance(0.6)) return {};
  const s3 = world.members.filter((m) => m.server);
  const member = rng.pick(s3).name;
  const kind = rng.weighted({ pause: 3, serverKill: 4, http503: 2, truncated: 2, flipped: 2, latency: 3 });
  return { wire: { member, kind, atMs: rng.int(0, 600), forMs: rng.int(1000, 5000), rate: rng.next() } };
}

export function startWireFault(
  plan: StepFaultPlan,
  world: World,
  rng: Rng,
  counts: FaultCounts,
): () => Promise<void> {
  const f = plan.wire;
  if (!f) return async () => {};
  const m = world.members.find((x) => x.name === f.member)!;
  const proxy = m.proxy!;
  const before = { ...proxy.corrupted, r503: count503(m) };
  const timers: NodeJS.Timeout[] = [];
  let fired = false;
  let restarting: Promise<void> | null = null;
  const at = (ms: number, fn: () => void) => timers.push(setTimeout(fn, ms));
  switch (f.kind) {
    case 'http503':
      proxy.failNext(1 + Math.floor(f.rate * 8), 503);
      break;
    case 'truncated':
      proxy.setCorruption({ truncate: 0.05 + f.rate * 0.2, random: () => rng.next() });
      break;
    case 'flipped':
      proxy.setCorruption({ flip: 0.03 + f.rate * 0.2, random: () => rng.next() });
      break;
    case 'latency':
      // From atMs for forMs, like the others: a whole step under it made any command with many round
      // trips look hung (seed 3900's rebalance).
      at(f.atMs, () => {
        proxy.setDelay(20 + Math.floor(f.rate * 400));
        fired = true;
        at(f.forMs, () => proxy.setDelay(0));
      });
      break;
    case 'pause':
      at(f.atMs, () => {
        fired = signal(m, 'SIGSTOP');
        at(f.forMs, () => void signal(m, 'SIGCONT'));
      });
      break;
    case 'serverKill':
      at(f.atMs, () => {
        fired = true;
        restarting = m
          .server!.kill()
          .then(
            () => new Promise<void>((r) => setTimeout(() => void m.server!.restart().then(r, r), f.forMs)),
          );
      });
      break;
  }
  return async () => {
    for (const t of timers) clearTimeout(t);
    signal(m, 'SIGCONT');
    if (restarting) await restarting;
    proxy.setCorruption({});
    proxy.setDelay(0);
    proxy.clearFaults();
    if (f.kind === 'truncated') counts.truncated += proxy.corrupted.truncated - before.truncated;
    else if (f.kind === 'flipped') counts.flipped += proxy.corrupted.flipped - before.flipped;
    else if (f.kind === 'http503') counts.http503 += count503(m) - before.r503;
    else if (fired) counts[f.kind]++;
  };
}

function signal(m: Member, sig: NodeJS.Signals): boolean {
  try {
    process.kill(m.server!.pid, sig);
    return true;
  } catch {
    return false;
  }
}

function count503(m: Member): number {
  return m.proxy!.stats.requests.filter((r) => r.status === 503).length;
}

/** A machine's clock set off by up to an hour either way (or right again). */
export function skewClock(rng: Rng, world: World, counts: FaultCounts): string {
  const m = rng.pick(world.machines);
  m.clockMs = rng.chance(0.25) ? 0 : rng.int(-3600, 3600) * 1000;
  counts.clockSkew++;
  return `${m.name} clock ${m.clockMs >= 0 ? '+' : ''}${Math.round(m.clockMs / 1000)} s`;
}

const PREFIXES = ['keys/', 'index/', 'snapshots/', 'data/', 'pools/', 'revoked/'];

/**
 * Deletes a few objects from one member, within what the policy tolerates: only objects another member
 * holds under the same name (2 copies of every pack; metadata on every member). A lifecycle rule, a
 * partial restore of a bucket, a mistake.
 */
export async function deleteWithinTolerance(rng: Rng, world: World, counts: FaultCounts): Promise<string> {
  const m = rng.pick(world.members);
  const prefix = rng.pick(PREFIXES);
  const keys = await world.list(m, prefix);
  const elsewhere = new Set<string>();
  for (const o of world.members) if (o !== m) for (const k of await world.list(o, prefix)) elsewhere.add(k);
  // A whole copy (or any metadata) another member holds under the same name; a shard of an
  // erasure-coded pack whose other members hold k shards of it (2+1: both others).
  const shardsElsewhere = (key: string) => {
    const m2 = /^(data\/[0-9a-f]{2}\/[0-9a-f]{64})\.[0-9a-f]{2}$/.exec(key);
    if (!m2) return false;
    return [...elsewhere].filter((k) => k.startsWith(`${m2[1]}.`)).length >= 2;
  };
  const candidates = keys.filter((k) => elsewhere.has(k) || shardsElsewhere(k));
  const gone: string[] = [];
  for (let i = rng.int(1, 3); i > 0 && candidates.length; i--) {
    const k = candidates.splice(rng.int(0, candidates.length - 1), 1)[0]!;
    await world.deleteObject(m, k);
    gone.push(k);
  }
  counts.deleted += gone.length;
  return `${m.name}: deleted ${gone.join(', ') || 'nothing (no object of ' + prefix + ' held elsewhere)'}`;
}
