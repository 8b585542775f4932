// cli/: the command line: parse, call the engine, print (text or --json).
import '../test-clock.ts';
import { setSecretEnvAside } from '../secret-env.ts';
import '../small-heap.ts';
import { Command, CommanderError, Option } from 'commander';
import { formatSize, parseSize } from '../../settings.ts';
import { Engine, defaultHome } from '../engine/engine.ts';
import { selectWhileLocked, type RestoreSelection, PACK_SIZE_MAX, PACK_SIZE_MIN } from '../engine/exports.ts';
import { restoreToOriginal } from '../engine/restore-original.ts';
import { VerifyHistory } from '../engine/verify-history.ts';
import { UsageError, createOutput, flushJsonResult, plural, reportBackup, type Output } from './output.ts';
import { readPassphrase } from './passphrase.ts';
import { withEngine } from './session.ts';
import { registerFindCommand } from './find-command.ts';
import { registerLsCommand } from './ls-command.ts';
import { registerDiffCommand } from './diff-command.ts';
import {
  limitDownloadOption,
  limitUploadOption,
  pipelineOverrides,
  registerSettingsCommand,
} from './settings-command.ts';
import { registerKeyCommands } from './key-commands.ts';
import { registerPoolCommands } from './pool-commands.ts';
import { registerPlanCommands } from './plan-commands.ts';
import { registerRetentionCommands } from './retention-commands.ts';
import { registerTargetCommands } from './target-commands.ts';
import pkg from '../../../package.json' with { type: 'json' };

// Secrets in the environment are taken out at once: no child inherits them, /proc shows them no more.
setSecretEnvAside();

/** Thrown when a command ran but did not fully succeed; its report was already printed. */
export class PartialFailure extends Error {}

/** Options that do not go together: exit status 2, as for commander's own usage errors. */

// A reader that stops early (`cairn ls | head`) closes the pipe: the output is no longer wanted.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });

/**
 * Ctrl-C during a backup: the job stays recorded as it is (as after a kill), and the user is told how
 * to continue instead of being left at a bare prompt.
 */
function onInterrupt(message: string): () => void {
  const stop = () => {
    process.stderr.write(`\n${message}\n`);
    process.exit(130);
  };
  process.once('SIGINT', stop);
  return () => process.off('SIGINT', stop);
}

const program = new Command('cairn')
  .description('Encrypted, chunked, parallel backups to your own S3-compatible buckets.')
  .version(pkg.version, '-V, --version', 'print the version of Cairn')
  .option('--json', 'print a machine-readable result on stdout and nothing else there')
  .showHelpAfterError('(add --help for usage)')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

function out(): Output {
  return createOutput(Boolean(program.opts().json));
}

function sizeOption(v: string): number {
  const n = parseSize(v);
  if (Number.isNaN(n))
    throw new UsageError(`Chunk size "${v}" is not a size (examples: 8MiB, 512KiB, 1GiB).`);
  return n;
}

function intOption(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new UsageError(`${name} "${v}" is not a whole number.`);
    return Number(v);
  };
}

/** Collects a repeatable option's values. */
function collect(v: string, acc: string[]): string[] {
  return [...acc, v];
}

program
  .command('init')
  .description('create the keystore (in CAIRN_HOME) with a new master key protected by a passphrase')
  .addOption(
    new Option(
      '--pack-size <size>',
      'close packs at this size (1MiB to 1GiB; default 16MiB): smaller packs spread finer over a pool, larger ones mean fewer requests',
    ).argParser((v) => {
      const n = parseSize(v);
      if (Number.isNaN(n) || n < PACK_SIZE_MIN || n > PACK_SIZE_MAX)
        throw new Error(`--pack-size "${v}" must be a size from 1MiB to 1GiB (for example 16MiB).`);
      return n;
    }),
  )
  .action(async (opts: { packSize?: number }) => {
    const o = out();
    const home = defaultHome();
    const engine = await Engine.init(home, await readPassphrase({ confirm: true }), {
      packSize: opts.packSize,
    });
    const repository = engine.local.repoId;
    const chunkSize = engine.settings().chunkSize;
    engine.close();
    if (opts.packSize !== undefined && opts.packSize < chunkSize)
      o.info(
        `Note: a pack holds at least one chunk, and chunks are ${formatSize(chunkSize)} ("cairn settings --chunk-size" or "backup --chunk-size" makes them smaller): packs will be that size, not ${formatSize(opts.packSize)}.`,
      );
    o.result(
      { home, repository },
      `Created repository ${repository.slice(0, 12)}… with its keystore in ${home}. Add a target next ("cairn target add"), and make a recovery key ("cairn key recovery").`,
    );
  });

registerTargetCommands(program, out);
registerKeyCommands(program, out);
registerPlanCommands(program, out, { size: sizeOption, int: intOption });
registerFindCommand(program, out, { int: intOption });
registerDiffCommand(program, out);
registerSettingsCommand(program, out, { size: sizeOption, int: intOption });
registerPoolCommands(program, out, { int: intOption, partial: (m) => new PartialFailure(m) });
registerRetentionCommands(program, out, {
  int: intOption,
  size: sizeOption,
  partial: (m) => new PartialFailure(m),
});

program
  .command('backup')
  .description('back up files and folders; prints the snapshot id')
  .argument('<path...>', 'files or folders')
  .option('--target <name>', 'target to store the chunks on')
  .addOption(
    new Option('--chunk-size <size>', 'chunk size, 64KiB to 1GiB (default 8MiB)').argParser(sizeOption),
  )
  .addOption(
    new Option('--workers <n>', 'worker threads (default: CPU count)').argParser(intOption('Worker count')),
  )
  .addOption(
    new Option('--uploads-per-worker <n>', 'uploads in flight per worker').argParser(
      intOption('Uploads per worker'),
    ),
  )
  .addOption(limitUploadOption())
  .option('--force-read', 'read every file, even those unchanged since the last snapshot')
  .addOption(
    new Option(
      '--lock-wait <minutes>',
      'wait this long for a running prune to finish (default 10)',
    ).argParser(intOption('Minutes')),
  )
  .addOption(
    new Option(
      '--pause-limit <minutes>',
      'how long to pause when the target (in a pool: too few targets for the write quorum) cannot be reached, before stopping (default: until it is back; 0: stop at once)',
    ).argParser(intOption('Minutes')),
  )
  .option(
    '--exclude <glob>',
    'leave out files and folders that match (repeatable; "node_modules/", "*.tmp", "/build")',
    collect,
    [] as string[],
  )
  .action(async (paths: string[], opts) => {
    const o = out();
    const uninterrupt = onInterrupt('Stopped. What the backup stored is kept: "cairn resume" continues it.');
    const r = await withEngine(
      (e) =>
        e.backup(
          paths,
          {
            target: opts.target,
            settings: {
              ...pipelineOverrides(opts),
              ...(opts.pauseLimit === undefined ? {} : { pauseLimitMs: opts.pauseLimit * 60_000 }),
            },
            forceRead: Boolean(opts.forceRead),
            exclude: opts.exclude,
            lockWaitMs: opts.lockWait === undefined ? undefined : opts.lockWait * 60_000,
          },
          o.listener(),
        ),
      { workers: pipelineOverrides(opts).workers ?? true },
    );
    uninterrupt();
    o.endProgress();
    reportBackup(o, r);
    o.result(r, r.snapshotId);
  });

registerLsCommand(program, out);

interface RestoreOptions {
  to?: string;
  original?: boolean;
  path: string[];
  overwrite?: boolean;
  fsync?: boolean;
  limitDownload?: number;
}

program
  .command('restore')
  .description('restore a snapshot (or some of its paths) into a folder, verified byte for byte')
  .argument('<snapshot-id>')
  .option('--to <dir>', 'destination folder')
  .option('--original', "restore where the sources were backed up from (each source's folder)")
  .option(
    '--path <p>',
    'restore only this file or folder (repeatable)',
    (v: string, acc: string[]) => [...acc, v],
    [] as string[],
  )
  .option('--overwrite', 'replace files that already exist at the destination')
  .option('--fsync', 'flush every restored file to disk before it is renamed into place (slower)')
  .addOption(limitDownloadOption())
  .action(async (id: string, opts: RestoreOptions) => {
    const o = out();
    if ((opts.to === undefined) === !opts.original)
      throw new UsageError('Give either --to <dir> or --original: where the files go.');
    const { r, to } = await withEngine(
      async (e, early: RestoreSelection | null | undefined) => {
        // What was walked while the key was derived holds unless the refresh changed the caches.
        const selection = (await e.refresh()) ? null : early;
        const snapshotId = e.resolveSnapshotId(id);
        const settings = pipelineOverrides(opts);
        if (opts.original) {
          const back = { paths: opts.path, overwrite: !!opts.overwrite, fsync: opts.fsync, settings };
          const done = await restoreToOriginal(e, snapshotId, back, o.listener());
          return { r: done, to: done.places.join(', ') };
        }
        const done = await e.restore(
          snapshotId,
          {
            to: opts.to!,
            paths: opts.path,
            overwrite: opts.overwrite,
            fsync: opts.fsync,
            selection,
            settings,
          },
          o.listener(),
        );
        return { r: done, to: opts.to! };
      },
      {
        workers: true,
        whileUnlocking: (ks) =>
          opts.original
            ? Promise.resolve(null)
            : selectWhileLocked(ks, ks.snapshots.resolveId(id), opts.path),
      },
    );
    o.endProgress();
    for (const f of r.failed)
      o.info(`Failed: ${f.path}: ${f.message}${f.kept ? ' (restore with --overwrite to replace it)' : ''}`);
    o.result(
      r,
      `Restored ${plural(r.restoredFiles, 'file')} (${formatSize(r.restoredBytes)}) to ${to}${r.alreadyPresent ? `; ${r.alreadyPresent} already there and identical` : ''}${r.failed.length ? `; ${r.failed.length} failed` : ''}.`,
    );
    if (r.failed.length)
      throw new PartialFailure(`${r.failed.length} of the selected files could not be restored.`);
  });

program
  .command('verify')
  .description('download and check every blob of a snapshot (the outcome is kept: History shows it)')
  .argument('<snapshot-id>')
  .action(async (id: string) => {
    const o = out();
    const r = await withEngine((e) => new VerifyHistory(e).run(e.resolveSnapshotId(id), o.listener()), {
      workers: true,
    });
    o.endProgress();
    for (const p of r.problems)
      o.info(
        `Bad: ${p.path} ${p.path.endsWith('/') ? 'folder listing' : `blob ${p.blob}`}${p.target ? ` on target "${p.target}"` : ''}: ${p.message}`,
      );
    o.result(
      r,
      r.problems.length
        ? `${plural(r.problems.length, 'problem')} in snapshot ${r.snapshotId}.`
        : `All ${r.blobs} blobs of snapshot ${r.snapshotId} are intact.`,
    );
    if (r.problems.length)
      throw new PartialFailure(
        `Snapshot ${r.snapshotId} has ${plural(r.problems.length, 'damaged or missing blob')}.`,
      );
  });

program
  .command('resume')
  .description('continue interrupted backups')
  .addOption(
    new Option(
      '--pause-limit <minutes>',
      'how long to pause when targets cannot be reached, as for backup (default: as the backup was started)',
    ).argParser(intOption('Minutes')),
  )
  .addOption(
    new Option(
      '--lock-wait <minutes>',
      'wait this long for a running prune to finish (default 10)',
    ).argParser(intOption('Minutes')),
  )
  .addOption(limitUploadOption())
  .action(async (opts: { pauseLimit?: number; lockWait?: number; limitUpload?: number }) => {
    const o = out();
    const run = {
      ...(opts.pauseLimit === undefined ? {} : { pauseLimitMs: opts.pauseLimit * 60_000 }),
      ...(opts.lockWait === undefined ? {} : { lockWaitMs: opts.lockWait * 60_000 }),
    };
    const caps = opts.limitUpload === undefined ? {} : { uploadLimit: opts.limitUpload };
    const uninterrupt = onInterrupt('Stopped. What the backup stored is kept: "cairn resume" continues it.');
    const rs = await withEngine((e) => e.resume(o.listener(), run, caps), { workers: true });
    uninterrupt();
    o.endProgress();
    for (const r of rs) reportBackup(o, r);
    o.result(
      rs,
      rs.length
        ? rs
            .map((r) => `Completed snapshot ${r.snapshotId} (${formatSize(r.bytesUploaded)} uploaded).`)
            .join('\n')
        : 'Nothing to resume.',
    );
  });

try {
  await program.parseAsync(process.argv);
  flushJsonResult();
} catch (err) {
  const json = process.argv.includes('--json');
  if (err instanceof CommanderError) {
    // Commander has said it on stderr; a --json reader gets it as the one document on stdout too.
    flushJsonResult(json && err.exitCode !== 0 ? oneLine(err.message).replace(/^error: /, '') : undefined);
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else {
    const message = oneLine((err as Error).message ?? String(err));
    if (json) flushJsonResult(message);
    process.stderr.write(`${err instanceof PartialFailure ? '' : 'Error: '}${message}\n`);
    if (process.env.CAIRN_DEBUG) console.error(err);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  }
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}
