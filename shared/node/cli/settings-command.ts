import { Option, type Command } from 'commander';
import {
  formatLimitHours,
  formatSize,
  parseLimitHours,
  parseRate,
  type LimitHours,
  type PipelineSettings,
} from '../../settings.ts';
import type { SettingsOverrides } from '../engine/pipeline-settings.ts';
import { UsageError, type Output } from './output.ts';
import { withEngine } from './session.ts';

/** "5MiB", "5MiB/s", "800KiB/s": bytes a second; "0": no cap. */
export function rateOption(flag: string) {
  return (v: string): number => {
    const n = parseRate(v);
    if (Number.isNaN(n))
      throw new UsageError(`${flag} "${v}" is not a rate (examples: 5MiB, 800KiB/s, 0 for none).`);
    return n;
  };
}

/** "08:00-18:00": the limits hold only then; "all-day": always. */
function hoursOption(v: string): LimitHours | null {
  if (/^all[- ]?day$/i.test(v.trim())) return null;
  const h = parseLimitHours(v);
  if (!h)
    throw new UsageError(
      `--limit-hours "${v}" is not a window of the day (examples: 08:00-18:00, 22:00-06:00, all-day).`,
    );
  return h;
}

export const limitUploadOption = () =>
  new Option(
    '--limit-upload <rate>',
    'cap uploads at this many bytes a second, all workers together ("5MiB", "800KiB/s"; 0: no cap)',
  ).argParser(rateOption('--limit-upload'));

export const limitDownloadOption = () =>
  new Option(
    '--limit-download <rate>',
    'cap downloads at this many bytes a second, all workers together ("20MiB", "800KiB/s"; 0: no cap)',
  ).argParser(rateOption('--limit-download'));

export function pipelineOverrides(o: {
  chunkSize?: number;
  workers?: number;
  uploadsPerWorker?: number;
  limitUpload?: number;
  limitDownload?: number;
  limitHours?: LimitHours | null;
}): SettingsOverrides {
  return {
    chunkSize: o.chunkSize,
    workers: o.workers,
    uploadsPerWorker: o.uploadsPerWorker,
    ...(o.limitUpload !== undefined ? { uploadLimit: o.limitUpload } : {}),
    ...(o.limitDownload !== undefined ? { downloadLimit: o.limitDownload } : {}),
    ...(o.limitHours !== undefined ? { limitHours: o.limitHours } : {}),
  };
}

/** The limits in one phrase: "uploads capped at 5 MiB/s, downloads not capped (08:00–18:00)". */
export function limitsText(s: PipelineSettings): string {
  const cap = (what: string, n: number | undefined) =>
    n ? `${what} capped at ${formatSize(n)}/s` : `${what} not capped`;
  const hours =
    s.limitHours && (s.uploadLimit || s.downloadLimit) ? ` (only ${formatLimitHours(s.limitHours)})` : '';
  return `${cap('uploads', s.uploadLimit)}, ${cap('downloads', s.downloadLimit)}${hours}`;
}

/** `cairn settings`: show or change the saved pipeline settings and the bandwidth limits. */
export function registerSettingsCommand(
  program: Command,
  out: () => Output,
  parse: { size: (v: string) => number; int: (name: string) => (v: string) => number },
): void {
  program
    .command('settings')
    .description('show or change the saved pipeline settings and bandwidth limits')
    .addOption(
      new Option('--chunk-size <size>', 'the largest chunk files are cut into (8MiB, 512KiB …)').argParser(
        parse.size,
      ),
    )
    .addOption(
      new Option('--workers <n>', 'worker threads that read, seal and send').argParser(
        parse.int('Worker count'),
      ),
    )
    .addOption(
      new Option('--uploads-per-worker <n>', 'requests each worker keeps in flight').argParser(
        parse.int('Uploads per worker'),
      ),
    )
    .addOption(limitUploadOption())
    .addOption(limitDownloadOption())
    .addOption(
      new Option(
        '--limit-hours <from-to>',
        'the limits hold only in this window of local time ("08:00-18:00", "22:00-06:00"; "all-day": always)',
      ).argParser(hoursOption),
    )
    .action(async (opts) => {
      const o = out();
      const s = await withEngine(async (e) => e.saveSettings(pipelineOverrides(opts)));
      o.result(
        s,
        `chunk size ${formatSize(s.chunkSize)}, ${s.workers} workers, ${s.uploadsPerWorker} uploads per worker, ${limitsText(s)}`,
      );
    });
}
