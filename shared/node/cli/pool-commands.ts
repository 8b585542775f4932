import { type RedundancyReport } from '../engine/exports.ts';
import { Option, type Command } from 'commander';
import { SettingsError } from '../home-and-settings.ts';
import type { Engine } from '../engine/engine.ts';
import { checkErasure, checkReplicas, parseErasure, type PoolPolicy } from '../../pool-policy.ts';
import { describePolicy, rebalanceText, repairText } from '../../pool-text.ts';
import { UsageError, plural, table, type Output } from './output.ts';
import { withEngine } from './session.ts';

function redundancyText(r: RedundancyReport): string {
  const lines = [
    `Policy: ${describePolicy(r.policy)}.`,
    table([
      ['TARGET', 'STORED', 'QUEUED', 'MISSING'],
      ...r.targets.map((t) => [t.target, String(t.stored), String(t.queued), String(t.missing)]),
    ]),
  ];
  for (const u of r.unreachable)
    lines.push(
      `Target "${u.target}" could not be listed (${u.message.replace(/\.$/, '')}): its copies are counted as this machine last knew them. If it is lost, "cairn target rm ${u.target} --force" removes it and "cairn repair" writes again what it held.`,
    );
  const unconfirmed = r.unreachable.map((u) => `"${u.target}"`).join(', ');
  if (r.full === r.packs && r.unreachable.length)
    lines.push(
      `All ${plural(r.packs, 'pack')} have full redundancy as this machine last knew them, but ${unconfirmed} could not be listed to confirm it.`,
    );
  else if (r.full === r.packs) lines.push(`All ${plural(r.packs, 'pack')} have full redundancy.`);
  else {
    const what = r.policy.scheme === 'ec' ? 'shards' : 'copies';
    for (const d of r.degraded.slice(0, 20)) {
      const queued = d.queued ? `, ${d.queued} queued` : '';
      const gone = d.missing - (d.damaged ?? 0);
      const missing =
        (gone ? `, ${gone} gone from ${gone === 1 ? 'its target' : 'their targets'}` : '') +
        (d.damaged ? `, ${d.damaged} found damaged by "cairn check --read-data"` : '');
      lines.push(
        `Pack ${d.pack.slice(0, 12)}…: ${d.stored} of ${d.needed} ${what} stored${queued}${missing}.`,
      );
    }
    if (r.degraded.length > 20) lines.push(`and ${r.degraded.length - 20} more packs`);
    const parts = [
      r.degraded.length
        ? `${r.degraded.length} ${r.degraded.length === 1 ? 'has' : 'have'} fewer ${what} ("cairn repair" writes the missing ones)`
        : '',
      r.unconverted
        ? `${r.unconverted} ${r.unconverted === 1 ? 'is' : 'are'} stored as an earlier policy had them ("cairn rebalance" rewrites them)`
        : '',
      r.lost ? `${r.lost} cannot be read back from what is left` : '',
    ].filter(Boolean);
    lines.push(`${r.full} of ${plural(r.packs, 'pack')} have full redundancy; ${parts.join('; ')}.`);
  }
  return lines.join('\n');
}

export function registerPoolCommands(
  program: Command,
  out: () => Output,
  p: { int: (what: string) => (v: string) => number; partial: (message: string) => Error },
): void {
  program
    .command('policy')
    .description(
      'show the redundancy policy, or set it: --replicas <R> or --ec <k+m>, each with [--write-quorum <W>]',
    )
    .addOption(
      new Option('--replicas <R>', 'copies of each pack (1 to 3), on distinct targets').argParser(
        p.int('--replicas'),
      ),
    )
    .addOption(
      new Option(
        '--write-quorum <W>',
        'copies a backup waits for; the rest complete after (default: all)',
      ).argParser(p.int('--write-quorum')),
    )
    .option('--ec <k+m>', 'erasure coding: k data + m parity shards of each pack, on distinct targets')
    .action(async (o: { replicas?: number; writeQuorum?: number; ec?: string }) => {
      const output = out();
      if (o.ec !== undefined && o.replicas !== undefined)
        throw new UsageError('Give --replicas or --ec, not both.');
      if (o.writeQuorum !== undefined && o.replicas === undefined && o.ec === undefined)
        throw new UsageError('--write-quorum goes with --replicas or --ec.');
      const ec = o.ec === undefined ? undefined : parseErasure(o.ec);
      if (o.ec !== undefined && !ec)
        throw new UsageError(`--ec takes k+m, data and parity shards (for example 4+2), not "${o.ec}".`);
      const setting = o.replicas !== undefined || ec;
      // A value no pool could take is a usage error (exit 2), as a malformed one is.
      try {
        if (ec) checkErasure(ec.k, ec.m, o.writeQuorum);
        else if (o.replicas !== undefined) checkReplicas(o.replicas, o.writeQuorum);
      } catch (err) {
        throw err instanceof SettingsError ? new UsageError(err.message) : err;
      }
      const policy = await withEngine(async (e) =>
        ec
          ? await e.poolAdmin.setErasure(ec.k, ec.m, o.writeQuorum)
          : o.replicas !== undefined
            ? await e.poolAdmin.setReplicas(o.replicas, o.writeQuorum)
            : await currentPolicy(e, output),
      );
      output.result(
        policy,
        `${setting ? 'Policy set' : 'Policy'}: ${describePolicy(policy)}.${setting ? ' New packs follow it; "cairn rebalance" brings the packs already stored to it.' : ''}`,
      );
    });

  program
    .command('rebalance')
    .description(
      'move copies to where placement now puts them (after a target joined, changed weight or drains)',
    )
    .option('--dry-run', 'say what would move, move nothing')
    .action(async (o: { dryRun?: boolean }) => {
      const output = out();
      const r = await withEngine((e) =>
        e.poolAdmin.rebalance({ dryRun: Boolean(o.dryRun), notice: (m) => output.info(m) }),
      );
      output.result(r, rebalanceText(r, Boolean(o.dryRun), r.scheme));
      if (r.unreadable.length)
        throw p.partial(`${plural(r.unreadable.length, 'pack')} could not be read to move.`);
    });

  program
    .command('repair')
    .description(
      'write every copy the policy asks for and a pack lacks (queued ones, lost ones, more than an older policy asked)',
    )
    .action(async () => {
      const output = out();
      const { r, scheme } = await withEngine(async (e) => ({
        r: await e.poolAdmin.repair(undefined, { notice: (m) => output.info(m) }),
        scheme: e.poolAdmin.policy().scheme,
      }));
      for (const pr of r.problems) output.info(`Problem: target "${pr.target}": ${pr.message}`);
      output.result(r, repairText(r, scheme));
      if (r.queued > 0) throw p.partial('Some copies could not be written yet.');
      if (r.problems.length) throw p.partial('Some targets could not be read: their packs may lack copies.');
      if (r.unconverted) throw p.partial('Some packs wait for "cairn rebalance" to follow the policy.');
    });
}

/** `cairn check --redundancy`: per pack and per target; exit status 0 only with full redundancy. */
export async function reportRedundancy(output: Output, partial: (m: string) => Error): Promise<void> {
  const r = await withEngine((e) => e.poolAdmin.redundancy());
  output.result(r, redundancyText(r));
  if (r.unreachable.length) throw partial('Some targets could not be listed.');
  if (r.full < r.packs) throw partial('Some packs lack copies, or are stored as an earlier policy had them.');
}

/** The policy as the targets have it now (another machine may have set it), else as last read here. */
async function currentPolicy(e: Engine, output: Output): Promise<PoolPolicy> {
  warnUnread(output, await e.readPool(), e.listTargets().filter((t) => t.poolId !== null).length);
  return e.poolAdmin.policy();
}

/** Says which members `Engine.readPool` could not read, and so whose word what follows is. */
export function warnUnread(
  output: Output,
  unread: readonly { target: string; message: string }[],
  members: number,
): void {
  if (!unread.length) return;
  const why = unread
    .map((u) => (u.message.includes(`"${u.target}"`) ? '' : `"${u.target}": `) + u.message.replace(/\.$/, ''))
    .join('; ');
  output.info(
    unread.length >= members
      ? `Warning: no target of the pool could be read (${why}); this is what this machine last read.`
      : `Warning: ${plural(unread.length, 'target')} could not be read (${why}); this is as the others have it.`,
  );
}
