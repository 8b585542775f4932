import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3TargetConfig } from '../../../test/support/engine-env.ts';
import { describeTree, smallTextTree, tempDir } from '../../../test/support/fixtures.ts';
import { startProxy } from '../../../test/support/proxy.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { copyTargets, packPlacement } from '../pool/pack-placement.ts';
import { Engine } from './engine.ts';
import { PASS, connectVia, places, poolsInBucket, poolsInDir } from '../../../test/support/pool-env.ts';
import { LockConflictError } from '../repository/locks.ts';

let s3: S3Server;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
});
afterAll(async () => {
  delete process.env.CAIRN_TEST_WEAK_KDF;
  await s3?.stop();
});

describe('a pool of targets: prune, weights, locks and what a member is', () => {
  it("prune rewrites the pool's one index on every member; a machine that knew the old one stores pruned data again", async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const [oldSrc, keptSrc, otherSrc] = [smallTextTree('old'), smallTextTree('kept'), smallTextTree('other')];
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    const homeB = path.join(tempDir(), 'home-b');
    let forgotten: string;
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', { kind: 'dir', path: d2 });
      forgotten = (await a.backup([oldSrc], { target: 'one' })).snapshotId;
      await a.backup([keptSrc], { target: 'one' });
      await a.backup([otherSrc], { target: 'two' });
      // Machine B learns the whole index now, the pack that prune will delete included.
      (await connectVia(homeB, 'two', d2)).close();
      await a.forget({ ids: [forgotten] });
      const r = await a.prune({ maxUnused: { percent: 0 } });
      // A new pool keeps 2 copies of each pack: both targets lose the forgotten data.
      expect(r.targets.map((t) => [t.target, t.packsDeleted > 0])).toEqual([
        ['one', true],
        ['two', true],
      ]);
      const indexOf = (d: string) => fs.readdirSync(path.join(d, 'index')).sort();
      expect(indexOf(d1)).toEqual(indexOf(d2));
      // Pool index files only (flags 1): each can be read from any member.
      for (const f of indexOf(d1)) expect(fs.readFileSync(path.join(d1, 'index', f))[5]).toBe(1);
      expect((await a.check()).problems).toEqual([]);
    } finally {
      a.close();
    }
    const b = await Engine.unlock(homeB, { passphrase: PASS });
    try {
      await b.refresh();
      expect(b.listSnapshots().map((s) => s.id)).not.toContain(forgotten);
      // The pruned data is not deduplicated against the deleted pack: it is stored again.
      const again = await b.backup([oldSrc], { target: 'two' });
      expect(again.blobsNew).toBeGreaterThan(0);
      const out = tempDir('cairn-pool-out-');
      expect((await b.restore(again.snapshotId, { to: out })).failed).toEqual([]);
      expect(describeTree(path.join(out, path.basename(oldSrc)))).toEqual(describeTree(oldSrc));
      expect((await b.check()).problems).toEqual([]);
    } finally {
      b.close();
    }
  });

  it('what a member missed is not delivered once a prune elsewhere replaced or removed it', async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    const homeB = path.join(tempDir(), 'home-b');
    let gone: string;
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', { kind: 'dir', path: d2 });
      await a.backup([smallTextTree('kept')], {});
      (await connectVia(homeB, 'two', d2)).close();
      fs.renameSync(d2, `${d2}.away`);
      gone = (await a.backup([smallTextTree('soon gone')], {})).snapshotId;
      expect(a.ks.outbox.count(a.ks.findTarget('two')!.id)).toBeGreaterThan(1);
      fs.renameSync(`${d2}.away`, d2);
    } finally {
      a.close();
    }
    // Machine B forgets that snapshot and prunes before A delivers what two missed.
    const b = await Engine.unlock(homeB, { passphrase: PASS });
    try {
      await b.refresh();
      await b.forget({ ids: [gone] });
      await b.prune({ maxUnused: { percent: 0 } });
    } finally {
      b.close();
    }
    const a2 = await Engine.unlock(home, { passphrase: PASS });
    try {
      await a2.refresh();
      expect(a2.ks.outbox.count(a2.ks.findTarget('two')!.id)).toBe(0);
      expect(a2.listSnapshots().map((x) => x.id)).not.toContain(gone);
      expect(fs.readdirSync(path.join(d2, 'snapshots'))).not.toContain(gone);
      expect((await a2.check()).problems).toEqual([]);
    } finally {
      a2.close();
    }
    const b2 = await Engine.unlock(homeB, { passphrase: PASS });
    try {
      await b2.refresh();
      expect(b2.listSnapshots().map((x) => x.id)).not.toContain(gone);
      expect((await b2.check()).problems).toEqual([]);
    } finally {
      b2.close();
    }
  });

  it("a target's weight travels with the pool object and sets its share of the packs", async () => {
    const dirs = [tempDir('cairn-pool-w1-'), tempDir('cairn-pool-w2-'), tempDir('cairn-pool-w3-')];
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      await a.addTarget('small', { kind: 'dir', path: dirs[0]! });
      await a.addTarget('also-small', { kind: 'dir', path: dirs[1]! });
      await a.addTarget('big', { kind: 'dir', path: dirs[2]! }, undefined, { weight: 400 });
      await expect(
        a.addTarget('bad', { kind: 'dir', path: tempDir() }, undefined, { weight: 0 }),
      ).rejects.toThrow(/The weight is a whole number from 1 to 1000000\./);
      await a.poolAdmin.setReplicas(1);
      const placement = packPlacement(a.ks, a.ks.findTarget('small')!)!;
      const share = new Map<number, number>();
      for (let i = 0; i < 3000; i++) {
        const [id] = copyTargets(placement, 0, randomBytes(32));
        share.set(id!, (share.get(id!) ?? 0) + 1);
      }
      // 400 of 600: two thirds of the packs, within sampling noise.
      expect(share.get(a.ks.findTarget('big')!.id)! / 3000).toBeCloseTo(2 / 3, 1);
    } finally {
      a.close();
    }
    const b = await connectVia(path.join(tempDir(), 'home-b'), 'x', dirs[1]!);
    try {
      expect(b.listTargets().map((t) => [t.poolId, t.weight])).toEqual([
        [2, 100],
        [1, 100],
        [3, 400],
      ]);
    } finally {
      b.close();
    }
  });

  it('repair takes a shared lock on every member: refused while a prune holds the exclusive one', async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', { kind: 'dir', path: d2 });
      // The same folder twice is refused, naming the target it already is.
      await expect(a.addTarget('again', { kind: 'dir', path: `${d1}/` })).rejects.toThrow(
        `${d1}/ is already target "one" of this repository.`,
      );
      await a.backup([smallTextTree()], {});
      const held = await a.repo.lock(a.listTargets()[1]!, { kind: 'exclusive', operation: 'prune' });
      try {
        await expect(a.poolAdmin.repair()).rejects.toThrow(/exclusive lock for prune/);
      } finally {
        await held.release();
      }
      await expect(a.poolAdmin.repair()).resolves.toMatchObject({ queued: 0, problems: [] });
      // Its own locks are gone once it is done.
      for (const d of [d1, d2]) expect(fs.readdirSync(path.join(d, 'locks'))).toEqual([]);
      // A member that cannot be listed is named in the redundancy report, which still comes.
      fs.renameSync(d2, `${d2}.away`);
      const r = await a.poolAdmin.redundancy();
      expect(r.unreachable).toEqual([{ target: 'two', message: expect.stringMatching(/does not exist/) }]);
      expect(r.packs).toBeGreaterThan(0);
      fs.renameSync(`${d2}.away`, d2);
    } finally {
      a.close();
    }
  });

  it('a pool change not written to every member is not kept here: the next one gives the same place again', async () => {
    const [d1, d3] = [tempDir('cairn-pub-1-'), tempDir('cairn-pub-3-')];
    const bucket = await s3.createBucket();
    const proxy = await startProxy(s3.endpoint);
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', s3TargetConfig(s3, bucket, proxy.endpoint), s3.secretAccessKey);
      const before = places(a);
      // The S3 member refuses the new pool object; the folder before it takes it.
      proxy.failNext(1, 403, (method, p) => method === 'PUT' && p.includes('/pools/'));
      await expect(a.addTarget('three', { kind: 'dir', path: d3 })).rejects.toThrow(
        /Target "three" was added, but the pool object could not be written to every target/,
      );
      expect(places(a).slice(0, 2)).toEqual(before);
      expect(places(a)[2]).toMatchObject({ name: 'three', poolId: null });
      expect(poolsInDir(d1)).toHaveLength(2); // the old generation, and the new one naming "three"
      // The next refresh adopts what the first member holds (no second "three"), then writes the pool
      // where it is missing.
      await a.refresh();
      expect(places(a).map((p) => [p.name, p.poolId])).toEqual([
        ['one', 1],
        ['two', 2],
        ['three', 3],
      ]);
      const newest = (keys: string[]) => [...keys].sort().at(-1);
      expect(newest(poolsInDir(d1))).toMatch(/^0000000000000002-/);
      expect(newest(poolsInDir(d3))).toBe(newest(poolsInDir(d1)));
      expect(newest(await poolsInBucket(s3, bucket))).toBe(newest(poolsInDir(d1)));
    } finally {
      a.close();
      await proxy.close();
    }
  });

  it('a member out of reach fails a target change in seconds, and says how the new target joins later', async () => {
    const [d1, d3] = [tempDir('cairn-pubd-1-'), tempDir('cairn-pubd-3-')];
    const bucket = await s3.createBucket();
    const proxy = await startProxy(s3.endpoint);
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', s3TargetConfig(s3, bucket, proxy.endpoint), s3.secretAccessKey);
      proxy.outage(120_000, 'reset');
      const t0 = Date.now();
      await expect(a.addTarget('three', { kind: 'dir', path: d3 })).rejects.toThrow(
        /Target "three" was added, but the pool object could not be written to every target \(S3 target "two".*cannot be reached.*\); it joins the pool once every member takes the pool object: the next backup or "cairn check" with every member in reach writes it \("cairn target rm three" undoes the add\)\.$/,
      );
      // Before, the exclusive lock on "two" rode out its retry window (about 45 s).
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(places(a)[2]).toMatchObject({ name: 'three', poolId: null });
      proxy.outage(0, 'reset');
    } finally {
      a.close();
    }
    // The next command with every member in reach (a new process: no memory of the outage) publishes it.
    const again = await Engine.unlock(home, { passphrase: PASS });
    try {
      await again.refresh();
      expect(places(again).map((p) => [p.name, p.poolId])).toEqual([
        ['one', 1],
        ['two', 2],
        ['three', 3],
      ]);
    } finally {
      again.close();
      await proxy.close();
    }
  });

  it('a member under another name (a symlinked folder, another endpoint of its server) is refused, and nothing is added', async () => {
    const d1 = tempDir('cairn-alias-1-');
    const bucket = await s3.createBucket();
    const proxy = await startProxy(s3.endpoint);
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', s3TargetConfig(s3, bucket), s3.secretAccessKey);
      const link = path.join(tempDir('cairn-alias-link-'), 'one-again');
      fs.symlinkSync(d1, link);
      const t0 = Date.now();
      await expect(a.addTarget('alias', { kind: 'dir', path: link })).rejects.toThrow(
        /is target "one" under another name \(a lock written through "one" shows there\): nothing was added\./,
      );
      await expect(
        a.addTarget('proxied', s3TargetConfig(s3, bucket, proxy.endpoint), s3.secretAccessKey),
      ).rejects.toThrow(/is target "two" under another name/);
      // Not waited out as a lock held elsewhere would be (30 s).
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(places(a).map((p) => [p.name, p.poolId])).toEqual([
        ['one', 1],
        ['two', 2],
      ]);
      expect(fs.readdirSync(path.join(d1, 'locks'))).toEqual([]);

      // A lock this process holds on the same target under another name (renamed since) is a lock
      // conflict, not "another storage".
      const held = await a.repo.lock(a.listTargets()[0]!, { kind: 'shared', operation: 'backup' });
      try {
        const renamed = { ...a.listTargets()[0]!, name: 'uno' };
        const err = await a.repo
          .lock(renamed, { kind: 'exclusive', operation: 'prune' })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(LockConflictError);
      } finally {
        await held.release();
      }
      // Edited into another member: refused, and the target left as it was.
      await expect(
        a.replaceTarget('one', 'one', s3TargetConfig(s3, bucket, proxy.endpoint), s3.secretAccessKey),
      ).rejects.toThrow(/is target "two" under another name .*: "one" was not changed\./);
      expect(a.listTargets()[0]!.config).toEqual({ kind: 'dir', path: d1 });
    } finally {
      a.close();
      await proxy.close();
    }
  });

  it('a damaged pool object is named, not trusted', async () => {
    const [d1, d2] = [tempDir('cairn-pool-d1-'), tempDir('cairn-pool-d2-')];
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: d1 });
      await a.addTarget('two', { kind: 'dir', path: d2 });
    } finally {
      a.close();
    }
    const [name] = poolsInDir(d2);
    const file = path.join(d2, 'pools', name!);
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 5]! ^= 1;
    fs.writeFileSync(file, bytes);
    await expect(connectVia(path.join(tempDir(), 'home-b'), 'two', d2)).rejects.toThrow(
      new RegExp(`No pool object on target "two" can be read: pools/${name}: .*authentication failed`),
    );
  });

  it('a pool object copied into another bucket of the pool is refused: it names the bucket it belongs to', async () => {
    const [b1, b2] = [await s3.createBucket(), await s3.createBucket()];
    const a = await Engine.init(path.join(tempDir(), 'home'), PASS);
    try {
      await a.addTarget('one', s3TargetConfig(s3, b1), s3.secretAccessKey);
      await a.addTarget('two', s3TargetConfig(s3, b2), s3.secretAccessKey);
    } finally {
      a.close();
    }
    // Both buckets hold the same generation under the same name, each saying which target it is.
    const [key] = await poolsInBucket(s3, b1);
    expect(await poolsInBucket(s3, b2)).toEqual([key]);
    const one = await s3.client.send(new GetObjectCommand({ Bucket: b1, Key: `pools/${key}` }));
    const body = Buffer.from(await one.Body!.transformToByteArray());
    await s3.client.send(new PutObjectCommand({ Bucket: b2, Key: `pools/${key}`, Body: body }));
    await expect(
      Engine.connect(path.join(tempDir(), 'home-b'), 'two', s3TargetConfig(s3, b2), s3.secretAccessKey, {
        passphrase: PASS,
      }),
    ).rejects.toThrow(
      new RegExp(
        `The pool object pools/${key} in bucket "${b2}" \\(target "two"\\) says it is the pool's bucket "${b1}"`,
      ),
    );
  });
});
