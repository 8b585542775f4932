import { describe, expect, it } from 'vitest';
import {
  policyChangeText,
  rebalanceText,
  redundancyText,
  snapshotRedundancyText,
  storageHeadline,
  storageRedundancyLine,
  type RedundancyView,
} from './pool-text.ts';

const base: RedundancyView = {
  scheme: 'replicas',
  copies: 3,
  packs: 10,
  full: 10,
  leastStored: 3,
  queued: 0,
  short: 0,
  lost: 0,
  unconverted: 0,
  waitingOn: [],
  state: 'full',
};

describe('pool texts', () => {
  // The newcomer run-through (session 41): with no target added yet, Storage said "One target · 0 packs
  // · 0 B" and, in green, "One copy of each pack: the policy keeps no second copy."
  it('says there is no target yet before one is added', () => {
    const none = { pooled: false, targets: [], storedBytes: 0, redundancy: { ...base, packs: 0, copies: 1 } };
    expect(storageHeadline(none)).toBe('No target yet');
    expect(storageRedundancyLine(0, none.redundancy)).toBe(
      'Nothing is stored yet: add a bucket or a folder in Settings, then back up.',
    );
    expect(storageHeadline({ ...none, targets: [{}] })).toBe('One target · 0 packs · 0 B');
    expect(
      storageHeadline({
        ...none,
        pooled: true,
        targets: [{}, {}],
        storedBytes: 2048,
        redundancy: { packs: 1 },
      }),
    ).toBe('A pool of 2 targets · 1 pack (2 KiB)');
    expect(storageRedundancyLine(1, { ...base, copies: 1 })).toBe(
      'One copy of each pack: the policy keeps no second copy.',
    );
  });

  it('says fully redundant only when every pack has its copies', () => {
    expect(redundancyText(base)).toBe('Fully redundant: every pack has its 3 copies.');
    expect(
      redundancyText({ ...base, full: 6, leastStored: 2, queued: 4, waitingOn: ['c'], state: 'completing' }),
    ).toBe('2 of 3 copies stored, completing — 4 copies queued, waiting on “c”.');
    expect(redundancyText({ ...base, full: 9, leastStored: 1, short: 1, state: 'short' })).toBe(
      '1 pack has fewer than 3 copies (as few as 1): Repair writes the missing ones.',
    );
    expect(redundancyText({ ...base, full: 9, lost: 1, state: 'short' })).toMatch(
      /^1 pack has no stored copy/,
    );
  });

  it('explains a policy change before it is made', () => {
    const from = { scheme: 'replicas', copies: 2, writeQuorum: 1 } as const;
    expect(
      policyChangeText(
        from,
        { scheme: 'replicas', copies: 3, writeQuorum: 2 },
        { activeTargets: 3, storedBytes: 1 << 30 },
      ),
    ).toEqual([
      'Storage: 3× the data stored (now 2×).',
      'Any 2 targets may be lost without losing a backup.',
      'Backups wait for 2 copies of each pack: a backup goes on with 1 target of 3 out of reach.',
      'Packs already stored keep 2 copies until you press Repair (or Rebalance), which writes about 1 GiB of new copies.',
    ]);
    expect(
      policyChangeText(
        from,
        { scheme: 'replicas', copies: 1, writeQuorum: 1 },
        { activeTargets: 3, storedBytes: 0 },
      )[3],
    ).toMatch(/extra copies until you press Rebalance/);
    expect(
      policyChangeText(
        from,
        { scheme: 'replicas', copies: 3, writeQuorum: 3 },
        { activeTargets: 3, storedBytes: 0 },
      )[2],
    ).toBe(
      'Backups wait for 3 copies of each pack: a backup pauses while any of the 3 targets is out of reach.',
    );
    // Each pack's 2 copies go to 2 of the 5 targets: two down may be both of one pack's (it said "up
    // to 4 targets of 5").
    expect(
      policyChangeText(
        from,
        { scheme: 'replicas', copies: 2, writeQuorum: 1 },
        { activeTargets: 5, storedBytes: 0 },
      )[2],
    ).toBe('Backups wait for 1 copy of each pack: a backup goes on with 1 target of 5 out of reach.');
  });

  it('explains erasure coding, and the packs already stored that Rebalance rewrites', () => {
    const from = { scheme: 'replicas', copies: 2, writeQuorum: 1 } as const;
    const ec = { scheme: 'ec', k: 4, m: 2, writeQuorum: 5 } as const;
    expect(policyChangeText(from, ec, { activeTargets: 6, storedBytes: 3 * 2 ** 30 })).toEqual([
      'Storage: 1.50× the data stored (now 2×).',
      'Any 2 targets may be lost without losing a backup.',
      'Backups wait for 5 shards of each pack: a backup goes on with 1 target of 6 out of reach.',
      'Packs already stored stay as they are until you press Rebalance, which rewrites them as 4+2 shards (about 4.5 GiB written, then the old objects deleted).',
    ]);
    expect(
      policyChangeText(ec, { ...ec, writeQuorum: 6 }, { activeTargets: 6, storedBytes: 0 }),
    ).toHaveLength(3);
    expect(policyChangeText(ec, from, { activeTargets: 6, storedBytes: 1 << 30 })[3]).toBe(
      'Packs already stored stay as they are until you press Rebalance, which rewrites them as 2 copies (about 2 GiB written, then the old objects deleted).',
    );
    const shards = { ...base, scheme: 'ec', copies: 6 } as const;
    expect(redundancyText(shards)).toBe('Fully redundant: every pack has its 6 shards.');
    expect(redundancyText({ ...shards, full: 4, unconverted: 6, state: 'short' })).toBe(
      '6 packs are stored as an earlier policy had them: Rebalance rewrites them.',
    );
  });

  it('says where a rebalance wrote and removed, as its dry run does', () => {
    const r = {
      packs: 4,
      copied: 2,
      removed: 2,
      bytesCopied: 2 << 20,
      targets: [
        { name: 'a', add: 0, remove: 2, bytesAdded: 0 },
        { name: 'b', add: 2, remove: 0, bytesAdded: 2 << 20 },
      ],
    };
    expect(rebalanceText(r, false)).toBe(
      '2 copies written (2 MiB) and 2 removed, over 4 packs: "a" −2, "b" +2 (2 MiB).',
    );
    expect(rebalanceText(r, true)).toBe(
      '2 copies would be written (2 MiB) and 2 removed (of 4 packs): "a" −2, "b" +2 (2 MiB).',
    );
  });

  it("words one backup's redundancy for History", () => {
    const v = { leastStored: 1, copies: 2, scheme: 'replicas' as const, packs: 1 };
    expect(snapshotRedundancyText({ ...v, state: 'short' })).toEqual({
      short: '1 of 2 copies',
      detail:
        '1 pack it uses has fewer copies than the policy asks: Repair (Storage) writes the missing ones.',
    });
    expect(snapshotRedundancyText({ ...v, state: 'unconverted', packs: 3 })).toEqual({
      short: 'Earlier policy',
      detail:
        '3 packs it uses are whole but stored as an earlier policy had them: Rebalance (Storage) rewrites them as the policy asks.',
    });
    expect(
      snapshotRedundancyText({ ...v, state: 'unknown', problem: 'Tree 12ab… is not in the index.' }),
    ).toEqual({
      short: 'Not known',
      detail: 'A folder listing of it could not be read: Tree 12ab… is not in the index.',
    });
    expect(snapshotRedundancyText({ ...v, state: 'lost', scheme: 'ec', copies: 6 }).short).toBe(
      'Cannot be restored whole',
    );
    expect(snapshotRedundancyText({ ...v, state: 'lost', scheme: 'ec', copies: 6 }).detail).toMatch(
      /too few shards left/,
    );
    expect(
      snapshotRedundancyText({ ...v, state: 'full', leastStored: 6, copies: 6, scheme: 'ec', packs: 0 }),
    ).toEqual({ short: 'Fully redundant', detail: 'Every pack it uses has its 6 shards.' });
  });
});
