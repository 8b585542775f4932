import { GetObjectCommand } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { Engine } from '../../shared/node/engine/engine.ts';
import { walkSnapshot } from '../../shared/node/repository/snapshot-tree.ts';
import { openIndexFile } from '../../shared/node/format/index-file.ts';
import { cliJson, runCli, type CliOptions } from './cli.ts';
import { PASSPHRASE, listKeys } from './cairn-env.ts';
import { describeTree, tempDir, writeRandomFile, type TreeItem } from './fixtures.ts';
import type { S3Server } from './versitygw.ts';

/** Changes a source folder a little, differently for each step: a file replaced, one grown, one added, one removed. */
export function changeData(src: string, step: number): void {
  writeRandomFile(path.join(src, `new-${step}.bin`), 70_000 + step * 1000);
  writeRandomFile(path.join(src, 'changing.bin'), 150_000 + step * 7);
  fs.appendFileSync(path.join(src, 'log.txt'), `step ${step}\n`.repeat(200));
  if (step >= 2) fs.rmSync(path.join(src, `new-${step - 2}.bin`), { force: true });
}

/** Snapshot id → what its source folder held, for byte-identical restores. */
export type Expected = Map<string, Record<string, TreeItem>>;

export async function backupAndRecord(
  cli: CliOptions,
  src: string,
  expected: Expected,
  extra: string[] = [],
): Promise<string> {
  const before = describeTree(src);
  const r = await cliJson<{ snapshotId: string }>(['backup', src, '--chunk-size', '64KiB', ...extra], cli);
  expected.set(r.snapshotId, before);
  return r.snapshotId;
}

/** Restores each snapshot into a fresh folder and compares it with what was backed up. */
export async function expectRestores(cli: CliOptions, expected: Expected, ids: string[]): Promise<void> {
  for (const id of ids) {
    const dest = tempDir();
    const r = await runCli(['restore', id, '--to', dest], cli);
    expect(r.stderr, `restore ${id}`).toBe('');
    expect(r.code).toBe(0);
    const want = expected.get(id)!;
    const name = Object.keys(want)[0]!.split('/')[0]!;
    expect(describeTree(path.join(dest, name))).toEqual(want);
  }
}

/**
 * Which packs hold a blob the given snapshots need, computed without prune's code: every index file read
 * from the bucket, every snapshot's trees walked through the restore path's tree reader.
 */
export async function packsNeeded(
  s3: S3Server,
  bucket: string,
  home: string,
  snapshotIds: string[],
): Promise<{ needed: Set<string>; indexed: Set<string> }> {
  const e = await Engine.unlock(home, { passphrase: PASSPHRASE });
  try {
    const used = new Set<string>();
    for (const id of snapshotIds) {
      const snap = e.snapshot(id);
      used.add(snap.tree);
      for await (const { node } of walkSnapshot(e.repo, snap.tree)) {
        if (node.subtree) used.add(node.subtree);
        for (const c of node.content ?? []) used.add(c);
      }
    }
    const needed = new Set<string>();
    const indexed = new Set<string>();
    for (const { key } of await listKeys(s3, bucket, 'index/')) {
      const res = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const body = Buffer.from(await res.Body!.transformToByteArray());
      const file = openIndexFile(e.ks.sodium, e.ks.keys.metaSeal, Buffer.from(key.slice(6), 'hex'), body);
      for (const p of file.packs) {
        const hex = p.id.toString('hex');
        indexed.add(hex);
        if (p.blobs.some((b) => used.has(b.id.toString('hex')))) needed.add(hex);
      }
    }
    return { needed, indexed };
  } finally {
    e.close();
  }
}

export async function dataPacks(s3: S3Server, bucket: string): Promise<Set<string>> {
  return new Set((await listKeys(s3, bucket, 'data/')).map((k) => k.key.split('/')[2]!));
}

/** The bucket's listing (keys and sizes) and the keystore file's bytes, hashed. */
export async function fingerprint(s3: S3Server, bucket: string, home: string): Promise<string> {
  const h = createHash('sha256');
  h.update(JSON.stringify(await listKeys(s3, bucket)));
  for (const f of fs.readdirSync(home).sort()) {
    const file = path.join(home, f);
    if (fs.statSync(file).isFile()) h.update(f).update(fs.readFileSync(file));
  }
  return h.digest('hex');
}
