// Moves the secret variables out of process.env before the launcher can start any child process (an
// esbuild rebuild, tsx's service): shared/node/secret-env.ts takes them from here, and wipes them from
// /proc/<pid>/environ.
const NAMES = [
  'CAIRN_PASSPHRASE',
  'CAIRN_NEW_PASSPHRASE',
  'CAIRN_RECOVERY_KEY',
  'CAIRN_S3_SECRET_ACCESS_KEY',
];

export function setSecretEnvAside() {
  const stash = (globalThis[Symbol.for('cairn.secret-env')] ??= {});
  for (const name of NAMES) {
    if (name in stash) continue;
    stash[name] = process.env[name];
    delete process.env[name];
  }
}
