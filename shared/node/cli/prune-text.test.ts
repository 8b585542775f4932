import { describe, expect, it } from 'vitest';
import type { PruneResult, PruneTargetResult } from '../../api/retention.ts';
import { pruneTarget } from '../../../test/support/prune-results.ts';
import { pruneText } from './prune-text.ts';

const target = (o: Partial<PruneTargetResult>) =>
  pruneTarget({
    packs: 10,
    indexFilesRewritten: 1,
    indexFilesWritten: 1,
    bytesBefore: 10 << 20,
    bytesAfter: 6 << 20,
    bytesFreed: 4 << 20,
    ...o,
  });
const replicated = {
  packs: 12,
  packsDeleted: 3,
  packsRepacked: 2,
  packsWritten: 1,
  missingPacks: 0,
  straysAdopted: 0,
};

describe("prune's text (pruneText)", () => {
  it("in a pool, counts a target's pack objects, and the pool's packs once", () => {
    const r: PruneResult = {
      dryRun: false,
      snapshots: 2,
      usedBlobs: 40,
      targets: [
        target({
          packsDeleted: 2,
          packsRepacked: 1,
          packsWritten: 1,
          unindexedPacksDeleted: 2,
          unindexedBytes: 2048,
        }),
      ],
      replicated,
      bytesFreed: 4 << 20,
      durationMs: 1200,
    };
    expect(pruneText(r)).toBe(
      [
        'Target "d1": 3 pack objects deleted, 1 new one written, 2 objects no index names there (left by an interrupted backup, move or prune; 2 KiB) deleted, 1 index file rewritten; 10 MiB → 6 MiB, 0 B unused left.',
        'Whole-copy packs of the pool: 3 of 12 deleted, 2 repacked into 1, each new pack written once with every copy (or shard) the policy asks for.',
        'Freed 4 MiB (2 snapshots, 40 blobs in use; done in 1.2 s).',
      ].join('\n'),
    );
  });

  it('a dry run says nothing of new packs it has not made', () => {
    const r: PruneResult = {
      dryRun: true,
      snapshots: 2,
      usedBlobs: 40,
      targets: [target({ packsDeleted: 2, packsRepacked: 1 })],
      replicated: { ...replicated, packsWritten: 0 },
      bytesFreed: 3 << 20,
      durationMs: 300,
    };
    const text = pruneText(r);
    expect(text).not.toMatch(/into|new one|written once/);
    expect(text).toMatch(/^Whole-copy packs of the pool: 3 of 12 deleted, 2 repacked\.$/m);
    const single = pruneText({ ...r, replicated: undefined });
    expect(single).toMatch(/^Target "d1": 2 packs deleted, 1 repacked, 1 index file rewritten;/);
  });

  it('says which stray copies it keeps and indexes, in a dry run and after', () => {
    const r: PruneResult = {
      dryRun: true,
      snapshots: 1,
      usedBlobs: 10,
      targets: [target({})],
      replicated: { ...replicated, straysAdopted: 1 },
      bytesFreed: 0,
      durationMs: 100,
    };
    expect(pruneText(r)).toMatch(/^1 copy of a pack no index named would be kept and indexed: /m);
    expect(pruneText({ ...r, dryRun: false })).toMatch(
      /^1 copy of a pack no index named is kept and now indexed: /m,
    );
    expect(pruneText({ ...r, dryRun: false, replicated: { ...replicated, straysAdopted: 3 } })).toMatch(
      /^3 copies of packs no index named are kept and now indexed: .*restores full redundancy from them\)\.$/m,
    );
  });
});
