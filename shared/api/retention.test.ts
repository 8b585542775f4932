import { describe, expect, it } from 'vitest';
import { pruneResult, pruneTarget } from '../../test/support/prune-results.ts';
import { pruneCounts, type PruneTargetResult } from './retention.ts';

const target = (name: string, o: Partial<PruneTargetResult>) => pruneTarget({ target: name, ...o });
const result = pruneResult;

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
      replicated: {
        packs: 10,
        packsDeleted: 3,
        packsRepacked: 1,
        packsWritten: 1,
        missingPacks: 0,
        straysAdopted: 0,
      },
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
