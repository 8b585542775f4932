import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckResult } from '../../shared/api/retention.ts';
import { cliJson, runCli } from '../support/cli.ts';
import {
  fullestTarget,
  initFolderPool,
  initHomeWithTarget,
  listKeys,
  packFilesIn,
} from '../support/cairn-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../support/fixtures.ts';
import { backupAndRecord, expectRestores, type Expected } from '../support/retention.ts';
import { startProxy } from '../support/proxy.ts';
import { startVersitygw, type S3Server } from '../support/versitygw.ts';

let s3: S3Server;
beforeAll(async () => {
  s3 = await startVersitygw();
});
afterAll(async () => {
  await s3?.stop();
});

describe('check --read-data', () => {
  it('a glitch on the wire condemns nothing: bytes flipped in transit while checking, restoring and listing', async () => {
    const proxy = await startProxy(s3.endpoint);
    try {
      const bucket = await s3.createBucket();
      const { cli } = await initHomeWithTarget(s3, {
        bucket,
        endpoint: proxy.endpoint,
        init: ['--pack-size', '1MiB'],
      });
      const src = path.join(tempDir(), 'glitch');
      for (let i = 0; i < 8; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
      const expected: Expected = new Map();
      const id = await backupAndRecord(cli, src, expected);
      const data = (p: string) => p.includes('/data/');

      proxy.flipNext(2, data);
      const checked = await runCli(['--json', 'check', '--read-data'], cli);
      expect(proxy.corrupted.flipped).toBe(2);
      expect(checked.code, checked.stdout).toBe(0);
      const r = JSON.parse(checked.stdout) as CheckResult;
      expect(r.problems).toEqual([]);
      expect(r.damaged).toEqual([]);

      proxy.flipNext(2, data);
      await expectRestores(cli, expected, [id]);
      expect(proxy.corrupted.flipped).toBe(4);
      expect((await runCli(['verify', id], cli)).code).toBe(0);

      // Listings: a flipped byte either breaks the XML (retried) or changes a name (confirmed before
      // anything is taken for gone).
      for (let i = 0; i < 4; i++) {
        proxy.flipNext(1, (_p, q) => q.includes('list-type'));
        const c = await runCli(['check'], cli);
        expect(c.code, c.stderr).toBe(0);
        await expectRestores(cli, expected, [id]);
      }
      // A name in a listing changed on the way (a hex letter's case flipped): what seems gone is
      // confirmed before anything is taken for gone.
      for (const prefix of ['data', 'index', 'snapshots', 'keys']) {
        const inName = (first: Buffer) => {
          const at = first.indexOf(`<Key>${prefix}/`);
          if (at < 0) return -1;
          const from = at + `<Key>${prefix}/`.length;
          for (let j = from; j < from + 40; j++) if (first[j]! >= 0x61 && first[j]! <= 0x66) return j;
          return -1;
        };
        proxy.flipNext(1, (_p, q) => q.includes('list-type') && q.includes(`prefix=${prefix}`), inName);
        const c = await runCli(['check'], cli);
        expect(c.code, `${prefix}: ${c.stderr}`).toBe(0);
        await expectRestores(cli, expected, [id]);
      }
      proxy.setCorruption({});
      const clean = await runCli(['check', '--read-data'], cli);
      expect(clean.stderr).toBe('');
      expect(clean.code).toBe(0);

      // Damage that every read sees is damage; once the pack reads whole again (the bucket served
      // wrong bytes for a while, or was mended), the blobs found damaged are learnt back.
      const packs = await listKeys(s3, bucket, 'data/');
      const victim = packs.reduce((a, b) => (b.size > a.size ? b : a));
      const got = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: victim.key }));
      const good = Buffer.from(await got.Body!.transformToByteArray());
      const bad = Buffer.from(good);
      bad[200] = bad[200]! ^ 0x01;
      await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: victim.key, Body: bad }));
      expect((await runCli(['check', '--read-data'], cli)).code).toBe(1);
      expect((await runCli(['check'], cli)).code).toBe(1);
      await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: victim.key, Body: good }));
      const mended = await runCli(['check', '--read-data'], cli);
      expect(mended.stderr).toBe('');
      expect(mended.code).toBe(0);
      expect((await runCli(['check'], cli)).code).toBe(0);
      await expectRestores(cli, expected, [id]);
    } finally {
      await proxy.close();
    }
  });

  it('names a damaged blob with its snapshot and file; the next backup stores it again', async () => {
    const bucket = await s3.createBucket();
    const { cli } = await initHomeWithTarget(s3, { bucket });
    const src = path.join(tempDir(), 'precious');
    writeRandomFile(path.join(src, 'one.bin'), 200_000);
    writeRandomFile(path.join(src, 'two.bin'), 300_000);
    const expected: Expected = new Map();
    const first = await backupAndRecord(cli, src, expected, ['--chunk-size', '1MiB']);
    expect((await runCli(['check', '--read-data'], cli)).code).toBe(0);

    // Flip one byte inside the first blob of the (largest) data pack: same size, so only reading finds it.
    const packs = await listKeys(s3, bucket, 'data/');
    const data = packs.reduce((a, b) => (b.size > a.size ? b : a));
    const res = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: data.key }));
    const body = Buffer.from(await res.Body!.transformToByteArray());
    body[100] = body[100]! ^ 0xff;
    await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: data.key, Body: body }));

    expect((await runCli(['check'], cli)).code).toBe(0); // the structure is fine
    const subset = await runCli(['--json', 'check', '--read-data-subset', '100%'], cli);
    expect(subset.code).toBe(1);
    // One document: the report, with the partial failure as its `error`.
    const r = JSON.parse(subset.stdout) as CheckResult & { error: string };
    expect(r.error).toMatch(/damaged/);
    expect(r.packsRead).toBe(packs.length);
    expect(r.problems.map((p) => p.kind)).toEqual(['damaged-blob']);
    expect(r.problems[0]!.pack).toBe(data.key.split('/')[2]);
    expect(r.damaged).toHaveLength(1);
    expect(r.damaged[0]!.snapshot).toBe(first);
    expect(r.damaged[0]!.files).toHaveLength(1);
    const file = r.damaged[0]!.files[0]!;
    expect(file).toMatch(/^precious\/(one|two)\.bin$/);

    const human = await runCli(['check', '--read-data'], cli);
    expect(human.code).toBe(1);
    // Its only copy failed every read: damaged, but still tried by a restore (never dropped).
    expect(human.stderr).toMatch(
      new RegExp(`Snapshot ${first}: ${file} needs blobs found damaged where they are stored`),
    );
    expect(human.stderr).toMatch(/Problem: blob [0-9a-f]{64} in pack [0-9a-f]{64}: /);

    // The damaged blob is no longer trusted: the next backup reads the file again and stores it.
    const second = await backupAndRecord(cli, src, expected, ['--chunk-size', '1MiB']);
    await expectRestores(cli, expected, [second]);
    // Both snapshots are whole again (the blob has a good copy), and the first restores.
    const after = await cliJson<CheckResult>(['check'], cli);
    expect(after.damaged).toEqual([]);
    const restoreFirst = await runCli(['restore', first, '--to', tempDir()], cli);
    expect(restoreFirst.stderr).toBe('');
    expect(restoreFirst.code).toBe(0);
    // Reading the packs still finds the damaged copy, but no snapshot needs it any more.
    const reread = await runCli(['--json', 'check', '--read-data'], cli);
    expect(reread.code).toBe(1);
    const rr = JSON.parse(reread.stdout) as CheckResult;
    expect(rr.problems.map((p) => [p.kind, p.blob])).toEqual([['damaged-blob', r.problems[0]!.blob]]);
    expect(rr.damaged).toEqual([]);

    // Prune keeps the copy that authenticates (it reads the blobs stored twice), never the damaged one.
    const pruned = await cliJson<{ targets: { packsRepacked: number; packsDeleted: number }[] }>(
      ['prune', '--max-unused', '0%'],
      cli,
    );
    expect(pruned.targets[0]!.packsRepacked + pruned.targets[0]!.packsDeleted).toBeGreaterThan(0);
    expect((await listKeys(s3, bucket, 'data/')).map((k) => k.key)).not.toContain(data.key);
    await expectRestores(cli, expected, [first, second]);
    const clean = await runCli(['check', '--read-data'], cli);
    expect(clean.stderr).toBe('');
    expect(clean.code).toBe(0);
  });

  it('in a pool, a copy damaged where the other is intact: every snapshot stays whole, restore reads the other, repair rewrites it', async () => {
    const { cli, dirs } = await initFolderPool(3, 'crd', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-crd-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    // Every pack copy on one target damaged (the one holding most): a byte flipped every 64 KiB.
    const victim = dirs[fullestTarget(dirs)]!;
    const data = path.join(victim, 'data');
    let flipped = 0;
    for (const file of packFilesIn(victim)) {
      const bytes = fs.readFileSync(file);
      if (bytes.length < 4096) continue;
      for (let at = 100; at < bytes.length - 2048; at += 65536) bytes[at]! ^= 0x40;
      fs.writeFileSync(file, bytes);
      flipped++;
    }
    expect(flipped).toBeGreaterThan(0);

    const check = await runCli(['check', '--read-data'], cli);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(
      new RegExp(
        `^${flipped} pack cop(y|ies) (is|are) damaged; every snapshot is whole \\(the other copies or shards hold it\\)`,
        'm',
      ),
    );
    expect(check.stderr).not.toMatch(/needs a missing pack or blob/);
    expect(check.stderr).toMatch(/another copy was read whole: "cairn repair" writes this one again/);

    // The damaged target gone altogether: the other copies restore every file.
    fs.renameSync(data, `${data}.away`);
    const out = tempDir('cairn-crd-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
    fs.renameSync(`${data}.away`, data);

    const repair = await runCli(['repair'], cli);
    expect(repair.code, repair.stderr).toBe(0);
    const again = await runCli(['check', '--read-data'], cli);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });

  it('in a pool, a copy marked damaged is read as a last resort once the intact one is gone: its good blobs restore', async () => {
    const { cli, dirs } = await initFolderPool(2, 'crl', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-crl-src-');
    for (let i = 0; i < 3; i++) writeRandomFile(path.join(src, `f${i}.bin`), 200_000);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    const data = (dir: string) => path.join(dir, 'data');
    const largest = (dir: string) =>
      fs
        .readdirSync(data(dir), { recursive: true, encoding: 'utf8' })
        .map((f) => path.join(data(dir), f))
        .filter((f) => fs.statSync(f).isFile())
        .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0]!;
    // One blob damaged in the second target's copy of the largest pack; check marks that copy damaged.
    const file = largest(dirs[1]!);
    const bytes = fs.readFileSync(file);
    bytes[1000]! ^= 0x40;
    fs.writeFileSync(file, bytes);
    const check = await runCli(['check', '--read-data'], cli);
    expect(check.stdout).toMatch(/1 pack copy is damaged; every snapshot is whole/);
    // check --redundancy says what became of that copy: damaged, not gone.
    const redundancy = await runCli(['check', '--redundancy'], cli);
    expect(redundancy.code).toBe(1);
    expect(redundancy.stdout).toMatch(
      /: 1 of 2 copies stored, 1 found damaged by "cairn check --read-data"\./,
    );
    expect(redundancy.stdout).not.toMatch(/gone from/);

    // The intact copy's target loses its data before repair ran: the damaged copy is all there is.
    fs.renameSync(data(dirs[0]!), `${data(dirs[0]!)}.away`);
    const out = tempDir('cairn-crl-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code).toBe(1);
    const lines = restored.stderr.trim().split('\n');
    expect(
      lines.filter((l) => /f\d\.bin/.test(l)),
      restored.stderr,
    ).toHaveLength(1);
    const broken = /(f\d\.bin)/.exec(restored.stderr)![1]!;
    // Named with the copy it was last read from: the intact one's target had nothing to give.
    expect(restored.stderr).toMatch(
      new RegExp(`${broken}: blob [0-9a-f]{12}… from target "d2": authentication failed`),
    );
    const want = describeTree(src);
    const got = describeTree(path.join(out, path.basename(src)));
    expect(got).toEqual(Object.fromEntries(Object.entries(want).filter(([k]) => !k.endsWith(broken))));

    // Once a listing found the intact copy gone, the damaged one is the only copy a restore knows of.
    const listed = await runCli(['check'], cli);
    expect(listed.code).toBe(1);
    expect(listed.stderr).toMatch(
      /needs blobs found damaged where they are stored \(a restore still tries them/,
    );
    expect(listed.stderr).not.toMatch(/needs a missing pack or blob/);
    const out2 = tempDir('cairn-crl-out-');
    const again = await runCli(['restore', snapshotId, '--to', out2], cli);
    expect(again.code).toBe(1);
    expect(describeTree(path.join(out2, path.basename(src)))).toEqual(got);
  });

  it('in a pool, a copy whose header is damaged is no intact copy: a blob damaged in the other is stored again', async () => {
    const { cli, dirs } = await initFolderPool(2, 'crh', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-crh-src-');
    for (let i = 0; i < 3; i++) writeRandomFile(path.join(src, `f${i}.bin`), 200_000);
    await cliJson(['backup', src], cli);
    // The largest pack: its header damaged on the first target, its first blob on the second.
    const largest = (dir: string) => {
      const data = path.join(dir, 'data');
      return fs
        .readdirSync(data, { recursive: true, encoding: 'utf8' })
        .map((f) => path.join(data, f))
        .filter((f) => fs.statSync(f).isFile())
        .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0]!;
    };
    const [first, second] = [largest(dirs[0]!), largest(dirs[1]!)];
    expect(path.basename(first)).toBe(path.basename(second));
    for (const [file, at] of [
      [first, fs.statSync(first).size - 40],
      [second, 1000],
    ] as const) {
      const bytes = fs.readFileSync(file);
      bytes[at]! ^= 0x40;
      fs.writeFileSync(file, bytes);
    }
    const check = await runCli(['check', '--read-data'], cli);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/1 of 1 snapshots is damaged/);
    expect(check.stdout).not.toMatch(/every snapshot is whole/);

    // The next backup stores the damaged blob again; with the first target gone it all restores.
    const { snapshotId } = await cliJson<{ snapshotId: string }>(['backup', src], cli);
    fs.renameSync(path.join(dirs[0]!, 'data'), path.join(dirs[0]!, 'data.away'));
    const out = tempDir('cairn-crh-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });
});

describe('check with part of the repository out of reach', () => {
  it('in a pool, a member out of reach is passed over and named: the others are read, and the check says it is incomplete', async () => {
    const { cli, dirs } = await initFolderPool(3, 'cun', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-cun-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
    await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
    const all = await cliJson<CheckResult>(['check', '--read-data'], cli);
    const away = fullestTarget(dirs);
    const name = `d${away + 1}`;
    const onAway = packFilesIn(dirs[away]!).length;
    expect(onAway).toBeGreaterThan(0);

    fs.renameSync(dirs[away]!, `${dirs[away]!}.away`);
    const r = await runCli(['--json', 'check', '--read-data'], cli);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.stdout) as CheckResult;
    expect(j.problems).toMatchObject([{ kind: 'unreachable-target', target: name }]);
    expect(j.damaged).toEqual([]);
    expect(j.packsRead).toBe(all.packsRead - onAway);
    expect(j.blobsRead).toBeGreaterThan(0);
    const text = await runCli(['check'], cli);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/whole as far as could be checked/);
    expect(text.stdout).toContain(`Target "${name}" could not be read: its copies count as this machine`);
    expect(text.stdout).toContain(`"cairn target rm ${name} --force" removes it`);
    expect(text.stderr).toMatch(/Part of the repository could not be checked/);

    // Nothing in reach: no verdict at all.
    for (const d of dirs) if (d !== dirs[away]) fs.renameSync(d, `${d}.away`);
    const none = await runCli(['check'], cli);
    expect(none.code).toBe(1);
    expect(none.stdout).not.toMatch(/whole/);
    expect(none.stderr).toMatch(/the folder does not exist/);
    for (const d of dirs) fs.renameSync(`${d}.away`, d);
    const back = await runCli(['check', '--read-data'], cli);
    expect(back.code, back.stdout + back.stderr).toBe(0);
  });

  it('a copy found damaged while the other copy is out of reach is marked damaged, its blobs kept: they restore once it is back', async () => {
    const { cli, dirs } = await initFolderPool(3, 'cdu', ['--pack-size', '1MiB']);
    const src = tempDir('cairn-cdu-src-');
    for (let i = 0; i < 6; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
    const { snapshotId } = await cliJson<{ snapshotId: string }>(
      ['backup', src, '--chunk-size', '256KiB'],
      cli,
    );
    const a = fullestTarget(dirs);
    const file = packFilesIn(dirs[a]!).reduce((x, y) => (fs.statSync(y).size > fs.statSync(x).size ? y : x));
    const b = dirs.findIndex(
      (d, i) => i !== a && packFilesIn(d).some((f) => path.basename(f) === path.basename(file)),
    );
    expect(b).toBeGreaterThanOrEqual(0);
    const bytes = fs.readFileSync(file);
    bytes[100]! ^= 0x40;
    fs.writeFileSync(file, bytes);
    fs.renameSync(dirs[b]!, `${dirs[b]!}.away`);

    const r = await runCli(['--json', 'check', '--read-data'], cli);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.stdout) as CheckResult;
    expect(j.problems.filter((p) => p.kind === 'unreachable-target').map((p) => p.target)).toEqual([
      `d${b + 1}`,
    ]);
    expect(j.problems.some((p) => p.kind === 'damaged-copy' && p.target === `d${a + 1}`)).toBe(true);
    expect(j.problems.some((p) => p.kind === 'damaged-blob')).toBe(false);
    expect(j.damaged).toEqual([]);

    // Back: the other copy restores every file (before, its blobs had left the index: "needs a missing blob").
    fs.renameSync(`${dirs[b]!}.away`, dirs[b]!);
    const out = tempDir('cairn-cdu-out-');
    const restored = await runCli(['restore', snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, path.basename(src)))).toEqual(describeTree(src));
  });

  it('erasure-coded packs with fewer than k shards in reach are named as not checked, not as whole', async () => {
    const { cli, dirs } = await initFolderPool(3, 'cuec', ['--pack-size', '1MiB']);
    expect((await runCli(['policy', '--ec', '2+1'], cli)).code).toBe(0);
    const src = tempDir('cairn-cuec-src-');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
    await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
    for (const d of dirs.slice(1)) fs.renameSync(d, `${d}.away`);
    const r = await runCli(['--json', 'check', '--read-data'], cli);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.stdout) as CheckResult;
    expect(j.problems.filter((p) => p.kind === 'unreachable-target').map((p) => p.target)).toEqual([
      'd2',
      'd3',
    ]);
    const unread = j.problems.filter((p) => p.kind === 'unread-copy');
    expect(unread.length).toBeGreaterThan(0);
    expect(unread[0]!.message).toMatch(/was not checked: [01] of its shards could be read, 2 are needed/);
    expect(j.problems.every((p) => p.kind === 'unreachable-target' || p.kind === 'unread-copy')).toBe(true);
    for (const d of dirs.slice(1)) fs.renameSync(`${d}.away`, d);
    const back = await runCli(['check', '--read-data'], cli);
    expect(back.code, back.stdout + back.stderr).toBe(0);
  });

  it('a pack copy whose download is refused is named and left as it was; the other packs are still read', async () => {
    const bucket = await s3.createBucket();
    const proxy = await startProxy(s3.endpoint);
    try {
      const { cli } = await initHomeWithTarget(s3, { bucket, endpoint: proxy.endpoint });
      const src = tempDir('cairn-cunr-src-');
      for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `f${i}.bin`), 300_000);
      await cliJson(['backup', src, '--chunk-size', '256KiB'], cli);
      const all = await cliJson<CheckResult>(['check', '--read-data'], cli);
      proxy.failNext(1, 403, (m, p) => m === 'GET' && p.includes('/data/'));
      const r = await runCli(['--json', 'check', '--read-data'], cli);
      expect(r.code, r.stderr).toBe(1);
      const j = JSON.parse(r.stdout) as CheckResult;
      expect(j.problems).toMatchObject([{ kind: 'unread-copy', target: 's3' }]);
      expect(j.problems[0]!.message).toMatch(/could not be read, so it was not checked/);
      expect(j.packsRead).toBe(all.packsRead - 1);
      expect(j.damaged).toEqual([]);
      // Not marked missing or damaged: the next check reads it whole.
      const again = await runCli(['check', '--read-data'], cli);
      expect(again.code, again.stdout + again.stderr).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});
