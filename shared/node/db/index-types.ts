import type { BlobKind } from '../../format/constants.ts';
import type { PackEntry } from '../format/pack.ts';

/** Whether an index file in the bucket describes the pack yet (`stored`: only this machine knows it). */
export type PackState = 'stored' | 'indexed';
/** One copy of a pack on one target: present, still to be written there, or absent from its listing. */
export type CopyState = 'stored' | 'queued' | 'missing';

export interface PackRow {
  id: Buffer;
  kind: BlobKind;
  size: number;
  state: PackState;
  jobId: string | null;
  /** An erasure-coded pack: k data and m parity shards, one per target. */
  ec?: { k: number; m: number };
}

/**
 * A pack to record, with the targets that hold a copy of it; for an erasure-coded pack, `shards[i]` is
 * the shard `copies[i]` holds.
 */
export type NewPack = PackRow & { copies: readonly number[]; shards?: readonly number[] };

/**
 * A pack to record with its blobs (`entries`: the same in an index file's layout, when the caller has
 * them), and the copies of it still to be made (`shards[i]`: the shard `targets[i]` is to hold).
 */
export interface PackToRecord {
  pack: NewPack;
  blobs: readonly PackEntry[];
  entries?: Buffer;
  queued?: { targets: readonly number[]; shards?: readonly number[] };
}

/** Where one shard of an erasure-coded pack is stored. */
export interface ShardCopy {
  shard: number;
  targetId: number;
}

export interface BlobLocation {
  id: Buffer;
  kind: BlobKind;
  packId: Buffer;
  /**
   * The targets holding a stored copy of the pack, at least one; shared by every blob of the pack. When
   * no copy is stored but some were found damaged (check --read-data), those: their other blobs are intact.
   */
  copies: readonly number[];
  /**
   * Whole copies found damaged, read only once every stored copy failed (a restore's last resort: the
   * blobs check did not flag are intact there). Never counted as stored: backups store such blobs again.
   */
  lastResort?: readonly number[];
  /** An erasure-coded pack: its stored shards (at least k), shared by every blob of the pack. */
  ec?: { k: number; m: number; shards: readonly ShardCopy[] };
  packSize: number;
  offset: number;
  storedLength: number;
  plainLength: number;
}
