import type { BenchOptions } from '../run.ts';
import type { SuiteResult } from '../lib/report.ts';
import { runChaos } from '../../test/chaos/driver.ts';
import { FAULT_KINDS } from '../../test/chaos/faults.ts';

/**
 * `npm run bench -- chaos --minutes N [--seed S]`: the randomized fault suite (test/chaos/driver.ts) for
 * as long as asked. Not a speed: what it reports is how much it did (operations and faults by kind)
 * and what broke (the violations, each with its seed and step list to replay with --seed).
 */
export async function chaosSuite(o: BenchOptions): Promise<SuiteResult> {
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
  const minutes = o.minutes ?? (o.quick ? 2 : 10);
  const r = await runChaos({
    seed,
    minutes,
    keep: true,
    ...(o.machines ? { machines: o.machines } : {}),
    ...(o.together ? { together: o.together } : {}),
    ...(o.between ? { between: o.between } : {}),
    log: (line) => process.stderr.write(line + '\n'),
  });
  const min = Math.min(...FAULT_KINDS.map((k) => r.faults[k]));
  return {
    title: 'Randomized faults (issue 29)',
    mirrors:
      "Kopia's tests/robustness: random actions from several machines, faults, a checker that restores and compares",
    tables: [
      {
        title: `Seed ${seed}: ${r.steps} steps, ${r.operations} operations in ${(r.durationMs / 60_000).toFixed(1)} min`,
        columns: ['operation', 'count'],
        rows: Object.entries(r.operationsByKind).sort(([a], [b]) => a.localeCompare(b)),
      },
      {
        title: 'Faults that took effect',
        columns: ['fault', 'count'],
        rows: FAULT_KINDS.map((k) => [k, r.faults[k]]),
      },
    ],
    targets: [
      {
        name: 'invariant violations',
        measured: String(r.violations.length),
        goal: '0',
        met: r.violations.length === 0,
      },
      {
        name: 'snapshots restored and compared byte for byte',
        measured: String(r.snapshotsVerified),
        goal: '> 0',
        met: r.snapshotsVerified > 0,
      },
      {
        name: 'fewest faults of one kind',
        measured: String(min),
        goal: '≥ 100 in a 2-hour run',
        met: minutes < 120 || min >= 100,
      },
    ],
    notes: [
      `Replay: npm run bench -- chaos --minutes ${minutes} --seed ${seed}${o.machines ? ` --machines ${o.machines}` : ''}${o.together ? ` --together ${o.together.join(',')}` : ''}${o.between ? ` --between ${o.between}` : ''}. Step list: ${r.logFile}.`,
      ...r.violations,
      ...(r.harnessErrors.length
        ? [
            `The test bench failed ${r.harnessErrors.length} time(s) (its proxy dropped that request and went on; not a Cairn fault): ${r.harnessErrors[0]!.split('\n')[0]}`,
          ]
        : []),
    ],
    data: { ...r },
  };
}
