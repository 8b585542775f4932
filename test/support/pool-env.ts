import fs from 'node:fs';
import path from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { S3Server } from './versitygw.ts';
import { Engine } from '../../shared/node/engine/engine.ts';

/** What pool.test.ts and pool-members.test.ts share: the passphrase and looks into targets. */
export const PASS = 'the pool passphrase';

export const poolsInDir = (dir: string) =>
  fs.existsSync(path.join(dir, 'pools')) ? fs.readdirSync(path.join(dir, 'pools')) : [];

export async function poolsInBucket(s3: S3Server, bucket: string): Promise<string[]> {
  const r = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'pools/' }));
  return (r.Contents ?? []).map((o) => o.Key!.slice('pools/'.length));
}

export const places = (e: Engine) =>
  e.listTargets().map((t) => ({ name: t.name, poolId: t.poolId, kind: t.config.kind }));

/** A new machine that connects through the folder target `dir` only. */
export const connectVia = (
  home: string,
  name: string,
  dir: string,
  onUnreachable?: Parameters<typeof Engine.connect>[5],
) => Engine.connect(home, name, { kind: 'dir', path: dir }, undefined, { passphrase: PASS }, onUnreachable);
