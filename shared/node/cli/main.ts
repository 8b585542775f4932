import '../storage/quiet-sdk.ts';
import { Command, CommanderError, Option } from 'commander';
import { formatSize, parseSize, type PipelineSettings } from '../../settings.ts';
import { Engine, defaultHome } from '../engine/engine.ts';
import { createOutput, table, type Output } from './output.ts';
import { readPassphrase } from './passphrase.ts';
import { withEngine } from './session.ts';
import { registerTargetCommands } from './target-commands.ts';

/** Thrown when a command ran but did not fully succeed; its report was already printed. */
export class PartialFailure extends Error {}

const program = new Command('cairn')
  .description('Encrypted, chunked, parallel backups to your own S3-compatible buckets.')
  .option('--json', 'print a machine-readable result on stdout and nothing else there')
  .showHelpAfterError()
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

function out(): Output {
  return createOutput(Boolean(program.opts().json));
}

function sizeOption(v: string): number {
  const n = parseSize(v);
  if (Number.isNaN(n)) throw new Error(`Chunk size "${v}" is not a size (examples: 8MiB, 512KiB, 1GiB).`);
  return n;
}

function intOption(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new Error(`${name} "${v}" is not a whole number.`);
    return Number(v);
  };
}

function pipelineOverrides(o: {
  chunkSize?: number;
  workers?: number;
  uploadsPerWorker?: number;
}): Partial<PipelineSettings> {
  return { chunkSize: o.chunkSize, workers: o.workers, uploadsPerWorker: o.uploadsPerWorker };
}

program
  .command('init')
  .description('create the keystore (in CAIRN_HOME) with a new master key protected by a passphrase')
  .action(async () => {
    const o = out();
    const home = defaultHome();
    const engine = await Engine.init(home, await readPassphrase({ confirm: true }));
    engine.close();
    o.result({ home }, `Created a keystore in ${home}.`);
  });

registerTargetCommands(program, out);

program
  .command('backup')
  .description('back up files and folders; prints the backup id')
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
  .action(async (paths: string[], opts) => {
    const o = out();
    const r = await withEngine((e) =>
      e.backup(paths, { target: opts.target, settings: pipelineOverrides(opts) }, o.listener()),
    );
    o.endProgress();
    o.info(
      `${r.files} files, ${formatSize(r.bytes)} in ${r.chunks} chunks (${r.uploadedChunks} uploaded, ${r.dedupedChunks} already stored), ${r.transfer.mbps.toFixed(1)} MB/s.`,
    );
    o.result(r, r.backupId);
  });

program
  .command('ls')
  .description('list backups, or the files of one backup')
  .argument('[backup-id]')
  .action(async (id?: string) => {
    const o = out();
    await withEngine(async (e) => {
      if (!id) {
        const rows = e.listBackups();
        o.result(
          rows,
          table([
            ['ID', 'CREATED', 'STATUS', 'FILES', 'SIZE', 'CHUNKS'],
            ...rows.map((b) => [
              b.id,
              new Date(b.createdAt).toISOString(),
              b.status,
              String(b.fileCount),
              formatSize(b.totalBytes),
              String(b.chunkCount),
            ]),
          ]),
        );
      } else {
        const rows = e.listEntries(id);
        o.result(
          rows.map(({ hash, ...r }) => ({ ...r, hash: hash?.toString('hex') ?? null })),
          table([
            ['KIND', 'MODE', 'SIZE', 'MODIFIED', 'PATH'],
            ...rows.map((r) => [
              r.kind,
              (r.mode & 0o7777).toString(8).padStart(4, '0'),
              r.kind === 'file' ? formatSize(r.size) : '-',
              new Date(r.mtimeMs).toISOString(),
              r.linkTarget ? `${r.path} -> ${r.linkTarget}` : r.path,
            ]),
          ]),
        );
      }
    });
  });

program
  .command('restore')
  .description('restore a backup (or some of its paths) into a folder, verified byte for byte')
  .argument('<backup-id>')
  .requiredOption('--to <dir>', 'destination folder')
  .option(
    '--path <p>',
    'restore only this file or folder (repeatable)',
    (v: string, acc: string[]) => [...acc, v],
    [] as string[],
  )
  .option('--overwrite', 'replace files that already exist at the destination')
  .action(async (id: string, opts: { to: string; path: string[]; overwrite?: boolean }) => {
    const o = out();
    const r = await withEngine((e) =>
      e.restore(id, { to: opts.to, paths: opts.path, overwrite: opts.overwrite }, o.listener()),
    );
    o.endProgress();
    for (const f of r.failed) o.info(`Failed: ${f.path}: ${f.message}`);
    o.result(
      r,
      `Restored ${r.restoredFiles} files (${formatSize(r.restoredBytes)}) to ${opts.to}${r.failed.length ? `; ${r.failed.length} failed` : ''}.`,
    );
    if (r.failed.length)
      throw new PartialFailure(`${r.failed.length} of the selected files could not be restored.`);
  });

program
  .command('verify')
  .description('download and check every chunk of a backup')
  .argument('<backup-id>')
  .action(async (id: string) => {
    const o = out();
    const r = await withEngine((e) => e.verify(id, o.listener()));
    o.endProgress();
    for (const p of r.problems)
      o.info(`Bad: ${p.path} chunk ${p.chunk}${p.target ? ` on target "${p.target}"` : ''}: ${p.message}`);
    o.result(
      r,
      r.problems.length
        ? `${r.problems.length} problems in backup ${id}.`
        : `All ${r.chunks} chunks of backup ${id} are intact.`,
    );
    if (r.problems.length)
      throw new PartialFailure(`Backup ${id} has ${r.problems.length} damaged or missing chunks.`);
  });

program
  .command('resume')
  .description('continue interrupted backups')
  .action(async () => {
    const o = out();
    const rs = await withEngine((e) => e.resume(o.listener()));
    o.endProgress();
    o.result(
      rs,
      rs.length
        ? rs.map((r) => `Completed backup ${r.backupId} (${r.uploadedChunks} chunks uploaded).`).join('\n')
        : 'Nothing to resume.',
    );
  });

program
  .command('settings')
  .description('show or change the saved pipeline settings')
  .addOption(new Option('--chunk-size <size>').argParser(sizeOption))
  .addOption(new Option('--workers <n>').argParser(intOption('Worker count')))
  .addOption(new Option('--uploads-per-worker <n>').argParser(intOption('Uploads per worker')))
  .action(async (opts) => {
    const o = out();
    const s = await withEngine(async (e) => e.saveSettings(pipelineOverrides(opts)));
    o.result(
      s,
      `chunk size ${formatSize(s.chunkSize)}, ${s.workers} workers, ${s.uploadsPerWorker} uploads per worker`,
    );
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const json = process.argv.includes('--json');
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else {
    const message = oneLine((err as Error).message ?? String(err));
    if (json) process.stdout.write(JSON.stringify({ error: message }) + '\n');
    process.stderr.write(`${err instanceof PartialFailure ? '' : 'Error: '}${message}\n`);
    if (process.env.CAIRN_DEBUG) console.error(err);
    process.exitCode = 1;
  }
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}
