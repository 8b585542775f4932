import { Engine, defaultHome } from '../engine/engine.ts';
import { readPassphrase } from './passphrase.ts';

/** Unlocks the keystore for one command and always closes it. */
export async function withEngine<T>(fn: (e: Engine) => Promise<T>): Promise<T> {
  const engine = await Engine.unlock(defaultHome(), await readPassphrase({ confirm: false }));
  try {
    return await fn(engine);
  } finally {
    engine.close();
  }
}
