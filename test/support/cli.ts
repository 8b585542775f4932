import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../bin/cairn.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env: Record<string, string>;
  /** Run without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so that file modes bind even for root. */
  dropFileCaps?: boolean;
}

export function spawnCli(args: string[], opts: CliOptions): ChildProcess {
  const env = { ...process.env, ...opts.env };
  delete env.NODE_OPTIONS;
  if (opts.dropFileCaps && process.getuid?.() === 0) {
    const caps = '-dac_override,-dac_read_search';
    return spawn(
      'setpriv',
      [`--inh-caps=${caps}`, `--bounding-set=${caps}`, process.execPath, CLI, ...args],
      { env },
    );
  }
  return spawn(process.execPath, [CLI, ...args], { env });
}

export function runCli(args: string[], opts: CliOptions): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, opts);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs a command that must succeed with --json and returns its parsed result. */
export async function cliJson<T>(args: string[], opts: CliOptions): Promise<T> {
  const r = await runCli(['--json', ...args], opts);
  if (r.code !== 0) throw new Error(`cairn ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}
