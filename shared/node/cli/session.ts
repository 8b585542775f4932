import {
  type Unlocker,
  type LockedKeystore,
  WorkerPool,
  defaultWorkerCount,
  workersBesideKeyDerivation,
} from '../engine/exports.ts';
import { Engine, defaultHome } from '../engine/engine.ts';
import { readPassphrase } from './passphrase.ts';
import { takeSecretEnv } from '../secret-env.ts';

/** CAIRN_RECOVERY_KEY when set, else the passphrase (CAIRN_PASSPHRASE or the prompt). */
export async function readUnlocker(opts: { recoveryKey?: boolean } = {}): Promise<Unlocker> {
  const rk = takeSecretEnv('CAIRN_RECOVERY_KEY');
  if (rk) return { recoveryKey: rk };
  if (opts.recoveryKey) {
    const { askHidden } = await import('./passphrase.ts');
    return { recoveryKey: await askHidden('Recovery key: ') };
  }
  return { passphrase: await readPassphrase({ confirm: false }) };
}

/**
 * Unlocks the keystore for one command and always closes it. Commands that run chunk workers say so
 * (`workers`: true, or how many): those start while the key is derived.
 */
export async function withEngine<T, E = undefined>(
  fn: (e: Engine, early: E | undefined) => Promise<T>,
  opts: {
    workers?: boolean | number;
    /** Work on the key-free caches while the key is derived (see Engine.unlockWhile). */
    whileUnlocking?: (locked: LockedKeystore) => Promise<E>;
  } = {},
): Promise<T> {
  const besides = opts.workers === true ? defaultWorkerCount() : opts.workers || 0;
  WorkerPool.prewarm(workersBesideKeyDerivation(besides));
  const { engine, early } = await Engine.unlockWhile(
    defaultHome(),
    await readUnlocker(),
    opts.whileUnlocking ?? (async () => undefined),
  );
  // The others load while the command plans (beside the derivation they raised its memory peak, and on
  // two cores slowed its lanes).
  if (opts.workers) WorkerPool.prewarm(opts.workers === true ? engine.settings().workers : opts.workers);
  engine.notice = (m) => process.stderr.write(`Warning: ${m}\n`);
  try {
    return await fn(engine, early);
  } finally {
    engine.close();
  }
}
