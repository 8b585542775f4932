/**
 * Rules a reader or maintainer of a repository follows that are not bytes, as cases in the vectors file
 * (docs/vectors/format-v2.json: indexSync, conversionTwins, strayCopies).
 */

/**
 * A reader's rule, not bytes: index files it loaded are gone from a target; were they replaced (their
 * packs no present file names were deleted on purpose) or lost (those packs count as missing)? Ids are
 * letters here; they are index file ids in a bucket.
 */
export const INDEX_SYNC_CASES = [
  {
    case: 'a prune replaced the loaded file',
    loaded: ['a'],
    rememberedSuperseded: [],
    present: [{ id: 'c', supersedes: ['a'] }],
    replaced: true,
  },
  {
    case: 'two generations since the reader looked: the present file supersedes one it never saw',
    loaded: ['a'],
    rememberedSuperseded: [],
    present: [{ id: 'c', supersedes: ['b'] }],
    replaced: true,
  },
  {
    case: 'the bucket lost a file: nothing supersedes it',
    loaded: ['a', 'x'],
    rememberedSuperseded: [],
    present: [{ id: 'x', supersedes: [] }],
    replaced: false,
  },
  {
    case: 'a prune replaced one loaded file, another is gone without a successor',
    loaded: ['a', 'b'],
    rememberedSuperseded: [],
    present: [{ id: 'c', supersedes: ['a'] }],
    replaced: false,
  },
  {
    case: 'the only unknown-looking superseded file is one the reader remembers as superseded',
    loaded: ['a'],
    rememberedSuperseded: ['z'],
    present: [{ id: 'c', supersedes: ['z'] }],
    replaced: false,
  },
];

/**
 * A rebalance's rule, not bytes: a pack to convert (stored another way than the policy says) whose twin
 * is indexed is not converted again, only its objects deleted. A twin has the same size and the same
 * blobs (id, offset, stored length: blob ids are letters here) and is complete under the policy (every
 * copy or shard where placement wants it). `twin` is the index of the candidate that is the pack's
 * twin, or null: convert it.
 */
export const CONVERSION_TWIN_CASES = [
  {
    case: 'an interrupted conversion had indexed the converted pack',
    pack: {
      size: 1000,
      blobs: [
        ['a', 0, 400],
        ['b', 400, 500],
      ],
    },
    candidates: [
      {
        size: 1000,
        complete: true,
        blobs: [
          ['a', 0, 400],
          ['b', 400, 500],
        ],
      },
    ],
    twin: 0,
  },
  {
    case: 'the converted pack still lacks a shard: convert again',
    pack: {
      size: 1000,
      blobs: [
        ['a', 0, 400],
        ['b', 400, 500],
      ],
    },
    candidates: [
      {
        size: 1000,
        complete: false,
        blobs: [
          ['a', 0, 400],
          ['b', 400, 500],
        ],
      },
    ],
    twin: null,
  },
  {
    case: 'the same blobs at other offsets are another pack',
    pack: {
      size: 1000,
      blobs: [
        ['a', 0, 400],
        ['b', 400, 500],
      ],
    },
    candidates: [
      {
        size: 1000,
        complete: true,
        blobs: [
          ['b', 0, 500],
          ['a', 500, 400],
        ],
      },
    ],
    twin: null,
  },
  {
    case: 'a pack of the same size with a blob fewer is not a twin',
    pack: {
      size: 1000,
      blobs: [
        ['a', 0, 400],
        ['b', 400, 500],
      ],
    },
    candidates: [{ size: 1000, complete: true, blobs: [['a', 0, 400]] }],
    twin: null,
  },
  {
    case: 'of two packs of its size, the one with its blobs',
    pack: {
      size: 1000,
      blobs: [
        ['a', 0, 400],
        ['b', 400, 500],
      ],
    },
    candidates: [
      {
        size: 1000,
        complete: true,
        blobs: [
          ['c', 0, 400],
          ['d', 400, 500],
        ],
      },
      {
        size: 1000,
        complete: true,
        blobs: [
          ['a', 0, 400],
          ['b', 400, 500],
        ],
      },
    ],
    twin: 1,
  },
];

/**
 * A prune's rule in a pool, not bytes: a copy of an indexed whole-copy pack on a target no index file
 * names for it (a stray: a killed move) is read as a source and, when the pack is kept while a named copy
 * is missing or known damaged (check --read-data), kept and named by the new index (`adopted`); otherwise
 * it is unindexed, and goes as unindexed objects do (deleted unless some blob in use is in no present pack;
 * a pack listed at its size anywhere, a stray included, is present). Targets are numbers; `listed` gives
 * each target's object size for the pack (absent: not listed); `used`: whether a snapshot needs the pack's
 * blob (unused packs are deleted).
 */
export const STRAY_COPY_CASES = [
  {
    case: 'both named copies intact: the stray is unindexed',
    pack: { size: 1000, on: [1, 2] },
    listed: { 1: 1000, 2: 1000, 3: 1000 },
    damaged: [],
    used: true,
    adopted: [],
    unindexed: [3],
  },
  {
    case: 'both named copies gone: the stray is the pack, kept and indexed',
    pack: { size: 1000, on: [1, 2] },
    listed: { 3: 1000 },
    damaged: [],
    used: true,
    adopted: [3],
    unindexed: [],
  },
  {
    case: 'a named copy known damaged: the stray is kept and indexed',
    pack: { size: 1000, on: [1, 2] },
    listed: { 1: 1000, 2: 1000, 3: 1000 },
    damaged: [1],
    used: true,
    adopted: [3],
    unindexed: [],
  },
  {
    case: 'the pack is unused: every copy goes, the stray as unindexed',
    pack: { size: 1000, on: [1, 2] },
    listed: { 3: 1000 },
    damaged: [],
    used: false,
    adopted: [],
    unindexed: [3],
  },
  {
    case: 'an object of another size is no copy: unindexed, and the pack is missing',
    pack: { size: 1000, on: [1, 2] },
    listed: { 3: 999 },
    damaged: [],
    used: true,
    adopted: [],
    unindexed: [3],
  },
];
