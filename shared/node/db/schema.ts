/**
 * LocalDb migrations (format v2), applied in order; PRAGMA user_version records 1 + how many ran.
 * user_version 1 was the format-v1 keystore, which this version refuses (see db.ts). Never edit a
 * shipped migration: append a new one.
 *
 * The keystore is a cache of the repository in the bucket plus local settings: every table but
 * `settings`, `targets`, `jobs`, `plans` and `verifications` can be rebuilt from the bucket with `cairn connect`.
 */
export const FIRST_V2_VERSION = 2;

export const migrations: string[] = [
  `
  CREATE TABLE repository (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    repo_id TEXT NOT NULL,         -- random, hex; the same in every target's config
    config TEXT NOT NULL,          -- JSON of the repository config
    created_at INTEGER NOT NULL
  );
  CREATE TABLE key_slots (
    id TEXT PRIMARY KEY,           -- slot id, as in keys/<id>
    slot TEXT NOT NULL             -- JSON KeySlot (the master key wrapped; no secret in clear)
  );
  CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE targets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    config TEXT NOT NULL,          -- JSON, no secrets
    secret BLOB,                   -- nonce || XChaCha20-Poly1305(secrets subkey, aad = "target:" || name)
    created_at INTEGER NOT NULL,
    listed_at INTEGER              -- when data/ was last listed and reconciled with the index
  );
  CREATE TABLE packs (
    id BLOB PRIMARY KEY,           -- 32 random bytes; object data/xx/<hex>
    target_id INTEGER NOT NULL REFERENCES targets(id),
    kind TEXT NOT NULL CHECK (kind IN ('data', 'tree')),
    size INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('stored', 'indexed', 'missing')),
    job_id TEXT,                   -- the job that wrote it (NULL when learnt from an index file)
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE blobs (
    id BLOB PRIMARY KEY,           -- keyed BLAKE3 of the plaintext
    kind TEXT NOT NULL CHECK (kind IN ('data', 'tree')),
    pack_id BLOB NOT NULL REFERENCES packs(id) ON DELETE CASCADE,
    offset INTEGER NOT NULL,
    stored_length INTEGER NOT NULL,
    plain_length INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX blobs_by_pack ON blobs(pack_id);
  CREATE TABLE index_files (
    id TEXT NOT NULL,              -- hex; object index/<id>
    target_id INTEGER NOT NULL REFERENCES targets(id),
    loaded_at INTEGER NOT NULL,
    PRIMARY KEY (id, target_id)
  ) WITHOUT ROWID;
  CREATE TABLE snapshots (
    id TEXT PRIMARY KEY,
    target_id INTEGER NOT NULL REFERENCES targets(id),
    time INTEGER NOT NULL,         -- epoch ms
    host TEXT NOT NULL,
    doc TEXT NOT NULL              -- JSON of the snapshot object
  );
  CREATE INDEX snapshots_by_time ON snapshots(time);
  CREATE TABLE tree_cache (
    id BLOB PRIMARY KEY,           -- tree blob id
    plain BLOB NOT NULL            -- decrypted, verified tree bytes
  ) WITHOUT ROWID;
  CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('backup')),
    target_id INTEGER NOT NULL REFERENCES targets(id),
    state TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed', 'cancelled')),
    sources TEXT NOT NULL,         -- JSON array of absolute paths
    settings TEXT NOT NULL,        -- JSON PipelineSettings
    snapshot_id TEXT,              -- the snapshot it wrote, once done
    pid INTEGER,
    host TEXT,
    error TEXT,
    stats TEXT,                    -- JSON counters carried across resumes
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE TABLE job_files (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    path TEXT NOT NULL,            -- entry path, "/"-separated
    size INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    ctime_ms REAL NOT NULL,
    inode INTEGER NOT NULL,
    content BLOB NOT NULL,         -- the data blob ids, 32 bytes each, in order
    PRIMARY KEY (job_id, path)
  ) WITHOUT ROWID;
  `,
  `
  ALTER TABLE jobs ADD COLUMN exclude TEXT;  -- JSON array of exclude patterns; NULL when none
  CREATE TABLE plans (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    target_id INTEGER REFERENCES targets(id),  -- NULL: the default target when it runs
    spec TEXT NOT NULL,            -- JSON PlanSpec: sources, exclude, schedule, chunkSize?, workers?
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    run_pid INTEGER,               -- the process running it now (one run at a time, across processes)
    last_started_at INTEGER,       -- the latest run's start: the schedule counts from it
    last_finished_at INTEGER,
    last_ok INTEGER,               -- 1 ok, 0 failed, NULL while it never finished
    last_error TEXT,
    last_snapshot TEXT,
    last_job TEXT
  );
  `,
  `
  CREATE TABLE verifications (
    id INTEGER PRIMARY KEY,
    snapshot_id TEXT NOT NULL,     -- the snapshot verified (not a foreign key: snapshots are a cache)
    state TEXT NOT NULL CHECK (state IN ('running', 'ok', 'problems', 'failed')),
    pid INTEGER,                   -- the process verifying it, while running
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    blobs INTEGER,                 -- distinct blobs checked
    bytes INTEGER,
    problems TEXT,                 -- JSON [{path, blob, target?, message}]
    error TEXT                     -- why the verification itself could not finish
  );
  CREATE INDEX verifications_by_snapshot ON verifications(snapshot_id, started_at);
  `,
  `
  ALTER TABLE plans ADD COLUMN retention_at INTEGER;       -- when its keep policy was last applied (after a run)
  ALTER TABLE plans ADD COLUMN retention_removed INTEGER;  -- snapshots that removed
  ALTER TABLE plans ADD COLUMN retention_error TEXT;       -- why applying it failed (the backup stays ok)
  `,
  `
  CREATE TABLE revoked_key_slots (
    id TEXT PRIMARY KEY,           -- a key slot removed here or from a bucket: deleted where found, never learnt again
    revoked_at INTEGER NOT NULL
  );
  `,
  // Pools (issue 10). Where a pack is moves from packs.target_id to pack_copies: a pack marked missing
  // becomes an indexed pack whose one copy is missing. Foreign keys are off while migrations run (db.ts),
  // so dropping the old table does not cascade to blobs. Targets gain their place in the pool object.
  `
  CREATE TABLE packs_v6 (
    id BLOB PRIMARY KEY,           -- 32 random bytes; object data/xx/<hex>
    kind TEXT NOT NULL CHECK (kind IN ('data', 'tree')),
    size INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('stored', 'indexed')),  -- stored: no index file describes it yet
    job_id TEXT,                   -- the job that wrote it (NULL when learnt from an index file)
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE pack_copies (
    pack_id BLOB NOT NULL REFERENCES packs(id) ON DELETE CASCADE,
    target_id INTEGER NOT NULL REFERENCES targets(id),
    state TEXT NOT NULL CHECK (state IN ('stored', 'queued', 'missing')),
    PRIMARY KEY (pack_id, target_id)
  ) WITHOUT ROWID;
  CREATE INDEX pack_copies_by_target ON pack_copies(target_id, state);
  INSERT INTO packs_v6 (id, kind, size, state, job_id, created_at)
    SELECT id, kind, size, CASE state WHEN 'stored' THEN 'stored' ELSE 'indexed' END, job_id, created_at FROM packs;
  INSERT INTO pack_copies (pack_id, target_id, state)
    SELECT id, target_id, CASE state WHEN 'missing' THEN 'missing' ELSE 'stored' END FROM packs;
  DROP TABLE packs;
  ALTER TABLE packs_v6 RENAME TO packs;
  ALTER TABLE targets ADD COLUMN pool_id INTEGER;  -- the target's id in the pool object; NULL until one names it
  ALTER TABLE targets ADD COLUMN weight INTEGER NOT NULL DEFAULT 100;
  ALTER TABLE targets ADD COLUMN state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining', 'gone'));
  CREATE UNIQUE INDEX targets_by_pool_id ON targets(pool_id) WHERE pool_id IS NOT NULL;
  ALTER TABLE repository ADD COLUMN pool TEXT;     -- JSON {key, generation, createdAt, nextId, policy} of the pool object in the buckets
  CREATE TABLE superseded_index (
    id TEXT PRIMARY KEY            -- an index file a prune or rebalance replaced: never loaded (a late copy may still exist)
  ) WITHOUT ROWID;
  CREATE TABLE meta_outbox (
    target_id INTEGER NOT NULL REFERENCES targets(id) ON DELETE CASCADE,
    key TEXT NOT NULL,             -- index/… or snapshots/…: metadata a pool member has yet to receive
    body BLOB NOT NULL,            -- the sealed object, as the other members got it
    created_at INTEGER NOT NULL,
    PRIMARY KEY (target_id, key)
  ) WITHOUT ROWID;
  `,
  // Erasure coding (issue 10): a pack stored as k data + m parity shards, one per target.
  `
  ALTER TABLE packs ADD COLUMN ec_k INTEGER;       -- erasure-coded: k data shards (NULL: whole copies)
  ALTER TABLE packs ADD COLUMN ec_m INTEGER;       -- and m parity shards
  ALTER TABLE pack_copies ADD COLUMN shard INTEGER; -- the shard this target holds (NULL: a whole copy)
  `,
  // A copy or shard check --read-data found damaged: missing until repair writes it again, whatever a
  // listing says (the object is there, at its size, and useless).
  `
  CREATE TABLE damaged_copies (
    pack_id BLOB NOT NULL,
    target_id INTEGER NOT NULL,
    PRIMARY KEY (pack_id, target_id)
  ) WITHOUT ROWID;
  `,
  // A key slot is revoked everywhere only by an authenticated revocation record (`revoked/<id>`):
  // `proven` marks the rows that have one. Rows from before were written by `key rm`/`passwd` (no record
  // then) or when a member merely lacked a slot: they prove nothing to other machines, so no record is
  // written for them and nothing is deleted on their word, but this machine still never learns or writes
  // back such a slot (a removed passphrase stays removed here).
  `
  ALTER TABLE revoked_key_slots ADD COLUMN host TEXT;  -- the machine that removed it, as its record says
  ALTER TABLE revoked_key_slots ADD COLUMN proven INTEGER NOT NULL DEFAULT 0;  -- 1: a revocation record exists
  `,
  // A blob check --read-data found damaged in a pack (every read of it failed): it no longer counts as
  // stored (backups store it again) but its row stays, so restores still try it, and a later read that
  // authenticates it clears the mark. Before, the row was dropped: one bad read condemned it for good.
  `
  CREATE TABLE damaged_blobs (
    blob_id BLOB NOT NULL,
    pack_id BLOB NOT NULL,
    PRIMARY KEY (blob_id, pack_id)
  ) WITHOUT ROWID;
  `,
  // Blob rows deleted, counted (issue 31): a backup whose parent snapshot was finished by this keystore
  // when the count was what it is now knows every blob of that snapshot still has its row, and skips a
  // lookup per unchanged file (a third of an unchanged re-run of 300,000 files).
  `
  CREATE TABLE blob_deletions (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL
  );
  INSERT INTO blob_deletions (id, n) VALUES (1, 0);
  CREATE TRIGGER count_blob_deletions AFTER DELETE ON blobs
    BEGIN UPDATE blob_deletions SET n = n + 1 WHERE id = 1; END;
  ALTER TABLE jobs ADD COLUMN blob_deletions INTEGER;  -- the count when the job finished
  `,
  // Trees kept as their packs hold them (issue 31): most are compressed (`flags` as a blob's, 0 none), and
  // `nodes` counts their entries, so a folder listing counts its subfolders' entries without inflating them.
  // At a million files the plain JSON was 246 MB, half the keystore.
  `
  ALTER TABLE tree_cache ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE tree_cache ADD COLUMN nodes INTEGER;
  `,
  // Blob rows kept where their pack keeps them (issue 31). A row was keyed by its 32-byte id and named its
  // pack's 32-byte id, with a second B-tree by pack: 176 bytes a blob, and every insert landed at a random
  // place in both. Now each pack has a small number, a row's key is its place (pack number × 2^26 + its
  // rank in the pack), so a pack's rows are written in order and found by a key range, and the id is
  // found through an index of its first 8 bytes: 77 bytes a blob, one random insert into a small index.
  // One row per id still holds: the index cache checks before it inserts (SQLite cannot, on a prefix).
  `
  ALTER TABLE packs ADD COLUMN num INTEGER;  -- this keystore's number for the pack (blob rows name it)
  UPDATE packs SET num = r.n
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM packs) AS r WHERE r.id = packs.id;
  CREATE UNIQUE INDEX packs_by_num ON packs(num);
  CREATE TABLE blobs_v14 (
    pos INTEGER PRIMARY KEY,       -- packs.num × 2^26 + the blob's rank among the pack's blobs
    id BLOB NOT NULL,              -- keyed BLAKE3 of the plaintext
    kind INTEGER NOT NULL CHECK (kind IN (0, 1)),  -- 0 data, 1 tree
    offset INTEGER NOT NULL,
    stored_length INTEGER NOT NULL,
    plain_length INTEGER NOT NULL
  );
  INSERT INTO blobs_v14 (pos, id, kind, offset, stored_length, plain_length)
    SELECT p.num * 67108864 + row_number() OVER (PARTITION BY b.pack_id ORDER BY b.offset, b.id) - 1,
           b.id, CASE b.kind WHEN 'tree' THEN 1 ELSE 0 END, b.offset, b.stored_length, b.plain_length
    FROM blobs b JOIN packs p ON p.id = b.pack_id;
  DROP TRIGGER count_blob_deletions;
  DROP TABLE blobs;
  ALTER TABLE blobs_v14 RENAME TO blobs;
  CREATE INDEX blobs_by_id ON blobs(substr(id, 1, 8));
  CREATE TRIGGER count_blob_deletions AFTER DELETE ON blobs
    BEGIN UPDATE blob_deletions SET n = n + 1 WHERE id = 1; END;
  CREATE TRIGGER pack_blobs_go AFTER DELETE ON packs
    BEGIN DELETE FROM blobs WHERE pos BETWEEN old.num * 67108864 AND old.num * 67108864 + 67108863; END;
  CREATE VIEW blob_rows AS
    SELECT b.id, CASE b.kind WHEN 1 THEN 'tree' ELSE 'data' END AS kind, p.id AS pack_id, b.offset,
           b.stored_length, b.plain_length
    FROM blobs b JOIN packs p ON p.num = b.pos >> 26;
  `,
  // A stopped job's stored files as one row per batch of files, not one per file (issue 31): at a million
  // files the rows cost the backup's coordinator 4.5 µs each to insert, and its end a million deletes.
  // JSON keeps a path exactly (a name that is not UTF-8 is a lone surrogate there: escaped, not replaced).
  `
  CREATE TABLE job_file_batches (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    count INTEGER NOT NULL,        -- files in the batch
    files TEXT NOT NULL            -- JSON [[path, size, mtimeMs, ctimeMs, inode, "blob ids in hex, in order"], ...]
  );
  CREATE INDEX job_file_batches_by_job ON job_file_batches(job_id);
  INSERT INTO job_file_batches (job_id, count, files)
    SELECT job_id, count(*),
           json_group_array(json_array(path, size, mtime_ms, ctime_ms, inode, lower(hex(content))))
    FROM job_files GROUP BY job_id;
  DROP TABLE job_files;
  `,
];
