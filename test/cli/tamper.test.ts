import fs from 'node:fs';
import path from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { openPayload } from '../../shared/node/format/blob-codec.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from '../support/cli.ts';
import { initHomeWithTarget } from '../support/cairn-env.ts';
import { listFiles, sha256File, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

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

interface BlobAt {
  pack: string;
  offset: number;
  length: number;
}

/** The trees the keystore caches, as plaintext (most are kept compressed, as their packs hold them). */
function cachedTrees(db: Database.Database): Buffer[] {
  const rows = db.prepare('SELECT plain, flags FROM tree_cache').all() as { plain: Buffer; flags: number }[];
  return rows.map((r) => openPayload(r.flags, r.plain, 'cached tree'));
}

/** Where the blobs of one file sit, found as Cairn finds them: its tree node, then the index. */
function blobsOf(home: string, name: string): BlobAt[] {
  const db = new Database(path.join(home, 'keystore.db'), { readonly: true });
  try {
    for (const plain of cachedTrees(db)) {
      const node = (
        JSON.parse(plain.toString()) as { nodes: { name: string; content?: string[] }[] }
      ).nodes.find((n) => n.name === name);
      if (!node?.content) continue;
      return node.content.map((hex) => {
        const r = db
          .prepare('SELECT pack_id, offset, stored_length FROM blob_rows WHERE id = ?')
          .get(Buffer.from(hex, 'hex')) as {
          pack_id: Buffer;
          offset: number;
          stored_length: number;
        };
        const id = r.pack_id.toString('hex');
        return { pack: `data/${id.slice(0, 2)}/${id}`, offset: r.offset, length: r.stored_length };
      });
    }
    throw new Error(`no tree lists ${name}`);
  } finally {
    db.close();
  }
}

type Damage = (bucket: string, blobs: BlobAt[]) => Promise<number>;

const damages: Record<string, Damage> = {
  'a flipped byte in a blob': async (bucket, blobs) => {
    const b = blobs[1]!;
    const obj = await getObject(bucket, b.pack);
    obj[b.offset + (b.length >> 1)]! ^= 0x01;
    await putObject(bucket, b.pack, obj);
    return 1;
  },
  'a truncated pack': async (bucket, blobs) => {
    const b = blobs[3]!;
    const obj = await getObject(bucket, b.pack);
    await putObject(bucket, b.pack, obj.subarray(0, b.offset + 10));
    return 3;
  },
  'a deleted pack': async (bucket, blobs) => {
    await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: blobs[0]!.pack }));
    return 0;
  },
  'two swapped blobs': async (bucket, blobs) => {
    const [a, b] = [blobs[0]!, blobs[1]!];
    expect(a.pack).toBe(b.pack);
    expect(a.length).toBe(b.length);
    const obj = await getObject(bucket, a.pack);
    const first = Buffer.from(obj.subarray(a.offset, a.offset + a.length));
    obj.copy(obj, a.offset, b.offset, b.offset + b.length);
    first.copy(obj, b.offset);
    await putObject(bucket, a.pack, obj);
    return 0;
  },
};

describe('damaged packs are detected on restore and on verify', () => {
  for (const [name, damage] of Object.entries(damages)) {
    it(`detects ${name}`, async () => {
      const bucket = await s3.createBucket();
      const { home, cli } = await initHomeWithTarget(s3, { bucket, target: 'vault' });
      const src = path.join(tempDir(), 'data');
      // fine.bin goes first, on its own, so its blobs sit in another pack than victim.bin's.
      writeRandomFile(path.join(src, 'fine.bin'), 100_000);
      await cliJson(['backup', src, '--chunk-size', '64KiB'], cli);
      writeRandomFile(path.join(src, 'victim.bin'), 3 * 65536 + 10);
      const { snapshotId } = await cliJson<{ snapshotId: string }>(
        ['backup', src, '--chunk-size', '64KiB'],
        cli,
      );
      const badIdx = await damage(bucket, blobsOf(home, 'victim.bin'));

      const v = await runCli(['verify', snapshotId], cli);
      expect(v.code).toBe(1);
      expect(v.stderr).toMatch(new RegExp(`data/victim\\.bin blob ${badIdx} on target "vault"`));
      expect(v.stderr).not.toMatch(/fine\.bin/);

      const dest = tempDir();
      const r = await runCli(['restore', snapshotId, '--to', dest], cli);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/Failed: data\/victim\.bin: blob [0-9a-f]{12}… from target "vault"/);
      expect(r.stderr).toMatch(/1 of the selected files could not be restored/);
      // Nothing at the final path, no temporary left behind; the intact file is restored.
      expect(listFiles(path.join(dest, 'data'))).toEqual(['fine.bin']);
      expect(sha256File(path.join(dest, 'data/fine.bin'))).toBe(sha256File(path.join(src, 'fine.bin')));
      expect(fs.existsSync(path.join(dest, 'data/victim.bin'))).toBe(false);
    });
  }
});

describe('a damaged folder listing (tree blob)', () => {
  it('verify names the folder even when the trees are cached here; a restore brings back everything else and names it', async () => {
    const bucket = await s3.createBucket();
    const { home, cli } = await initHomeWithTarget(s3, { bucket, target: 'vault' });
    const src = path.join(tempDir(), 'data');
    writeRandomFile(path.join(src, 'fine', 'a.bin'), 50_000);
    writeRandomFile(path.join(src, 'hurt', 'b.bin'), 50_000);
    writeRandomFile(path.join(src, 'hurt', 'deeper', 'c.bin'), 50_000);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);

    // The tree blob that lists data/hurt: its id is in the parent's listing, its place in the index.
    const db = new Database(path.join(home, 'keystore.db'));
    let hurt: BlobAt | undefined;
    for (const plain of cachedTrees(db)) {
      const node = (
        JSON.parse(plain.toString()) as { nodes: { name: string; subtree?: string }[] }
      ).nodes.find((n) => n.name === 'hurt');
      if (!node?.subtree) continue;
      const r = db
        .prepare('SELECT pack_id, offset, stored_length FROM blob_rows WHERE id = ?')
        .get(Buffer.from(node.subtree, 'hex')) as { pack_id: Buffer; offset: number; stored_length: number };
      const id = r.pack_id.toString('hex');
      hurt = { pack: `data/${id.slice(0, 2)}/${id}`, offset: r.offset, length: r.stored_length };
    }
    db.close();
    const obj = await getObject(bucket, hurt!.pack);
    obj[hurt!.offset + (hurt!.length >> 1)]! ^= 0x01;
    await putObject(bucket, hurt!.pack, obj);

    const v = await runCli(['verify', snapshotId], cli);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/Bad: data\/hurt\/ folder listing on target "vault": /);
    expect(v.stderr).not.toMatch(/fine/);

    // As on a new machine: no folder listing cached, every one read from the bucket.
    const wipe = new Database(path.join(home, 'keystore.db'));
    wipe.prepare('DELETE FROM tree_cache').run();
    wipe.close();
    const dest = tempDir();
    const r = await runCli(['restore', snapshotId, '--to', dest], cli);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /Failed: data\/hurt: this folder's listing could not be read, so nothing in it was restored: Folder listing [0-9a-f]{12}…: data\/[0-9a-f]{2}\/[0-9a-f]{64} on target "vault": authentication failed/,
    );
    expect(listFiles(path.join(dest, 'data', 'fine'))).toEqual(['a.bin']);
    expect(sha256File(path.join(dest, 'data/fine/a.bin'))).toBe(sha256File(path.join(src, 'fine/a.bin')));
    expect(listFiles(path.join(dest, 'data', 'hurt'))).toEqual([]);
  });
});
