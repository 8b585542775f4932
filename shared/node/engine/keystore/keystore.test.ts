import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { loadSodium } from '../../crypto/provider.ts';
import { tempDir } from '../../../../test/support/fixtures.ts';
import { KeystoreError } from './db.ts';
import { Keystore } from './keystore.ts';
import { migrations } from './schema.ts';

const sodium = await loadSodium();

describe('keystore', () => {
  it('wraps the master key: the right passphrase unlocks the same subkeys, a wrong one nothing', () => {
    const file = path.join(tempDir(), 'ks', 'keystore.db');
    const a = Keystore.create(file, 'a good passphrase', sodium);
    const seal = Buffer.from(a.keys.chunkSeal);
    a.close();
    const b = Keystore.open(file, 'a good passphrase', sodium);
    expect(b.keys.chunkSeal.equals(seal)).toBe(true);
    b.close();
    expect(() => Keystore.open(file, 'a bad passphrase', sodium)).toThrow(/Wrong passphrase/);
    expect(() => Keystore.create(file, 'a good passphrase', sodium)).toThrow(/already exists/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('keeps S3 secrets encrypted at rest and returns them when unlocked', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const ks = Keystore.create(file, 'a good passphrase', sodium);
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
    const again = Keystore.open(file, 'a good passphrase', sodium);
    expect(again.targetHandle(again.findTarget('aws')!).secret).toBe(secret);
    again.close();
  });

  it('records its schema version and refuses a newer one', () => {
    const file = path.join(tempDir(), 'keystore.db');
    Keystore.create(file, 'a good passphrase', sodium).close();
    const db = new Database(file);
    expect(db.pragma('user_version', { simple: true })).toBe(migrations.length);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.pragma(`user_version = ${migrations.length + 1}`);
    db.close();
    expect(() => Keystore.open(file, 'a good passphrase', sodium)).toThrow(KeystoreError);
    expect(() => Keystore.open(file, 'a good passphrase', sodium)).toThrow(
      /newer than this Cairn understands/,
    );
  });
});
