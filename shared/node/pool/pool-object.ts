// pool/: the pool object, placement of copies and shards, the write quorum, shard reads, reachability.
import * as z from 'zod';
import { Magic } from '../../format/constants.ts';
import { targetConfigSchema, type TargetConfig } from '../../settings.ts';
import { openSecret, sealSecret } from '../crypto/keys.ts';
import type { SodiumProvider } from '../crypto/provider.ts';
import { openJson, sealJson } from '../format/json-object.ts';
import { ObjectFormatError } from '../format/sealed-object.ts';

/**
 * The pool object (docs/FORMAT.md, "Pools"): the targets a repository spans, with their sealed S3
 * secrets, and its redundancy policy. Written to every target, so `connect` through any one of them
 * finds the others.
 */
export const POOLS_PREFIX = 'pools/';

export type { TargetState };
import { RepositoryError } from './errors.ts';
import {
  NEW_POOL_POLICY,
  policySchema,
  quorumFits,
  SINGLE_COPY,
  type PoolPolicy,
  type TargetState,
} from '../../pool-policy.ts';

export { NEW_POOL_POLICY, SINGLE_COPY, type PoolPolicy };

const poolTargetSchema = z.object({
  id: z.number().int().min(1).max(0xfffe),
  name: z.string().min(1).max(200),
  weight: z.number().int().min(1).max(1_000_000),
  state: z.enum(['active', 'draining', 'gone']),
  config: targetConfigSchema,
  /** base64 of nonce || XChaCha20-Poly1305(secrets key, aad = "pool-target:<id>"), or null. */
  secret: z.string().nullable(),
});

const poolDocSchema = z
  .object({
    version: z.literal(2),
    generation: z.number().int().min(1),
    createdAt: z.string(),
    nextId: z.number().int().min(2).max(0xffff),
    self: z.number().int().min(1),
    policy: policySchema,
    targets: z.array(poolTargetSchema).min(1).max(64),
  })
  .refine((d) => new Set(d.targets.map((t) => t.id)).size === d.targets.length, 'two targets share an id')
  .refine((d) => d.targets.every((t) => t.id < d.nextId), 'a target id is not below nextId')
  .refine((d) => d.targets.some((t) => t.id === d.self), 'the target holding it is not listed')
  .refine((d) => quorumFits(d.policy), 'the write quorum does not fit the policy');
type PoolDocJson = z.infer<typeof poolDocSchema>;

export interface PoolTarget {
  id: number;
  name: string;
  weight: number;
  state: TargetState;
  config: TargetConfig;
  /** The S3 secret in clear (memory only), or null for a target that needs none. */
  secret: string | null;
}

export interface PoolDoc {
  generation: number;
  createdAt: string;
  /** The id the next target to join gets: ids are never reused. */
  nextId: number;
  policy: PoolPolicy;
  targets: PoolTarget[];
}

const NAME = /^pools\/([0-9a-f]{16})-([0-9a-f]{8})$/;

/**
 * Targets in the order every machine takes their locks: by pool id (the same everywhere), then the
 * others. Two machines locking in different orders would each wait for the other.
 */
export function inLockOrder<T extends { id: number; poolId: number | null }>(targets: readonly T[]): T[] {
  const key = (t: T) => t.poolId ?? 0x10000 + t.id;
  return [...targets].sort((a, b) => key(a) - key(b));
}

/**
 * Refreshes every target an operation has locked (in lock order) and returns their rows as the refresh
 * left them: another machine may have changed a weight, drained a member or added one. A member this
 * machine did not know is not locked: the operation stops, naming it, and a second run locks it too.
 */
export async function refreshLocked<T extends { id: number; name: string }>(
  locked: readonly T[],
  o: {
    refresh(t: T): Promise<{ learnt: { name: string }[] }>;
    current(id: number): T;
    operation: string;
  },
): Promise<T[]> {
  const learnt: string[] = [];
  for (const t of locked) learnt.push(...(await o.refresh(t)).learnt.map((x) => `"${x.name}"`));
  if (learnt.length)
    throw new RepositoryError(
      `The pool has ${learnt.length === 1 ? 'a member' : 'members'} this machine had not seen (${learnt.join(', ')}), which ${o.operation} did not lock: run it again.`,
    );
  return locked.map((t) => o.current(t.id));
}

/** The object name of a pool generation; the random part separates two writers of one generation. */
export function poolObjectKey(generation: number, random: string): string {
  return `${POOLS_PREFIX}${generation.toString(16).padStart(16, '0')}-${random}`;
}

/** The generation an object name carries, or null for a name that is not a pool object's. */
export function poolGeneration(key: string): number | null {
  const m = NAME.exec(key);
  return m ? parseInt(m[1]!, 16) : null;
}

const secretLabel = (id: number) => `pool-target:${id}`;

export function sealPool(
  sodium: SodiumProvider,
  keys: { metaSeal: Uint8Array; secrets: Uint8Array },
  key: string,
  /** The id of the target this copy is written to. */
  self: number,
  doc: PoolDoc,
  /** Test vectors only: the object's nonce (secrets are sealed with random ones). */
  nonce?: Uint8Array,
): Buffer {
  const json: PoolDocJson = {
    version: 2,
    generation: doc.generation,
    createdAt: doc.createdAt,
    nextId: doc.nextId,
    self,
    policy: doc.policy,
    targets: doc.targets.map((t) => ({
      ...t,
      secret:
        t.secret === null
          ? null
          : sealSecret(sodium, keys.secrets, secretLabel(t.id), t.secret).toString('base64'),
    })),
  };
  return sealJson(sodium, keys.metaSeal, Magic.pool, key, json, nonce);
}

/**
 * Opens and checks a pool object; its generation must be the one its name carries. `self` is the id of
 * the target it says it is on.
 */
export function openPool(
  sodium: SodiumProvider,
  keys: { metaSeal: Uint8Array; secrets: Uint8Array },
  key: string,
  sealed: Uint8Array,
): { self: number; doc: PoolDoc } {
  const parsed = poolDocSchema.safeParse(openJson(sodium, keys.metaSeal, Magic.pool, key, sealed));
  if (!parsed.success)
    throw new ObjectFormatError('bad-content', `${key} is malformed: ${parsed.error.issues[0]?.message}`);
  const d = parsed.data;
  if (poolGeneration(key) !== d.generation)
    throw new ObjectFormatError('bad-content', `${key} holds generation ${d.generation}`);
  const doc: PoolDoc = {
    generation: d.generation,
    createdAt: d.createdAt,
    nextId: d.nextId,
    policy: d.policy,
    targets: d.targets.map((t) => {
      let secret: string | null = null;
      if (t.secret !== null) {
        try {
          secret = openSecret(sodium, keys.secrets, secretLabel(t.id), Buffer.from(t.secret, 'base64'));
        } catch {
          throw new ObjectFormatError('bad-content', `${key}: the secret of target ${t.id} does not open`);
        }
      }
      return { ...t, secret };
    }),
  };
  return { self: d.self, doc };
}
