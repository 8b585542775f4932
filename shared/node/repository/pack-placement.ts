import type { PackPlacement } from '../../../workers/protocol.ts';
import type { Keystore, TargetRow } from '../engine/keystore/keystore.ts';
import { StorageError } from '../storage/storage.ts';
import { RepositoryError } from './errors.ts';
import { PlacementError, rankTargets } from './placement.ts';

/**
 * Where the copies of a pack written through `home` go: in a pool, the targets its rendezvous placement
 * ranks first (placement.ts) among the members, as many as the policy's copies; outside one, `home`.
 */
export function packPlacement(ks: Keystore, home: TargetRow): PackPlacement | undefined {
  const state = ks.pool.state();
  if (!state || home.poolId === null) return undefined;
  if (state.policy.scheme !== 'replicas')
    throw new RepositoryError(
      'This repository asks for erasure coding, which this version cannot write yet.',
    );
  return {
    members: ks
      .listTargets()
      .filter((t) => t.poolId !== null)
      .map((t) => ({ localId: t.id, poolId: t.poolId!, weight: t.weight, state: t.state })),
    copies: state.policy.copies,
    writeQuorum: state.policy.writeQuorum,
  };
}

/** The local ids of the targets that get a copy of `packId` (`fallback` outside a pool). */
export function copyTargets(
  placement: PackPlacement | undefined,
  fallback: number,
  packId: Uint8Array,
): number[] {
  if (!placement) return [fallback];
  const members = placement.members.map((m) => ({ id: m.poolId, weight: m.weight, state: m.state }));
  const ranked = rankTargets(packId, members);
  if (ranked.length < placement.copies)
    throw new PlacementError(placement.copies, ranked.length, members.length);
  return ranked
    .slice(0, placement.copies)
    .map((poolId) => placement.members.find((m) => m.poolId === poolId)!.localId);
}

/**
 * Puts a pack's copies in parallel. A target that failed once (in `down`) is not tried again by the same
 * writer: its copy is queued at once. Throws the first failure when fewer than `quorum` copies landed.
 */
export async function putCopies(
  where: number[],
  put: (targetId: number) => Promise<void>,
  quorum: number,
  down: Map<number, unknown>,
): Promise<{ copies: number[]; queued: { targetId: number; message: string }[] }> {
  const settled = await Promise.allSettled(
    where.map((id) => (down.has(id) ? Promise.reject(down.get(id)) : put(id))),
  );
  const copies: number[] = [];
  const queued: { targetId: number; message: string }[] = [];
  let first: unknown;
  settled.forEach((r, i) => {
    const id = where[i]!;
    if (r.status === 'fulfilled') return void copies.push(id);
    first ??= r.reason;
    if (r.reason instanceof StorageError) down.set(id, r.reason);
    queued.push({ targetId: id, message: (r.reason as Error).message });
  });
  if (copies.length < quorum) {
    if (quorum === 1 || copies.length === 0) throw first;
    throw new RepositoryError(
      `only ${copies.length} of the ${where.length} copies could be stored, and ${quorum} must be: ${queued.map((q) => q.message).join('; ')}`,
    );
  }
  return { copies, queued };
}
