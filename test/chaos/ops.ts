import fs from 'node:fs';
import path from 'node:path';
import type { CheckResult } from '../../shared/api/retention.ts';
import { describeTree } from '../support/fixtures.ts';
import type { Rng } from './random.ts';
import { mutateTree, PASSPHRASES, type CliRun, type Machine, type World } from './world.ts';

/**
 * The operations the randomized fault suite drives, as a person (or a plan) would run them with the
 * CLI, and what each must leave true. The oracle is the driver's own record: which snapshots a backup
 * reported done and what its sources held then, which were forgotten.
 */
export type OpName =
  | 'backup'
  | 'resume'
  | 'restore'
  | 'forget'
  | 'prune'
  | 'check'
  | 'repair'
  | 'rebalance'
  | 'key'
  | 'weight'
  | 'policy'
  | 'drain'
  | 'unlock';

/** Operations that take the exclusive lock or move packs: a restore beside one may fail (not lie). */
export const EXCLUSIVE: ReadonlySet<OpName> = new Set(['prune', 'rebalance', 'weight', 'policy', 'drain']);
/** Operations a kill -9 is aimed at. */
export const KILLABLE: ReadonlySet<OpName> = new Set([
  'backup',
  'resume',
  'prune',
  'rebalance',
  'repair',
  'key',
  'check',
  'forget',
]);

export class Oracle {
  /** Snapshot id → what its source held when the run that reported it done started. */
  readonly expected = new Map<string, { machine: string; tree: string; step: number }>();
  readonly forgotten = new Set<string>();

  add(id: string, m: Machine, tree: string, step: number): void {
    if (!this.forgotten.has(id)) this.expected.set(id, { machine: m.name, tree, step });
  }

  forget(id: string): void {
    this.forgotten.add(id);
    this.expected.delete(id);
  }

  ids(): string[] {
    return [...this.expected.keys()];
  }

  /** A machine's snapshots, oldest first (in the order their backups reported them done). */
  idsOf(machine: string): string[] {
    return [...this.expected].filter(([, e]) => e.machine === machine).map(([id]) => id);
  }
}

export interface OpContext {
  world: World;
  rng: Rng;
  oracle: Oracle;
  step: number;
  /** No fault on the wire or the servers during this step. */
  clean: () => boolean;
  /** An operation that moves or deletes packs ran beside this one. */
  besideExclusive: boolean;
  /** Kill the process after this long (a kill -9 fault), if set. */
  killAfterMs?: number;
  /** Counts CLI processes run. */
  ran: () => void;
}

export interface OpResult {
  op: OpName;
  machine: string;
  args: string[];
  code: number | null;
  killed: boolean;
  ms: number;
  note?: string;
  violation?: string;
  slow?: string;
}

/** A step's process may run this long: retry windows are 8 s, backups wait a minute for a lock. */
export const STEP_TIMEOUT_MS = 240_000;

/** A crash, as opposed to a failure said in a sentence: a stack trace, an abort, a signal not ours. */
export function crashOf(r: CliRun): string | null {
  if (r.timedOut) return `did not finish within ${STEP_TIMEOUT_MS / 1000} s`;
  if (r.killed) return null;
  if (r.signal) return `died of ${r.signal}`;
  if (/^\s+at .+:\d+:\d+\)?$/m.test(r.stderr) || /Unhandled|uncaught|Assertion/i.test(r.stderr))
    return `crashed: ${r.stderr.slice(0, 2000)}`;
  return null;
}

export const treeOf = (m: Machine) => JSON.stringify(describeTree(m.src));

/** Runs as `m`; a passphrase refused after `key passwd` elsewhere is tried again with the older ones. */
async function run(
  ctx: OpContext,
  m: Machine,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const { world } = ctx;
  let r: CliRun | null = null;
  for (let p = world.passphrase; p >= 0 && p >= world.passphrase - 2; p--) {
    ctx.ran();
    r = await world.cli(m, args, {
      timeoutMs: STEP_TIMEOUT_MS,
      killAfterMs: ctx.killAfterMs,
      env: { CAIRN_PASSPHRASE: PASSPHRASES[p]!, ...env },
    });
    if (!/Wrong passphrase/.test(r.stderr)) break;
  }
  return r!;
}

function result(op: OpName, m: Machine, args: string[], r: CliRun, extra: Partial<OpResult> = {}): OpResult {
  const crash = crashOf(r);
  return {
    op,
    machine: m.name,
    args,
    code: r.code,
    killed: r.killed,
    ms: r.ms,
    ...extra,
    ...(crash ? { violation: `${op} on ${m.name}: ${crash}` } : {}),
    ...(!crash && !extra.violation && r.code !== 0 && !r.killed
      ? { note: r.stderr.trim().slice(0, 300) }
      : {}),
    // Where a slow step's time went (CAIRN_DEBUG_TIMING), for a look afterwards.
    ...(r.ms > 15_000
      ? {
          slow: r.stderr
            .split('\n')
            .filter((l) => l.startsWith('[timing]'))
            .join('; '),
        }
      : {}),
  };
}

export const ops: Record<OpName, (ctx: OpContext, m: Machine) => Promise<OpResult>> = {
  async backup(ctx, m) {
    mutateTree(ctx.rng, m);
    const tree = treeOf(m);
    const args = ['--json', 'backup', m.src, '--chunk-size', '64KiB', '--lock-wait', '1'];
    args.push('--workers', String(ctx.rng.int(1, 2)));
    const r = await run(ctx, m, args);
    if (r.code === 0 && !r.killed) {
      const id = (JSON.parse(r.stdout) as { snapshotId: string }).snapshotId;
      ctx.oracle.add(id, m, tree, ctx.step);
      return result('backup', m, args, r, { note: id });
    }
    m.interrupted = true;
    return result('backup', m, args, r);
  },

  async resume(ctx, m) {
    const tree = treeOf(m);
    const args = ['--json', 'resume', '--lock-wait', '1'];
    const r = await run(ctx, m, args);
    if (r.code === 0 && !r.killed) {
      for (const x of JSON.parse(r.stdout) as { snapshotId: string }[])
        ctx.oracle.add(x.snapshotId, m, tree, ctx.step);
      m.interrupted = false;
    }
    return result('resume', m, args, r);
  },

  async restore(ctx, m) {
    const ids = ctx.oracle.ids();
    if (ids.length === 0) return ops.check(ctx, m);
    const id = ctx.rng.pick(ids);
    return restoreAndCompare(ctx, m, id);
  },

  /**
   * One snapshot by id, or, half the time, what a keep-last policy would drop of this machine's
   * snapshots (as a person's schedule does; it keeps a long run's repository from growing without
   * bound). The ids are the driver's choice, given by id, so the oracle knows exactly what goes even
   * when the command is killed.
   */
  async forget(ctx, m) {
    const ids = ctx.oracle.ids();
    if (ids.length < 4) return ops.backup(ctx, m);
    const mine = ctx.oracle.idsOf(m.name);
    const keep = ctx.rng.int(2, 5);
    const gone =
      ctx.rng.chance(0.5) && mine.length > keep ? mine.slice(0, mine.length - keep) : [ctx.rng.pick(ids)];
    for (const id of gone) ctx.oracle.forget(id);
    const args = ['--json', 'forget', ...gone];
    return result('forget', m, args, await run(ctx, m, args));
  },

  async prune(ctx, m) {
    const args = ['--json', 'prune', ...(ctx.rng.chance(0.5) ? ['--max-unused', '0%'] : [])];
    return result('prune', m, args, await run(ctx, m, args));
  },

  async check(ctx, m) {
    const how = ctx.rng.weighted({ plain: 2, subset: 2, all: 1 });
    const args = [
      '--json',
      'check',
      ...(how === 'subset' ? ['--read-data-subset', '30%'] : how === 'all' ? ['--read-data'] : []),
    ];
    const clean = ctx.clean();
    const r = await run(ctx, m, args);
    const damage = r.code !== null && !r.killed && clean ? damageIn(r.stdout) : null;
    return result(
      'check',
      m,
      args,
      r,
      damage ? { violation: `check on ${m.name} (clean network): ${damage}` } : {},
    );
  },

  /** `cairn unlock` as a person runs it after a crash, whatever other machines are doing. */
  async unlock(ctx, m) {
    const args = ['unlock'];
    return result('unlock', m, args, await run(ctx, m, args));
  },

  async repair(ctx, m) {
    const args = ['repair'];
    return result('repair', m, args, await run(ctx, m, args));
  },

  async rebalance(ctx, m) {
    const args = ['rebalance'];
    return result('rebalance', m, args, await run(ctx, m, args));
  },

  async key(ctx, m) {
    const { world } = ctx;
    if (ctx.rng.chance(0.4) && world.passphrase < PASSPHRASES.length - 1) {
      const next = world.passphrase + 1;
      const args = ['key', 'passwd'];
      const r = await run(ctx, m, args, { CAIRN_NEW_PASSPHRASE: PASSPHRASES[next]! });
      // Once the new slot may exist, machines try it first (and fall back to the older ones).
      world.passphrase = next;
      return result('key', m, args, r);
    }
    const args = ['key', 'add'];
    const r = await run(ctx, m, args, { CAIRN_NEW_PASSPHRASE: `an extra passphrase ${ctx.step}` });
    if (r.code !== 0 || r.killed) return result('key', m, args, r);
    const ls = await run(ctx, m, ['--json', 'key', 'ls']);
    const extra =
      ls.code === 0 ? (JSON.parse(ls.stdout) as { id: string; current: boolean; kind: string }[]) : [];
    const removable = extra.filter((k) => !k.current && k.kind === 'passphrase');
    if (removable.length < 3) return result('key', m, args, r);
    const rm = ['key', 'rm', ctx.rng.pick(removable).id];
    return result('key', m, rm, await run(ctx, m, rm));
  },

  async policy(ctx, m) {
    // Two copies of each pack, or 2+1 erasure coding: either survives one of the three members lost.
    const ec = ctx.rng.chance(0.5);
    const args = ec
      ? ['policy', '--ec', '2+1', '--write-quorum', '2']
      : ['policy', '--replicas', '2', '--write-quorum', '1'];
    const r = await run(ctx, m, args);
    if (r.code === 0 && !r.killed) ctx.world.policy = ec ? { k: 2 } : { copies: 2 };
    return result('policy', m, args, r);
  },

  async drain(ctx, m) {
    const member = ctx.rng.pick(ctx.world.members);
    // A drained member takes no new copies; it is made active again at once or later.
    const args = ctx.rng.chance(0.5)
      ? ['target', 'drain', member.name]
      : ['target', 'set', member.name, '--active'];
    return result('drain', m, args, await run(ctx, m, args));
  },

  async weight(ctx, m) {
    const member = ctx.rng.pick(ctx.world.members);
    const args = ['target', 'set', member.name, '--weight', String(ctx.rng.pick([50, 100, 200]))];
    return result('weight', m, args, await run(ctx, m, args));
  },
};

/** Restores `id` on `m` into a fresh folder and compares it with what the oracle recorded. */
export async function restoreAndCompare(ctx: OpContext, m: Machine, id: string): Promise<OpResult> {
  const want = ctx.oracle.expected.get(id)!;
  const dest = path.join(ctx.world.root, 'restores', `${ctx.step}-${m.name}-${id}`);
  const args = ['restore', id, '--to', dest];
  const clean = ctx.clean();
  const r = await run(ctx, m, args);
  let violation: string | undefined;
  try {
    if (r.code === 0 && !r.killed) {
      const got = JSON.stringify(describeTree(path.join(dest, want.machine)));
      if (got !== want.tree)
        violation = `restore of ${id} (machine ${want.machine}, step ${want.step}) on ${m.name} is not what was backed up: ${firstDifference(want.tree, got)}`;
    } else if (clean && !ctx.besideExclusive && !r.killed)
      violation = `restore of ${id} on ${m.name} failed on a clean network: ${r.stderr.slice(0, 600)}`;
  } finally {
    fs.rmSync(dest, { recursive: true, force: true });
  }
  return result('restore', m, args, r, violation ? { violation } : {});
}

/** What a check's report says is damaged (nothing in the buckets is ever damaged here), or null. */
export function damageIn(stdout: string): string | null {
  let r: CheckResult;
  try {
    r = JSON.parse(stdout) as CheckResult;
  } catch {
    return null;
  }
  if (!Array.isArray(r.problems)) return null;
  const bad = r.problems.filter((p) =>
    [
      'damaged-blob',
      'damaged-copy',
      'damaged-shard',
      'pack-header',
      'missing-pack',
      'unreadable-tree',
    ].includes(p.kind),
  );
  if (bad.length)
    return `${bad.length} problems: ${bad
      .slice(0, 3)
      .map((p) => p.message)
      .join('; ')}`;
  if (r.damaged.length)
    return `damaged snapshots ${r.damaged.map((d) => `${d.snapshot}: ${d.files.slice(0, 3).join(', ')}`).join('; ')}`;
  return null;
}

function firstDifference(want: string, got: string): string {
  const a = JSON.parse(want) as Record<string, unknown>;
  const b = JSON.parse(got) as Record<string, unknown>;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
    if (JSON.stringify(a[k]) !== JSON.stringify(b[k]))
      return `${k}: expected ${JSON.stringify(a[k])}, got ${JSON.stringify(b[k])}`;
  return 'same entries, other order';
}
