import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { Engine } from './engine.ts';

let s3: S3Server;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

const s3Config = (bucket: string) => ({
  kind: 's3' as const,
  endpoint: s3.endpoint,
  bucket,
  region: 'us-east-1',
  accessKeyId: s3.accessKeyId,
  pathStyle: true,
  checksums: 'when-supported' as const,
});

describe('editing a target', () => {
  it('never lets a backup trust packs the newly pointed-at bucket does not hold', async () => {
    const home = path.join(tempDir(), 'home');
    const engine = await Engine.init(home, 'a passphrase for edits');
    try {
      const first = await s3.createBucket();
      await engine.addTarget('t', s3Config(first), s3.secretAccessKey);
      const src = path.join(tempDir(), 'e');
      writeRandomFile(path.join(src, 'a.bin'), 3 << 20);
      await engine.backup([src], {});

      // Pointed at a bucket holding another repository: refused by name, the target left as it was.
      const foreign = await Engine.init(path.join(tempDir(), 'other'), 'another passphrase');
      const theirs = await s3.createBucket();
      await foreign.addTarget('x', s3Config(theirs), s3.secretAccessKey);
      foreign.close();
      await expect(engine.replaceTarget('t', 't', s3Config(theirs), '')).rejects.toThrow(
        /holds another Cairn repository/,
      );
      expect(engine.target('t').config).toMatchObject({ bucket: first });

      // Pointed at an empty bucket: it joins, and the next backup stores every blob there again.
      const fresh = await s3.createBucket();
      await engine.replaceTarget('t', 't', s3Config(fresh), '');
      const r = await engine.backup([src], {});
      expect(r.blobsNew).toBe(1); // one 8 MiB chunk, read again: its pack is not in this bucket
      expect(r.warnings.join(' ')).toMatch(/missing from target "t"/);
      const dest = tempDir();
      const restored = await engine.restore(r.snapshotId, { to: dest });
      expect(restored.failed).toEqual([]);
      expect(sha256File(path.join(dest, 'e/a.bin'))).toBe(sha256File(path.join(src, 'a.bin')));
      expect(fs.existsSync(path.join(dest, 'e'))).toBe(true);
    } finally {
      engine.close();
    }
  });
});
