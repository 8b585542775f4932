import os from 'node:os';
/** Where Cairn keeps its data, and the error and check used for every user-given setting. */
import path from 'node:path';
import { SettingsError } from '../settings-error.ts';
import { targetConfigSchema, type TargetConfig } from '../settings.ts';

/** CAIRN_HOME, else the OS's per-user application data folder. */
export function defaultHome(): string {
  if (process.env.CAIRN_HOME) return path.resolve(process.env.CAIRN_HOME);
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Cairn');
  if (process.platform === 'win32')
    return path.join(process.env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Cairn');
  return path.join(process.env.XDG_DATA_HOME ?? path.join(home, '.local', 'share'), 'cairn');
}

export function keystorePath(home: string): string {
  return path.join(home, 'keystore.db');
}

export { SettingsError };

export function check<T>(
  schema: {
    safeParse(
      v: unknown,
    ):
      | { success: true; data: T }
      | { success: false; error: { issues: { message: string; path: PropertyKey[] }[] } };
  },
  v: unknown,
): T {
  const r = schema.safeParse(v);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new SettingsError(issue?.message ?? 'Invalid value.', issue?.path.join('.') || undefined);
  }
  return r.data;
}

/** A pool member's weight, its share of new copies: a whole number from 1 to 1,000,000. */
/**
 * A new target's config, checked: its schema, and a folder given as a full path. A relative one would
 * name a different folder from each place the app or the CLI is started (the CLI resolves its own).
 * Stored configs are not held to it: a keystore written before keeps working.
 */
export function checkNewTarget(config: unknown): TargetConfig {
  const parsed = check(targetConfigSchema, config);
  if (parsed.kind === 'dir' && !path.isAbsolute(parsed.path))
    throw new SettingsError(
      `The folder "${parsed.path}" is not a full path: give one that starts with ${path.sep === '/' ? '/' : 'a drive letter'}.`,
      'path',
    );
  return parsed;
}

export function checkWeight(weight: number): number {
  if (!Number.isInteger(weight) || weight < 1 || weight > 1_000_000)
    throw new SettingsError('The weight is a whole number from 1 to 1000000.', 'weight');
  return weight;
}
