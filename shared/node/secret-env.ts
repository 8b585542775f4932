import fs from 'node:fs';

/**
 * Secrets given in the environment (CAIRN_PASSPHRASE, CAIRN_RECOVERY_KEY, CAIRN_S3_SECRET_ACCESS_KEY)
 * are taken once: removed from process.env, so no child process or worker inherits them, and wiped
 * from the process's initial environment block, which /proc/<pid>/environ shows for its whole life
 * (`delete process.env.X` does not touch it). The launchers (bin/) move them aside before anything can
 * start a child; `takeSecretEnv` finds them there.
 */
const STASH = Symbol.for('cairn.secret-env');

/** The variables that carry secrets. */
export const SECRET_ENV = [
  'CAIRN_PASSPHRASE',
  'CAIRN_NEW_PASSPHRASE',
  'CAIRN_RECOVERY_KEY',
  'CAIRN_S3_SECRET_ACCESS_KEY',
] as const;

type Stash = Record<string, string | undefined>;
const wiped = new Set<string>();

/** The secret in `name`, taken out of the environment (the launcher may have set it aside already). */
export function takeSecretEnv(name: (typeof SECRET_ENV)[number]): string | undefined {
  const stash = ((globalThis as Record<symbol, Stash | undefined>)[STASH] ??= {});
  if (!(name in stash)) {
    stash[name] = process.env[name];
    delete process.env[name];
  }
  if (!wiped.has(name)) {
    wiped.add(name);
    if (stash[name] !== undefined) wipeInitialEnvironment(name);
  }
  return stash[name];
}

/** Takes every secret variable at once: at the start of the CLI and of web mode. */
export function setSecretEnvAside(): void {
  for (const n of SECRET_ENV) takeSecretEnv(n);
}

/**
 * Overwrites `name=…` in this process's initial environment block (Linux: through /proc/self/mem,
 * between env_start and env_end of /proc/self/stat). Best effort: where that cannot be done (another OS,
 * a hardened kernel) the variable is still gone from process.env.
 */
export function wipeInitialEnvironment(name: string): void {
  if (process.platform !== 'linux') return;
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[47]);
    const end = Number(fields[48]);
    if (!(start > 0 && end > start && end - start < 1 << 24)) return;
    const fd = fs.openSync('/proc/self/mem', 'r+');
    try {
      const block = Buffer.alloc(end - start);
      fs.readSync(fd, block, 0, block.length, start);
      const needle = Buffer.from(`${name}=`);
      for (let at = block.indexOf(needle); at >= 0; at = block.indexOf(needle, at + 1)) {
        if (at > 0 && block[at - 1] !== 0) continue; // inside another variable's value
        const stop = block.indexOf(0, at);
        const blank = Buffer.alloc((stop < 0 ? block.length : stop) - at, 0x20);
        fs.writeSync(fd, blank, 0, blank.length, start + at);
      }
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // not possible here: process.env no longer has it, which is what children inherit
  }
}
