import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { makeKeySlot } from '../crypto/keys.ts';
import { loadSodium } from '../crypto/provider.ts';
import { newRepoConfig } from '../format/config.ts';
import { tempDir } from '../../../test/support/fixtures.ts';
import { KeystoreError, openDb } from './db.ts';
import { LocalDb } from './local-db.ts';
import { FIRST_V2_VERSION, migrations } from './schema.ts';

const sodium = await loadSodium();
process.env.CAIRN_TEST_WEAK_KDF = '1';

async function create(file: string, passphrase = 'a good passphrase'): Promise<LocalDb> {
  const master = sodium.randomBytes(32);
  const config = newRepoConfig(sodium);
  const slot = await makeKeySlot(sodium, master, config.id, { passphrase });
  return LocalDb.create(file, sodium, { master, repoId: config.id, config, slots: [slot], slotId: slot.id });
}

describe('keystore', () => {
  it('keeps only wrapped keys: the right passphrase unlocks the same subkeys, a wrong one nothing', async () => {
    const file = path.join(tempDir(), 'ks', 'keystore.db');
    const a = await create(file);
    const seal = Buffer.from(a.keys.blobSeal);
    const master = Buffer.from(a.masterKey());
    a.close();
    const b = await LocalDb.open(file, { passphrase: 'a good passphrase' }, sodium);
    expect(b.keys.blobSeal.equals(seal)).toBe(true);
    b.close();
    await expect(LocalDb.open(file, { passphrase: 'a bad passphrase' }, sodium)).rejects.toThrow(
      /Wrong passphrase/,
    );
    await expect(create(file)).rejects.toThrow(/already exists/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const raw = Buffer.concat([file, file + '-wal'].filter(fs.existsSync).map((f) => fs.readFileSync(f)));
    expect(raw.includes(master)).toBe(false);
  });

  it('opens with a slot written before Argon2id lanes (libsodium, one lane)', async () => {
    const v = JSON.parse(
      fs.readFileSync(new URL('../../../docs/vectors/format-v2.json', import.meta.url), 'utf8'),
    );
    const { slot, passphrase } = v.keySlotArgon2id13;
    expect(slot.kdf.alg).toBe('argon2id13');
    const master = Buffer.from(v.masterKey, 'hex');
    const config = { ...newRepoConfig(sodium), id: slot.repository };
    const file = path.join(tempDir(), 'keystore.db');
    LocalDb.create(file, sodium, {
      master,
      repoId: config.id,
      config,
      slots: [slot],
      slotId: slot.id,
    }).close();
    const ks = await LocalDb.open(file, { passphrase }, sodium);
    expect(Buffer.from(ks.masterKey()).equals(master)).toBe(true);
    ks.close();
    await expect(LocalDb.open(file, { passphrase: 'not the passphrase' }, sodium)).rejects.toThrow(
      /Wrong passphrase/,
    );
  });

  it('keeps S3 secrets encrypted at rest and returns them when unlocked', async () => {
    const file = path.join(tempDir(), 'keystore.db');
    const ks = await create(file);
    const secret = 'S3CRET-' + 'x'.repeat(30);
    const t = ks.addTarget(
      'aws',
      {
        kind: 's3',
        endpoint: 'https://s3.example.test',
        bucket: 'bkt',
        region: 'eu-west-1',
        accessKeyId: 'AKIA1',
        pathStyle: false,
        checksums: 'when-supported',
      },
      secret,
    );
    expect(ks.targetHandle(t).secret).toBe(secret);
    ks.db.pragma('wal_checkpoint(TRUNCATE)');
    ks.close();
    for (const f of [file, file + '-wal']) {
      if (fs.existsSync(f)) expect(fs.readFileSync(f).includes(Buffer.from('S3CRET-'))).toBe(false);
    }
    const again = await LocalDb.open(file, { passphrase: 'a good passphrase' }, sodium);
    expect(again.targetHandle(again.findTarget('aws')!).secret).toBe(secret);
    again.close();
  });

  it('records its schema version, refuses a newer one and a format-1 keystore by name', async () => {
    const file = path.join(tempDir(), 'keystore.db');
    (await create(file)).close();
    const latest = FIRST_V2_VERSION - 1 + migrations.length;
    const db = new Database(file);
    expect(db.pragma('user_version', { simple: true })).toBe(latest);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.pragma(`user_version = ${latest + 1}`);
    db.close();
    await expect(LocalDb.open(file, { passphrase: 'a good passphrase' }, sodium)).rejects.toThrow(
      /newer than this Cairn understands/,
    );
    const v1 = path.join(tempDir(), 'keystore.db');
    const old = new Database(v1);
    old.pragma('user_version = 1');
    old.close();
    await expect(LocalDb.open(v1, { passphrase: 'x' }, sodium)).rejects.toThrow(/repository format 1/);
  });

  it("caps each connection's page cache at 4 MiB (better-sqlite3's build default is 16 MB)", async () => {
    const file = path.join(tempDir(), 'keystore.db');
    (await create(file)).close();
    const db = openDb(file, { create: false });
    try {
      expect(db.pragma('cache_size', { simple: true })).toBe(-4096);
    } finally {
      db.close();
    }
  });

  it('names a damaged keystore file as such, not as a wrong passphrase', async () => {
    const file = path.join(tempDir(), 'keystore.db');
    fs.writeFileSync(file, Buffer.alloc(8192, 0x5a));
    let err: unknown;
    try {
      await LocalDb.open(file, { passphrase: 'a good passphrase' }, sodium);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KeystoreError);
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toMatch(/damaged/);
  });
});
