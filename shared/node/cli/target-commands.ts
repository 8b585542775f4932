import path from 'node:path';
import { takeSecretEnv } from '../secret-env.ts';
import type { Command } from 'commander';
import { targetWhere, type TargetConfig } from '../../settings.ts';
import type { Output } from './output.ts';
import { UsageError, table } from './output.ts';
import { Engine, defaultHome } from '../engine/engine.ts';
import { describePolicy, pendingMovesText, rebalanceText } from '../../pool-text.ts';
import { readUnlocker, withEngine } from './session.ts';
import { warnUnread } from './pool-commands.ts';

interface AddOpts {
  s3?: boolean;
  dir?: string;
  endpoint?: string;
  bucket?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  pathStyle?: boolean;
  checksums?: string;
  test: boolean;
}

function targetOptions(c: Command): Command {
  return c
    .option('--s3', 'an S3-compatible bucket')
    .option('--dir <path>', 'a local folder (a backup drive, a mounted share)')
    .option('--endpoint <url>', 'S3 endpoint URL')
    .option('--bucket <b>', 'bucket name')
    .option('--region <r>', 'region', 'us-east-1')
    .option('--access-key-id <k>')
    .option(
      '--secret-access-key <s>',
      'secret key: "-" reads it from standard input (or set CAIRN_S3_SECRET_ACCESS_KEY)',
    )
    .option('--path-style', 'path-style addressing (MinIO, Garage, versitygw)')
    .option('--checksums <mode>', 'when-supported (SDK default) or when-required', 'when-supported');
}

export function registerTargetCommands(program: Command, out: () => Output): void {
  targetOptions(
    program
      .command('connect')
      .description('open an existing repository from a target on a new machine (builds a fresh keystore)')
      .argument('<name>'),
  )
    .option(
      '--recovery-key',
      'unlock with a recovery key (CAIRN_RECOVERY_KEY or asked) instead of the passphrase',
    )
    .action(async (name: string, o: AddOpts & { recoveryKey?: boolean }) => {
      const output = out();
      const { config, secret } = await targetFromOptions(o);
      const unlocker = await readUnlocker({ recoveryKey: Boolean(o.recoveryKey) });
      const unreachable: { target: string; message: string }[] = [];
      const engine = await Engine.connect(defaultHome(), name, config, secret, unlocker, (t, err) =>
        unreachable.push({ target: t.name, message: err.message }),
      );
      const snapshots = engine.listSnapshots().length;
      const repository = engine.local.repoId;
      const targets = engine.listTargets().map((t) => t.name);
      engine.close();
      const others = targets.filter((t) => t !== name);
      output.result(
        { name, repository, snapshots, targets, unreachable },
        [
          `Connected to repository ${repository.slice(0, 12)}… on target "${name}": ${snapshots} snapshot${snapshots === 1 ? '' : 's'}.`,
          ...(others.length
            ? [`The pool's other targets were added too: ${others.map((t) => `"${t}"`).join(', ')}.`]
            : []),
          ...unreachable.map((u) => `Warning: target "${u.target}" could not be read now: ${u.message}`),
        ].join('\n'),
      );
    });

  const target = program.command('target').description('manage where packs are stored');

  targetOptions(
    target
      .command('add')
      .description('add an S3 bucket (--s3 …) or a folder (--dir <path>) as a target; it is tested first')
      .argument('<name>'),
  )
    .option(
      '--weight <n>',
      "its share of the pool's packs, relative to the other targets (default 100)",
      weightOption,
    )
    .option('--no-test', 'save without testing the connection')
    .action(async (name: string, o: AddOpts & { weight?: number }) => {
      const output = out();
      const { config, secret } = await targetFromOptions(o);
      const { t, members, policy, packs, plan } = await withEngine(async (e) => {
        const row = await e.addTarget(name, config, secret, { test: o.test, weight: o.weight });
        const packs = e.local.packCount();
        const members = e.listTargets().map((x) => x.name);
        // Joining a pool that holds packs: say what placement would now move there.
        // The target is added whatever this finds: a member out of reach or a lock only leaves it unsaid.
        const plan =
          members.length > 2 && packs > 0
            ? await e.poolAdmin.rebalance({ dryRun: true }).catch(() => null)
            : null;
        return { t: row, members, policy: e.poolAdmin.policy(), packs, plan };
      });
      const lines = [`Added target "${t.name}".`];
      if (members.length === 2)
        lines.push(
          `Targets ${members.map((m) => `"${m}"`).join(' and ')} now form a pool: every target knows the others, and holds the index and every snapshot.`,
        );
      if (members.length >= 2)
        lines.push(
          `Policy: ${describePolicy(policy)}.${policy.scheme === 'replicas' && policy.copies === 1 ? ' Packs are spread over the targets: change it with "cairn policy --replicas 2".' : ''}`,
        );
      if (members.length === 2 && packs > 0 && policy.scheme === 'replicas' && policy.copies > 1)
        lines.push('The packs stored before have one copy: "cairn repair" gives them their second.');
      if (plan && plan.copied + plan.removed > 0)
        lines.push(
          `"cairn rebalance" moves what is stored to match: ${rebalanceText(plan, true, plan.scheme)}`,
        );
      output.result({ id: t.id, name: t.name, config: t.config, policy, rebalance: plan }, lines.join('\n'));
    });

  target
    .command('ls')
    .description('list targets')
    .action(async () => {
      const output = out();
      // As the pool's members have it: a weight, drain or removal made on another machine shows.
      const rows = await withEngine(async (e) => {
        const unread = await e.readPool();
        const rows = e.listTargets();
        warnUnread(output, unread, rows.filter((t) => t.poolId !== null).length);
        return rows;
      });
      output.result(
        rows.map((t) => ({
          id: t.id,
          name: t.name,
          config: t.config,
          poolId: t.poolId,
          weight: t.weight,
          state: t.state,
        })),
        table([
          ['NAME', 'KIND', 'WHERE', 'POOL ID', 'WEIGHT', 'STATE'],
          ...rows.map((t) => [
            t.name,
            t.config.kind,
            targetWhere(t.config),
            t.poolId === null ? '-' : String(t.poolId),
            String(t.weight),
            t.state,
          ]),
        ]),
      );
    });

  target
    .command('drain')
    .description('move every copy off a target (it takes no new ones), so that "target rm" can remove it')
    .argument('<name>')
    .action(async (name: string) => {
      const output = out();
      const r = await withEngine((e) => e.poolAdmin.drain(name, { notice: (m) => output.info(m) }));
      output.result(
        r,
        `Target "${name}" is draining: ${rebalanceText(r, false, r.scheme)} "cairn target rm ${name}" removes it.`,
      );
    });

  target
    .command('set')
    .description(
      'change a pool member\'s weight (its share of new copies), or make a draining one active again; "cairn rebalance" then moves what is stored to match',
    )
    .argument('<name>')
    .option('--weight <n>', 'its share of new copies, relative to the other targets', weightOption)
    .option('--active', 'take new copies again (undoes "target drain")')
    .action(async (name: string, o: { weight?: number; active?: boolean }) => {
      const output = out();
      if (o.weight === undefined && !o.active)
        throw new UsageError('Say what to change: --weight <n> or --active.');
      const { r, t } = await withEngine(async (e) => {
        const r = await e.poolAdmin.setTarget(name, o);
        return { r, t: e.local.findTarget(name)! };
      });
      output.result(
        { name: t.name, weight: t.weight, state: t.state, rebalance: r },
        `Target "${t.name}": weight ${t.weight}, ${t.state}. ${pendingMovesText(r, r.scheme, '"cairn rebalance"')}`,
      );
    });

  target
    .command('rm')
    .description(
      'remove a target from this repository (in a pool, refused while it holds copies or shards: drain it first)',
    )
    .argument('<name>')
    .option('--force', 'remove it even so (a target that is lost); repair then writes again what it held')
    .action(async (name: string, o: { force?: boolean }) => {
      const output = out();
      await withEngine((e) => e.removeTarget(name, { force: Boolean(o.force) }));
      output.result({ removed: name }, `Removed target "${name}".`);
    });

  target
    .command('test')
    .description('check that a target is reachable and accepts the credentials')
    .argument('<name>')
    .action(async (name: string) => {
      const output = out();
      await withEngine((e) => e.testTarget(name));
      output.result({ name, ok: true }, `Target "${name}" works.`);
    });
}

async function readStdin(): Promise<string> {
  let data = '';
  for await (const chunk of process.stdin) data += String(chunk);
  return data.replace(/\r?\n$/, '');
}

async function targetFromOptions(o: AddOpts): Promise<{ config: TargetConfig; secret?: string }> {
  if (o.s3 && o.dir) throw new Error('Choose --s3 or --dir, not both.');
  if (o.dir) return { config: { kind: 'dir', path: path.resolve(o.dir) } };
  if (!o.s3) throw new Error('Say what the target is: --s3 with its options, or --dir <path>.');
  const missing = (['endpoint', 'bucket', 'accessKeyId'] as const).filter((k) => !o[k]);
  if (missing.length)
    throw new Error(
      `An S3 target needs ${missing.map((m) => '--' + m.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())).join(', ')}.`,
    );
  const secret =
    o.secretAccessKey === '-'
      ? await readStdin()
      : (o.secretAccessKey ?? takeSecretEnv('CAIRN_S3_SECRET_ACCESS_KEY'));
  if (!secret) throw new Error('An S3 target needs --secret-access-key (or CAIRN_S3_SECRET_ACCESS_KEY).');
  if (o.checksums !== 'when-supported' && o.checksums !== 'when-required') {
    throw new Error(`--checksums must be when-supported or when-required, not "${o.checksums}".`);
  }
  return {
    config: {
      kind: 's3',
      endpoint: o.endpoint!,
      bucket: o.bucket!,
      region: o.region ?? 'us-east-1',
      accessKeyId: o.accessKeyId!,
      pathStyle: Boolean(o.pathStyle),
      checksums: o.checksums,
    },
    secret,
  };
}

/** A pool member's weight: the keystore and the pool object take 1 … 1,000,000. */
function weightOption(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > 1_000_000)
    throw new UsageError(`--weight must be a whole number from 1 to 1000000, not "${v}".`);
  return n;
}
