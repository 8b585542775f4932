import fs from 'node:fs';
import path from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../../../test/support/cli.ts';
import { initHomeWithTarget } from '../../../test/support/cairn-env.ts';
import { listFiles, sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

async function getObject(bucket: string, key: string): Promise<Buffer> {
  const r = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await r.Body!.transformToByteArray());
}
const putObject = (bucket: string, key: string, body: Buffer) =>
  s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));

function chunkKeys(home: string, entryPath: string): string[] {
  const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
  try {
    return (
      db
        .prepare(
          `SELECT l.object_key AS k FROM entries e JOIN entry_chunks ec ON ec.entry_id = e.id
           JOIN chunk_locations l ON l.chunk_id = ec.chunk_id WHERE e.path = ? ORDER BY ec.idx`,
        )
        .all(entryPath) as { k: string }[]
    ).map((r) => r.k);
  } finally {
    db.close();
  }
}

type Damage = (bucket: string, keys: string[]) => Promise<number>;

const damages: Record<string, Damage> = {
  'a flipped byte': async (bucket, keys) => {
    const obj = await getObject(bucket, keys[1]!);
    obj[obj.length >> 1]! ^= 0x01;
    await putObject(bucket, keys[1]!, obj);
    return 1;
  },
  'a truncated object': async (bucket, keys) => {
    const obj = await getObject(bucket, keys[2]!);
    await putObject(bucket, keys[2]!, obj.subarray(0, obj.length - 100));
    return 2;
  },
  'a deleted object': async (bucket, keys) => {
    await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keys[0]! }));
    return 0;
  },
  'two swapped objects': async (bucket, keys) => {
    const [a, b] = [await getObject(bucket, keys[0]!), await getObject(bucket, keys[1]!)];
    await putObject(bucket, keys[0]!, b);
    await putObject(bucket, keys[1]!, a);
    return 0;
  },
};

describe('damaged chunk objects are detected on restore and on verify', () => {
  for (const [name, damage] of Object.entries(damages)) {
    it(`detects ${name}`, async () => {
      const bucket = await s3.createBucket();
      const { home, cli } = await initHomeWithTarget(s3, { bucket, target: 'vault' });
      const src = path.join(tempDir(), 'data');
      writeRandomFile(path.join(src, 'victim.bin'), 3 * 65536 + 10);
      writeRandomFile(path.join(src, 'fine.bin'), 100_000);
      const { backupId } = await cliJson<{ backupId: string }>(['backup', src, '--chunk-size', '64KiB'], cli);
      const badIdx = await damage(bucket, chunkKeys(home, 'data/victim.bin'));

      const v = await runCli(['verify', backupId], cli);
      expect(v.code).toBe(1);
      expect(v.stderr).toMatch(new RegExp(`data/victim\\.bin chunk ${badIdx} on target "vault"`));
      expect(v.stderr).not.toMatch(/fine\.bin/);

      const dest = tempDir();
      const r = await runCli(['restore', backupId, '--to', dest], cli);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`Failed: data/victim\\.bin: chunk \\d+ from target "vault"`));
      expect(r.stderr).toMatch(/1 of the selected files could not be restored/);
      // Nothing at the final path, no temporary left behind; the intact file is restored.
      expect(listFiles(path.join(dest, 'data'))).toEqual(['fine.bin']);
      expect(sha256File(path.join(dest, 'data/fine.bin'))).toBe(sha256File(path.join(src, 'fine.bin')));
      expect(fs.existsSync(path.join(dest, 'data/victim.bin'))).toBe(false);
    });
  }
});
