/**
 * Keystore migrations, applied in order; PRAGMA user_version records how many ran. Never edit a shipped
 * migration: append a new one.
 */
export const migrations: string[] = [
  `
  CREATE TABLE master_key (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    alg TEXT NOT NULL,
    salt BLOB NOT NULL,
    opslimit INTEGER NOT NULL,
    memlimit INTEGER NOT NULL,
    nonce BLOB NOT NULL,
    sealed BLOB NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE targets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    config TEXT NOT NULL,          -- JSON, no secrets
    secret BLOB,                   -- nonce || XChaCha20-Poly1305(secrets subkey, aad = "target:" || name)
    created_at INTEGER NOT NULL
  );
  CREATE TABLE chunks (
    id BLOB PRIMARY KEY,           -- keyed BLAKE2b-256 of the plaintext
    plain_size INTEGER NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE chunk_locations (
    chunk_id BLOB NOT NULL REFERENCES chunks(id),
    target_id INTEGER NOT NULL REFERENCES targets(id),
    object_key TEXT NOT NULL,
    stored_size INTEGER NOT NULL,
    flags INTEGER,                 -- header flags when known (NULL for objects adopted from a listing)
    stored_at INTEGER NOT NULL,
    PRIMARY KEY (chunk_id, target_id)
  ) WITHOUT ROWID;
  CREATE TABLE backups (
    id TEXT PRIMARY KEY,
    target_id INTEGER NOT NULL REFERENCES targets(id),
    status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
    created_at INTEGER NOT NULL,
    finished_at INTEGER,
    chunk_size INTEGER NOT NULL,
    sources TEXT NOT NULL,         -- JSON array of absolute source paths
    file_count INTEGER NOT NULL DEFAULT 0,
    total_bytes INTEGER NOT NULL DEFAULT 0,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    new_chunks INTEGER NOT NULL DEFAULT 0,
    uploaded_bytes INTEGER NOT NULL DEFAULT 0,
    duration_ms INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    backup_id TEXT NOT NULL REFERENCES backups(id) ON DELETE CASCADE,
    path TEXT NOT NULL,            -- relative, "/"-separated, first segment = source name
    source TEXT NOT NULL,          -- absolute path it was read from
    kind TEXT NOT NULL CHECK (kind IN ('file', 'dir', 'symlink')),
    size INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    link_target TEXT,
    hash BLOB,                     -- file hash (docs/FORMAT.md), set when every chunk is stored
    status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
    UNIQUE (backup_id, path)
  );
  CREATE TABLE entry_chunks (
    entry_id INTEGER NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    chunk_id BLOB NOT NULL REFERENCES chunks(id),
    PRIMARY KEY (entry_id, idx)
  ) WITHOUT ROWID;
  CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('backup')),
    backup_id TEXT NOT NULL REFERENCES backups(id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed')),
    settings TEXT NOT NULL,        -- JSON PipelineSettings
    pid INTEGER,
    host TEXT,
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX entries_by_backup ON entries(backup_id, status);
  CREATE INDEX locations_by_target ON chunk_locations(target_id);
  `,
];
