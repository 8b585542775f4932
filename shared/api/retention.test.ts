import { describe, expect, it } from 'vitest';
import { pruneCounts, type PruneResult, type PruneTargetResult } from './retention.ts';

const target = (name: string, o: Partial<PruneTargetResult>): PruneTargetResult => ({
  target: name,
  packs: 0,
  packsDeleted: 0,
  packsRepacked: 0,
  packsWritten: 0,
  unindexedPacksDeleted: 0,
  unindexedBytes: 0,
  missingPacks: 0,
  indexFilesRewritten: 0,
  indexFilesWritten: 0,
  bytesBefore: 0,
  bytesAfter: 0,
  bytesFreed: 0,
  bytesRepacked: 0,
  unusedBytesAfter: 0,
  ...o,
});
const result = (o: Partial<PruneResult>): PruneResult => ({
  dryRun: false,
  snapshots: 1,
  usedBlobs: 1,
  targets: [],
  bytesFreed: 0,
  durationMs: 1,
  ...o,
});

describe('the packs a prune deleted and repacked, each pack once (pruneCounts)', () => {
  it('adds up the targets outside a pool', () => {
    const r = result({
      targets: [
        target('a', { packsDeleted: 2, packsRepacked: 1, unindexedPacksDeleted: 1 }),
        target('b', { packsDeleted: 3 }),
      ],
    });
    expect(pruneCounts(r)).toEqual({ packsDeleted: 6, packsRepacked: 1 });
  });

  it("takes a pool's own counts, not each copy's (two copies of 3 deleted packs are 3 packs)", () => {
    const r = result({
      targets: [
        target('a', { packsDeleted: 3, packsRepacked: 1 }),
        target('b', { packsDeleted: 2, packsRepacked: 1, unindexedPacksDeleted: 1 }),
        target('c', { packsDeleted: 1 }),
      ],
      replicated: { packs: 10, packsDeleted: 3, packsRepacked: 1, packsWritten: 1, missingPacks: 0 },
      erasureCoded: {
        packs: 4,
        packsDeleted: 1,
        packsRepacked: 1,
        packsWritten: 1,
        strayShardsDeleted: 0,
        missingPacks: 0,
      },
    });
    expect(pruneCounts(r)).toEqual({ packsDeleted: 5, packsRepacked: 2 });
  });
});
