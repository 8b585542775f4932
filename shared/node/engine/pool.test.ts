import fs from 'node:fs';
import path from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3TargetConfig } from '../../../test/support/engine-env.ts';
import { describeTree, smallTextTree, tempDir } from '../../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { Engine } from './engine.ts';
import { PASS, connectVia, places, poolsInBucket, poolsInDir } from '../../../test/support/pool-env.ts';

let s3: S3Server;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
});
afterAll(async () => {
  delete process.env.CAIRN_TEST_WEAK_KDF;
  await s3?.stop();
});

describe('a pool of targets: every target knows the others', () => {
  it('a second target makes a pool; connect through either one brings back both, S3 secret included', async () => {
    const dir = tempDir('cairn-pool-dir-');
    const bucket = await s3.createBucket();
    const src = smallTextTree();
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    let snapshotId: string;
    try {
      await a.addTarget('disk', { kind: 'dir', path: dir });
      expect(poolsInDir(dir)).toEqual([]);
      snapshotId = (await a.backup([src], {})).snapshotId;
      await a.addTarget('cloud', s3TargetConfig(s3, bucket), s3.secretAccessKey);
      expect(places(a)).toEqual([
        { name: 'disk', poolId: 1, kind: 'dir' },
        { name: 'cloud', poolId: 2, kind: 's3' },
      ]);
      // Who adds a second bucket expects a second copy: that is a new pool's policy.
      expect(a.poolAdmin.policy()).toEqual({ scheme: 'replicas', copies: 2, writeQuorum: 1 });
      const inDir = poolsInDir(dir);
      expect(inDir).toHaveLength(1);
      expect(inDir[0]).toMatch(/^0{15}1-[0-9a-f]{8}$/);
      expect(await poolsInBucket(s3, bucket)).toEqual(inDir);
      // The secret is sealed in the pool object, never in clear.
      const raw = fs.readFileSync(path.join(dir, 'pools', inDir[0]!));
      expect(raw.includes(Buffer.from(s3.secretAccessKey))).toBe(false);
    } finally {
      a.close();
    }

    // A new machine that is given only the bucket finds the folder target, and the snapshot on it.
    const b = await Engine.connect(
      path.join(tempDir(), 'home-b'),
      'my-cloud',
      s3TargetConfig(s3, bucket),
      s3.secretAccessKey,
      { passphrase: PASS },
    );
    try {
      expect(places(b)).toEqual([
        { name: 'my-cloud', poolId: 2, kind: 's3' },
        { name: 'disk', poolId: 1, kind: 'dir' },
      ]);
      expect(b.listSnapshots().map((s) => s.id)).toEqual([snapshotId]);
      const out = tempDir('cairn-pool-out-');
      const r = await b.restore(snapshotId, { to: out });
      expect(r.failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    } finally {
      b.close();
    }

    // One given only the folder learns the bucket with its credentials, and can use it.
    const c = await connectVia(path.join(tempDir(), 'home-c'), 'disk', dir);
    try {
      expect(places(c)).toEqual([
        { name: 'disk', poolId: 1, kind: 'dir' },
        { name: 'cloud', poolId: 2, kind: 's3' },
      ]);
      await c.testTarget('cloud');
      const again = await c.backup([src], { target: 'cloud' });
      const r = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'snapshots/' }));
      expect((r.Contents ?? []).map((o) => o.Key).sort()).toEqual(
        [`snapshots/${snapshotId}`, `snapshots/${again.snapshotId}`].sort(),
      );
      // Metadata goes to every member: the folder holds the new snapshot too.
      expect(fs.readdirSync(path.join(dir, 'snapshots')).sort()).toEqual(
        [snapshotId, again.snapshotId].sort(),
      );
    } finally {
      c.close();
    }
  });

  it('connect works from one surviving target, names the one it cannot read, and learns later changes', async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', { kind: 'dir', path: d2 });
    } finally {
      a.close();
    }
    fs.rmSync(d1, { recursive: true });
    const gone: string[] = [];
    const homeB = path.join(tempDir(), 'home-b');
    const b = await connectVia(homeB, 'two', d2, (t, err) => gone.push(`${t.name}: ${err.message}`));
    try {
      expect(places(b).map((p) => [p.name, p.poolId])).toEqual([
        ['two', 2],
        ['one', 1],
      ]);
      expect(gone).toEqual([
        // Its folder was deleted: named as missing (not as a target that holds no repository).
        expect.stringMatching(/^one: Folder target "one" \(.*\): the folder does not exist\.$/),
      ]);
    } finally {
      b.close();
    }
    // A target the pool names is never set up afresh where it is gone: that would hide the loss.
    expect(fs.existsSync(path.join(d1, 'config'))).toBe(false);

    // Machine A adds a third target and removes the lost one; B follows at its next refresh.
    const d3 = tempDir('cairn-pool-d3-');
    fs.mkdirSync(d1);
    const a2 = await Engine.unlock(home, { passphrase: PASS });
    try {
      await expect(a2.addTarget('three', { kind: 'dir', path: d3 })).rejects.toThrow(
        /Target "three" was added, but the pool object could not be written to every target \(.*"one"/,
      );
      await a2.removeTarget('one');
      expect(places(a2).map((p) => [p.name, p.poolId])).toEqual([
        ['two', 2],
        ['three', 3],
      ]);
    } finally {
      a2.close();
    }
    const b2 = await Engine.unlock(homeB, { passphrase: PASS });
    try {
      await b2.refresh();
      expect(places(b2).map((p) => [p.name, p.poolId])).toEqual([
        ['two', 2],
        ['three', 3],
      ]);
      expect(poolsInDir(d2)).toEqual(poolsInDir(d3));
    } finally {
      b2.close();
    }
  });

  it('with 2 copies, connect and restore from the one surviving target; repair gives older packs their copy', async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const [src0, src1] = [smallTextTree('before'), smallTextTree('after')];
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    let before: string, after: string;
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      before = (await a.backup([src0], {})).snapshotId;
      await a.addTarget('two', { kind: 'dir', path: d2 });
      await expect(a.poolAdmin.setReplicas(3)).rejects.toThrow(
        /3 copies need 3 targets, and this repository has 2/,
      );
      expect(await a.poolAdmin.setReplicas(2)).toEqual({ scheme: 'replicas', copies: 2, writeQuorum: 2 });
      const r = await a.backup([src1], {});
      after = r.snapshotId;
      // Its own packs have both copies, but the repository's are not all full: the packs from before the
      // policy have one copy (they may hold blobs this backup reuses). Reported, then repaired.
      expect(r.redundancy).toMatchObject({ copies: 2, queued: 0, state: 'short', waitingOn: [] });
      const report = await a.poolAdmin.redundancy();
      expect(report.degraded.length).toBeGreaterThan(0);
      expect(r.redundancy.short).toBe(report.degraded.length);
      expect(report.full + report.degraded.length).toBe(report.packs);
      const fixed = await a.poolAdmin.repair();
      expect(fixed).toMatchObject({ queued: 0, problems: [] });
      expect(fixed.completed).toBe(report.degraded.length);
      const again = await a.poolAdmin.redundancy();
      expect(again.full).toBe(again.packs);
      expect(fs.readdirSync(path.join(d1, 'data')).sort()).toEqual(
        fs.readdirSync(path.join(d2, 'data')).sort(),
      );
    } finally {
      a.close();
    }
    fs.rmSync(d1, { recursive: true });
    // The machine that made it reads each range from the other copy when its first one is gone.
    const a2 = await Engine.unlock(home, { passphrase: PASS });
    try {
      const out = tempDir('cairn-pool-out-');
      expect((await a2.restore(after, { to: out })).failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src1)))).toEqual(describeTree(src1));
      expect((await a2.verify(before)).problems).toEqual([]);
    } finally {
      a2.close();
    }
    const b = await connectVia(path.join(tempDir(), 'home-b'), 'two', d2);
    try {
      expect(
        b
          .listSnapshots()
          .map((s) => s.id)
          .sort(),
      ).toEqual([before, after].sort());
      for (const [id, src] of [
        [before, src0],
        [after, src1],
      ] as const) {
        const out = tempDir('cairn-pool-out-');
        expect((await b.restore(id, { to: out })).failed).toEqual([]);
        expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
      }
      // The lost target goes (this machine still counts its copies: only by force); nothing is lost.
      await expect(b.removeTarget('one')).rejects.toThrow(/holds \d+ copies .*"cairn target drain one"/);
      await b.removeTarget('one', { force: true });
      expect(b.listSnapshots()).toHaveLength(2);
      expect((await b.check()).problems).toEqual([]);
    } finally {
      b.close();
    }
  });

  it('2 copies, write quorum 1: a member out of reach gets its metadata at its next refresh, and repair its copies', async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const src = smallTextTree();
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', { kind: 'dir', path: d2 });
      await a.poolAdmin.setReplicas(2, 2);
      fs.renameSync(d2, `${d2}.away`);
      await expect(a.backup([src], { settings: { pauseLimitMs: 0 } })).rejects.toThrow(
        /only 1 of the 2 copies could be stored, and 2 must be \(the write quorum.*\): .*"two"/,
      );
      await a.poolAdmin.setReplicas(2, 1).catch(() => undefined); // two is away: the pool object cannot reach it
      fs.renameSync(`${d2}.away`, d2);
      await a.poolAdmin.setReplicas(2, 1);
      fs.renameSync(d2, `${d2}.away`);
      const r = await a.backup([src], {});
      expect(r.redundancy).toMatchObject({ state: 'completing', waitingOn: ['two'] });
      expect(r.redundancy.queued).toBeGreaterThan(0);
      expect(a.ks.outbox.count(a.ks.findTarget('two')!.id)).toBeGreaterThan(1);
      fs.renameSync(`${d2}.away`, d2);
      expect(fs.existsSync(path.join(d2, 'snapshots'))).toBe(false);
      await a.refresh();
      expect(a.ks.outbox.count(a.ks.findTarget('two')!.id)).toBe(0);
      expect(fs.readdirSync(path.join(d2, 'snapshots'))).toEqual([r.snapshotId]);
      expect((await a.poolAdmin.redundancy()).full).toBeLessThan((await a.poolAdmin.redundancy()).packs);
      expect(await a.poolAdmin.repair()).toMatchObject({ queued: 0, problems: [] });
      expect((await a.poolAdmin.redundancy()).degraded).toEqual([]);
    } finally {
      a.close();
    }
    fs.rmSync(d1, { recursive: true });
    const b = await connectVia(path.join(tempDir(), 'home-b'), 'two', d2);
    try {
      const out = tempDir('cairn-pool-out-');
      expect((await b.restore(b.listSnapshots()[0]!.id, { to: out })).failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    } finally {
      b.close();
    }
  });

  it('a pool has at most 16 targets: the 17th is refused, naming the limit, and nothing is written', async () => {
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      for (let i = 1; i <= 16; i++)
        await a.addTarget(`t${i}`, { kind: 'dir', path: tempDir('cairn-pool16-') });
      const extra = tempDir('cairn-pool17-');
      await expect(a.addTarget('t17', { kind: 'dir', path: extra })).rejects.toThrow(
        /A pool has at most 16 targets; remove one .* before adding "t17"/,
      );
      expect(a.listTargets()).toHaveLength(16);
      expect(fs.readdirSync(extra)).toEqual([]);
      // Nor can a policy ask for more shards than a pool may have targets.
      await expect(a.poolAdmin.setErasure(14, 3)).rejects.toThrow(
        /14\+3 shards need 17 targets, and a pool has at most 16/,
      );
    } finally {
      a.close();
    }
  });
});
