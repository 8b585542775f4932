import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listKeys } from '../../../test/support/cairn-env.ts';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { startVersitygw, type S3Server } from '../../../test/support/versitygw.ts';
import { Engine } from './engine.ts';
import { JobControl } from '../jobs/job-control.ts';
import { openDb } from '../db/db.ts';
import { migrations } from '../db/schema.ts';
import { VerifyTable } from '../db/verify-table.ts';
import { originalPlaces, restoredInto, restoreToOriginal } from './restore-original.ts';
import { VerifyHistory } from './verify-history.ts';

let s3: S3Server;
let engine: Engine;
let bucket: string;
const work = tempDir('cairn-original-');

beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  s3 = await startVersitygw();
  bucket = await s3.createBucket();
  engine = await Engine.init(path.join(work, 'home'), 'a passphrase for restores');
  await engine.addTarget(
    't',
    {
      kind: 's3',
      endpoint: s3.endpoint,
      bucket,
      region: 'us-east-1',
      accessKeyId: s3.accessKeyId,
      pathStyle: true,
      checksums: 'when-supported',
    },
    s3.secretAccessKey,
  );
});
afterAll(async () => {
  engine?.close();
  await s3?.stop();
});

describe('restore to the original location', () => {
  it('maps snapshot paths to the sources’ parent folders, and names a path from no source', () => {
    expect(originalPlaces(['/home/ada/docs', '/home/ada/pics', '/srv/www'], [])).toEqual([
      { parent: '/home/ada', paths: ['docs', 'pics'] },
      { parent: '/srv', paths: ['www'] },
    ]);
    expect(originalPlaces(['/home/ada/docs'], ['docs/a/b.txt', '/docs/c/'])).toEqual([
      { parent: '/home/ada', paths: ['docs/a/b.txt', 'docs/c'] },
    ]);
    // What "into" names: the deepest folder holding all that is restored there.
    expect(restoredInto({ parent: '/home/ada', paths: ['docs', 'pics'] })).toBe('/home/ada');
    expect(restoredInto({ parent: '/home/ada', paths: ['docs/a/b.txt', 'docs/c'] })).toBe('/home/ada/docs');
    expect(restoredInto({ parent: '/home/ada', paths: ['docs/a/b.txt'] })).toBe('/home/ada/docs/a');
    expect(restoredInto({ parent: '/home/ada', paths: ['docs/a/b.txt', 'docs/ab/c'] })).toBe(
      '/home/ada/docs',
    );
    expect(() => originalPlaces(['/home/ada/docs'], ['music/x'])).toThrow(
      '"music/x" is not in this backup: its paths start with a source\'s name (docs).',
    );
  });

  it('skip leaves a modified original untouched; overwrite makes it byte-identical to the snapshot', async () => {
    const docs = path.join(work, 'a', 'docs');
    const pics = path.join(work, 'b', 'pics');
    writeRandomFile(path.join(docs, 'letter.txt'), 5000);
    writeRandomFile(path.join(docs, 'sub', 'notes.txt'), 700);
    writeRandomFile(path.join(pics, 'cat.jpg'), 9000);
    const want = {
      letter: sha256File(path.join(docs, 'letter.txt')),
      notes: sha256File(path.join(docs, 'sub', 'notes.txt')),
      cat: sha256File(path.join(pics, 'cat.jpg')),
    };
    const { snapshotId } = await engine.backup([docs, pics], {});

    writeRandomFile(path.join(docs, 'letter.txt'), 5100); // changed since the backup
    fs.rmSync(path.join(docs, 'sub'), { recursive: true }); // lost
    fs.rmSync(pics, { recursive: true }); // lost, folder and all
    const changed = sha256File(path.join(docs, 'letter.txt'));

    const skip = await restoreToOriginal(engine, snapshotId, { paths: [], overwrite: false });
    expect(skip.places).toEqual([path.join(work, 'a'), path.join(work, 'b')]);
    expect(sha256File(path.join(docs, 'letter.txt'))).toBe(changed);
    expect(skip.failed).toEqual([
      {
        path: path.join(work, 'a', 'docs', 'letter.txt'),
        message: expect.stringMatching(/already exists: kept as it is$/),
        kept: true,
      },
    ]);
    expect(sha256File(path.join(docs, 'sub', 'notes.txt'))).toBe(want.notes);
    expect(sha256File(path.join(pics, 'cat.jpg'))).toBe(want.cat);
    expect(skip.restoredFiles).toBe(2);

    const over = await restoreToOriginal(engine, snapshotId, { paths: ['docs/letter.txt'], overwrite: true });
    expect(over.failed).toEqual([]);
    expect(over.restoredFiles).toBe(1);
    expect(over.places).toEqual([docs]); // where letter.txt is, not the source's parent
    expect(sha256File(path.join(docs, 'letter.txt'))).toBe(want.letter);
    expect(fs.readdirSync(docs).sort()).toEqual(['letter.txt', 'sub']); // no temporaries left
  });

  it('never writes through a link that replaced a source folder', async () => {
    const docs = path.join(work, 'c', 'docs');
    writeRandomFile(path.join(docs, 'x.txt'), 100);
    const { snapshotId } = await engine.backup([docs], {});
    const elsewhere = path.join(work, 'elsewhere');
    fs.mkdirSync(elsewhere);
    fs.rmSync(docs, { recursive: true });
    fs.symlinkSync(elsewhere, docs);
    const r = await restoreToOriginal(engine, snapshotId, { paths: [], overwrite: true });
    expect(r.restoredFiles).toBe(0);
    expect(r.failed[0]!.message).toMatch(/is a symbolic link; a restore never writes through links/);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
    expect(fs.lstatSync(docs).isSymbolicLink()).toBe(true);
  });
});

describe('verifications kept in the keystore', () => {
  it('records ok, then the damaged files with their reason, and keeps the newest per snapshot', async () => {
    const src = path.join(work, 'v');
    writeRandomFile(path.join(src, 'one.bin'), 2 << 20);
    writeRandomFile(path.join(src, 'two.bin'), 1000);
    const { snapshotId } = await engine.backup([src], {});
    const history = new VerifyHistory(engine);
    const ok = await history.run(snapshotId);
    expect(ok.problems).toEqual([]);
    expect(history.latest().find((v) => v.snapshotId === snapshotId)).toMatchObject({
      state: 'ok',
      blobs: 4, // two data blobs and two folder listings

      problems: [],
      finishedAt: expect.any(Number),
    });

    for (const { key } of await listKeys(s3, bucket, 'data/'))
      await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    const bad = await history.run(snapshotId);
    // The folder listings went with the packs: reported too, as "path/".
    expect(bad.problems.map((p) => p.path).sort()).toEqual(['/', 'v/', 'v/one.bin', 'v/two.bin']);
    const kept = history.latest().filter((v) => v.snapshotId === snapshotId);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ state: 'problems', blobs: 4 });
    expect(kept[0]!.problems.find((p) => p.path === 'v/one.bin')).toMatchObject({
      path: 'v/one.bin',
      target: 't',
      message: expect.any(String),
    });

    await expect(history.run('000000000000')).rejects.toThrow(/No snapshot with id 000000000000/);
  });

  it('a cancelled verification is kept as failed, never as ok', async () => {
    const src = path.join(work, 'w');
    writeRandomFile(path.join(src, 'big.bin'), 3 << 20);
    const { snapshotId } = await engine.backup([src], {});
    const control = new JobControl();
    control.cancel();
    await expect(new VerifyHistory(engine).run(snapshotId, {}, control)).rejects.toThrow(
      `The verification of ${snapshotId} was cancelled.`,
    );
    expect(new VerifyHistory(engine).latest().find((v) => v.snapshotId === snapshotId)).toMatchObject({
      state: 'failed',
      error: expect.stringMatching(/was cancelled/),
    });
  });

  it('a verification left running by a process that is gone reads as interrupted', () => {
    const table = new VerifyTable(engine.ks.db);
    const id = table.start('aaaaaaaaaaaa');
    engine.ks.db.prepare('UPDATE verifications SET pid = 2147483646 WHERE id = ?').run(id);
    expect(new VerifyHistory(engine).latest().find((v) => v.id === id)?.state).toBe('interrupted');
  });

  it('a keystore of the previous schema (plans, no verifications) upgrades and keeps its data', () => {
    const file = path.join(tempDir(), 'keystore.db');
    const old = new Database(file);
    for (const m of migrations.slice(0, 2)) old.exec(m);
    old.pragma('user_version = 3');
    old.exec(
      `INSERT INTO targets (id, name, config, created_at) VALUES (1, 't', '{"kind":"dir","path":"/x"}', 0)`,
    );
    old.close();
    const db = openDb(file, { create: false });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(migrations.length + 1);
      expect(db.prepare('SELECT name FROM targets').all()).toEqual([{ name: 't' }]);
      const t = new VerifyTable(db);
      const id = t.start('0123456789ab', 10);
      t.finish(id, { blobs: 3, bytes: 30, problems: [] }, 20);
      expect(t.latest()).toEqual([
        expect.objectContaining({ snapshotId: '0123456789ab', state: 'ok', startedAt: 10, finishedAt: 20 }),
      ]);
    } finally {
      db.close();
    }
  });
});
