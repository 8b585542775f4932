/**
 * The pool's redundancy policy: its shape, every bound and every rule, in one place. The engine keeps
 * it in the pool object, the API contract and the CLI check requests against it, the UI words it
 * (pool-text.ts). Browser-safe.
 */
import * as z from 'zod';
import { EC_MAX_K, EC_MAX_M, POOL_MAX_TARGETS } from './limits.ts';
import { SettingsError } from './settings-error.ts';

/** A pool member: taking new copies, giving its copies away (drain), or lost. */
export type TargetState = 'active' | 'draining' | 'gone';

/** Whole copies of each pack: 1 to 3. */
export const REPLICAS_MAX = 3;
export { EC_MAX_K, EC_MAX_M, POOL_MAX_TARGETS };

export const policySchema = z.discriminatedUnion('scheme', [
  z.object({
    scheme: z.literal('replicas'),
    copies: z.number().int().min(1).max(REPLICAS_MAX),
    writeQuorum: z.number().int().min(1).max(REPLICAS_MAX),
  }),
  z.object({
    scheme: z.literal('ec'),
    k: z.number().int().min(1).max(EC_MAX_K),
    m: z.number().int().min(1).max(EC_MAX_M),
    writeQuorum: z
      .number()
      .int()
      .min(1)
      .max(EC_MAX_K + EC_MAX_M),
  }),
]);
export type PoolPolicy = z.infer<typeof policySchema>;

export const SINGLE_COPY: PoolPolicy = { scheme: 'replicas', copies: 1, writeQuorum: 1 };
/**
 * The policy of a new pool: someone who adds a second bucket expects a second copy, not their data
 * spread over two buckets that must both survive. A backup goes on with one of them out of reach.
 */
export const NEW_POOL_POLICY: PoolPolicy = { scheme: 'replicas', copies: 2, writeQuorum: 1 };

/** A backup waits for at most every copy, and for at least the k shards a pack is read back from. */
export function quorumFits(
  p:
    | { scheme: 'replicas'; copies: number; writeQuorum: number }
    | { scheme: 'ec'; k: number; m: number; writeQuorum: number },
): boolean {
  return p.scheme === 'replicas'
    ? p.writeQuorum >= 1 && p.writeQuorum <= p.copies
    : p.writeQuorum >= p.k && p.writeQuorum <= p.k + p.m;
}

/** Targets a policy needs at the least: its copies, or k + m. */
export function targetsNeeded(p: PoolPolicy): number {
  return p.scheme === 'replicas' ? p.copies : p.k + p.m;
}

/** "4+2" → { k: 4, m: 2 }; null when the text is not of that form. */
export function parseErasure(text: string): { k: number; m: number } | null {
  const m = /^(\d{1,2})\+(\d{1,2})$/.exec(text);
  return m ? { k: Number(m[1]), m: Number(m[2]) } : null;
}

/** Throws a SettingsError (naming the field) when a replica policy is impossible whatever the pool. */
export function checkReplicas(replicas: number, writeQuorum = replicas): void {
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > REPLICAS_MAX)
    throw new SettingsError('--replicas must be 1, 2 or 3.', 'replicas');
  if (!Number.isInteger(writeQuorum) || writeQuorum < 1 || writeQuorum > replicas)
    throw new SettingsError(`--write-quorum must be from 1 to ${replicas} (the copies).`, 'writeQuorum');
}

/** Throws a SettingsError (naming the field) when an erasure-coding policy is impossible whatever the pool. */
export function checkErasure(k: number, m: number, writeQuorum = k + m): void {
  if (!Number.isInteger(k) || k < 1 || k > EC_MAX_K)
    throw new SettingsError(`--ec: k (data shards) must be from 1 to ${EC_MAX_K}.`, 'k');
  if (!Number.isInteger(m) || m < 1 || m > EC_MAX_M)
    throw new SettingsError(`--ec: m (parity shards) must be from 1 to ${EC_MAX_M}.`, 'm');
  if (!Number.isInteger(writeQuorum) || writeQuorum < k || writeQuorum > k + m)
    throw new SettingsError(
      `--write-quorum must be from ${k} to ${k + m} (a pack can be read back from any ${k} shards).`,
      'writeQuorum',
    );
  if (k + m > POOL_MAX_TARGETS)
    throw new SettingsError(
      `${k}+${m} shards need ${k + m} targets, and a pool has at most ${POOL_MAX_TARGETS}.`,
      'k',
    );
}
