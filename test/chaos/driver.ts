import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  deleteWithinTolerance,
  noFaults,
  planWireFault,
  skewClock,
  startWireFault,
  type FaultCounts,
} from './faults.ts';
import {
  EXCLUSIVE,
  KILLABLE,
  Oracle,
  ops,
  restoreAndCompare,
  treeOf,
  type OpContext,
  type OpName,
  type OpResult,
} from './ops.ts';
import { Rng } from './random.ts';
import { World, type Machine } from './world.ts';

/**
 * The randomized fault suite (issue 29), in the spirit of Kopia's robustness tests and of deterministic
 * simulation: a seeded driver runs random operations from three machines on a pool of two S3 servers
 * and a folder, injects faults at random points (kill -9, a server paused or killed, 503s, bodies cut
 * short or with a byte flipped, latency, clocks off by up to an hour, objects deleted from one member
 * within the policy's tolerance), and checks after each step and at every settling point that nothing
 * the promise covers broke: every snapshot a backup reported done restores byte-identical, no healthy
 * blob is reported damaged, check --read-data agrees with the oracle, no command hangs past its bound,
 * every lock is released or removed by its machine's next run, and the sources are untouched. The same
 * seed gives the same step list (`--seed`); timings differ from run to run.
 */
export interface ChaosOptions {
  seed: number;
  /** Stop after this many steps, or after this long, whichever comes first. */
  steps?: number;
  minutes?: number;
  /** Steps between settling points (faults off, repair, check --read-data on every machine). */
  settleEvery?: number;
  /** One line per step. */
  log?: (line: string) => void;
  /** Where the step list is written (JSON lines); default in the temporary folder. */
  logFile?: string;
  /** Keep the world's folder when a violation is found. */
  keep?: boolean;
  /** Machines (data folders with their own sources and clocks): 3 unless said (at most 6). */
  machines?: number;
  /**
   * After the step's first operation, the chance of each further one on another machine at once:
   * [0.6, 0.3] unless said (a second one 60 % of the time, a third 30 % of those).
   */
  together?: number[];
  /** The chance, before each step, of a clock set off and of objects deleted from a member: 0.07 unless said. */
  between?: number;
}

export interface ChaosReport {
  seed: number;
  steps: number;
  operations: number;
  operationsByKind: Record<string, number>;
  faults: FaultCounts;
  snapshotsVerified: number;
  violations: string[];
  /** Failures of the test bench itself (its proxies): the request was dropped and the run went on. */
  harnessErrors: string[];
  durationMs: number;
  logFile: string;
}

const WEIGHTS: Partial<Record<OpName, number>> = {
  backup: 26,
  restore: 14,
  check: 10,
  forget: 8,
  prune: 6,
  repair: 5,
  rebalance: 3,
  key: 2,
  weight: 2,
  policy: 1,
  drain: 1,
  // Beside others' running commands: it must remove only stale locks and this machine's dead ones.
  unlock: 1,
};

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const rng = new Rng(o.seed);
  const started = Date.now();
  const deadline = o.minutes ? started + o.minutes * 60_000 : Infinity;
  const maxSteps = o.steps ?? Infinity;
  const settleEvery = o.settleEvery ?? 30;
  const logFile = o.logFile ?? path.join(os.tmpdir(), `cairn-chaos-${o.seed}.jsonl`);
  fs.writeFileSync(logFile, '');
  const log = (entry: object) => {
    fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
  };
  const report: ChaosReport = {
    seed: o.seed,
    steps: 0,
    operations: 0,
    operationsByKind: {},
    faults: noFaults(),
    snapshotsVerified: 0,
    violations: [],
    harnessErrors: [],
    durationMs: 0,
    logFile,
  };
  const world = await World.build(rng.fork(), o.machines ?? 3);
  const oracle = new Oracle();
  const sources = new Map(world.machines.map((m) => [m.name, treeOf(m)]));
  const context = (step: number, extra: Partial<OpContext> = {}): OpContext => ({
    world,
    rng: rng.fork(),
    oracle,
    step,
    clean: () => true,
    besideExclusive: false,
    ran: () => void report.operations++,
    ...extra,
  });
  const record = (r: OpResult) => {
    report.operationsByKind[r.op] = (report.operationsByKind[r.op] ?? 0) + 1;
    if (r.killed) report.faults.kill++;
    if (r.op === 'restore' && !r.violation && r.code === 0) report.snapshotsVerified++;
    if (r.violation) report.violations.push(`step ${report.steps}: ${r.violation}`);
  };

  try {
    for (let step = 1; step <= maxSteps && Date.now() < deadline && !report.violations.length; step++) {
      report.steps = step;
      const stepStart = Date.now();
      const between: string[] = [];
      if (rng.chance(o.between ?? 0.07)) between.push(skewClock(rng, world, report.faults));
      if (rng.chance(o.between ?? 0.07)) between.push(await deleteWithinTolerance(rng, world, report.faults));
      // One operation, or several on different machines at once (a backup beside a prune, say).
      const chosen: [Machine, OpName][] = [rng.pick(world.machines)].map((m) => [m, pickOp(rng, m)]);
      for (const p of o.together ?? [0.6, 0.3]) {
        const others = world.machines.filter((m) => !chosen.some(([c]) => c === m));
        if (!others.length || !rng.chance(p)) break;
        const next = rng.pick(others);
        chosen.push([next, pickOp(rng, next)]);
      }
      const plan = planWireFault(rng, world);
      const kills = chosen.map(([, op]) =>
        KILLABLE.has(op) && rng.chance(0.22) ? rng.int(150, 3000) : undefined,
      );
      const exclusive = chosen.some(([, op]) => EXCLUSIVE.has(op));
      const stepContext = (killAfterMs?: number) =>
        context(step, {
          clean: () => !plan.wire,
          besideExclusive: exclusive && chosen.length > 1,
          killAfterMs,
        });
      // Made before anything runs, so the step list does not depend on which operation ends first.
      const contexts = chosen.map((_, i) => [stepContext(kills[i]), stepContext()] as const);
      const end = startWireFault(plan, world, rng.fork(), report.faults);
      let results: OpResult[];
      try {
        // A killed process is run again at once, what was killed (a backup resumed), as a scheduler or
        // a person reruns what crashed: its dead lock goes then. Left until the next step, a killed
        // prune's lock made every other operation of its step wait out its whole lock wait (seed 4100).
        const runs = await Promise.all(
          chosen.map(async ([m, op], i) => {
            const first = await ops[op](contexts[i]![0], m);
            if (!first.killed) return [first];
            return [first, await ops[op === 'backup' ? 'resume' : op](contexts[i]![1], m)];
          }),
        );
        results = runs.flat();
      } finally {
        await end();
      }
      for (const r of results) record(r);
      for (const [m] of chosen) sources.set(m.name, treeOf(m));
      // Wall time of the whole step beside each operation's own `ms`: what the driver adds shows.
      const line = {
        step,
        between,
        faults: plan,
        ops: results,
        wallMs: Date.now() - stepStart,
        at: Date.now() - started,
      };
      log(line);
      o.log?.(summarize(line));
      if (!report.violations.length && step % settleEvery === 0) await settle(false);
    }
    if (!report.violations.length) await settle(true);
  } finally {
    report.durationMs = Date.now() - started;
    report.harnessErrors = world.members.flatMap((m) => m.proxy?.errors ?? []);
    log({ report });
    // The servers stop either way, or a run that found a violation would never exit.
    const kept = await world.close(Boolean(report.violations.length && o.keep));
    if (kept.length) o.log?.(`World kept in ${kept.join(', ')}`);
  }
  return report;

  /**
   * Faults off; interrupted backups resumed; repair; check --read-data on every machine must find
   * nothing damaged; snapshots restored (all of them at the end); no lock left on any member; the
   * sources as the driver left them. (Killed processes were run again within their step, so no dead lock
   * of theirs is left: seed 3031 once settled right after a kill, and a check waited for that lock.)
   */
  async function settle(final: boolean): Promise<void> {
    const settleStart = Date.now();
    await world.calm();
    const step = report.steps;
    const results: OpResult[] = [];
    for (const m of world.machines) if (m.interrupted) results.push(await ops.resume(context(step), m));
    results.push(await ops.repair(context(step), world.machines[0]!));
    for (const m of world.machines) {
      const r = await ops.check(context(step, { rng: forced('all') }), m);
      results.push(r);
      if (r.code !== 0 && !r.violation)
        r.violation = `check --read-data on ${m.name} after repair, on a clean network, exited ${r.code}: ${r.note ?? ''}`;
    }
    const ids = oracle.ids();
    const sample = final ? ids : ids.filter(() => rng.chance(3 / Math.max(3, ids.length)));
    for (const id of sample)
      results.push(await restoreAndCompare(context(step), rng.pick(world.machines), id));
    for (const r of results) record(r);
    for (const member of world.members) {
      const left = await world.list(member, 'locks/');
      if (left.length)
        report.violations.push(
          `settling at step ${step}: locks left on ${member.name} after every machine ran: ${left.join(', ')}`,
        );
    }
    for (const m of world.machines)
      if (treeOf(m) !== sources.get(m.name))
        report.violations.push(`settling at step ${step}: the source tree of ${m.name} changed under Cairn`);
    log({
      settle: step,
      final,
      ops: results,
      violations: report.violations,
      wallMs: Date.now() - settleStart,
      at: Date.now() - started,
    });
    o.log?.(
      `settled at step ${step}${final ? ' (final)' : ''}: ${results.length} operations, ${report.violations.length} violations`,
    );
  }
}

function pickOp(rng: Rng, m: Machine): OpName {
  if (m.interrupted && rng.chance(0.5)) return 'resume';
  return rng.weighted(WEIGHTS);
}

/** An Rng whose weighted choice is always `key` (a settling check reads every pack). */
function forced(key: string): Rng {
  const r = new Rng(0);
  r.weighted = (() => key) as Rng['weighted'];
  return r;
}

function summarize(line: {
  step: number;
  between: string[];
  faults: { wire?: { member: string; kind: string } };
  ops: OpResult[];
}): string {
  const f = line.faults.wire ? ` [${line.faults.wire.kind} ${line.faults.wire.member}]` : '';
  const b = line.between.length ? ` {${line.between.join('; ')}}` : '';
  const ops = line.ops
    .map(
      (r) => `${r.machine}:${r.op}${r.killed ? '(killed)' : ''}=${r.code}${r.violation ? ' VIOLATION' : ''}`,
    )
    .join(' ');
  return `#${line.step} ${ops}${f}${b}`;
}
