import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { Engine } from '../engine/engine.ts';
import { JobControl } from '../jobs/job-control.ts';
import { runRestoreJob } from './restore-job.ts';

let engine: Engine;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  engine = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase for batches');
  await engine.addTarget('drive', { kind: 'dir', path: tempDir('cairn-drive-') });
});
afterAll(() => engine?.close());

describe('restore in batches', () => {
  it('reports files done / total while backing up; restores a tree larger than one batch byte-identical, keeping files already there out of the totals', async () => {
    const src = path.join(tempDir(), 'tree');
    for (let i = 0; i < 900; i++)
      writeRandomFile(path.join(src, `d${i % 3}`, `f${i}.bin`), 100 + ((i * 97) % 5000));
    writeRandomFile(path.join(src, 'big.bin'), 3_000_000);
    const counts: [number, number][] = [];
    const reading = new Set<string>();
    const { snapshotId } = await engine.backup(
      [src],
      {},
      {
        files: (d, t) => counts.push([d, t]),
        current: (p) => reading.add(p),
      },
    );
    // Every file read is named as the current file, by its path in the snapshot.
    expect(reading.size).toBe(901);
    expect(reading.has('tree/d2/f899.bin') && reading.has('tree/big.bin')).toBe(true);
    // Backups report files done / total: from none read yet to every file stored.
    expect(counts[0]).toEqual([0, 901]);
    expect(counts.at(-1)).toEqual([901, 901]);
    expect(counts.length).toBe(902);
    const to = tempDir('cairn-restore-');
    // One file already restored and identical: it is kept, and the progress totals leave it out.
    fs.mkdirSync(path.join(to, 'tree', 'd1'), { recursive: true });
    fs.copyFileSync(path.join(src, 'd1', 'f1.bin'), path.join(to, 'tree', 'd1', 'f1.bin'));
    let last = { bytesDone: 0, bytesTotal: -1 };
    const writing = new Set<string>();
    const r = await runRestoreJob(
      engine.repo,
      { snapshotId, to, paths: [], overwrite: false, settings: engine.settings(), batchFiles: 250 },
      {
        progress: (f) => (last = { bytesDone: f.bytesDone, bytesTotal: f.bytesTotal }),
        current: (p) => writing.add(p),
      },
    );
    expect(r.failed).toEqual([]);
    expect(r.alreadyPresent).toBe(1);
    expect(r.restoredFiles).toBe(900);
    expect(writing.size).toBe(900); // the file already there is not written
    const walk = (d: string): string[] =>
      fs
        .readdirSync(d, { withFileTypes: true })
        .flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
    const restored = walk(path.join(to, 'tree'))
      .map((p) => path.relative(path.join(to, 'tree'), p))
      .sort();
    expect(restored).toEqual(
      walk(src)
        .map((p) => path.relative(src, p))
        .sort(),
    );
    for (const rel of restored)
      expect(sha256File(path.join(to, 'tree', rel))).toBe(sha256File(path.join(src, rel)));
    expect(last.bytesTotal).toBe(r.restoredBytes);
    expect(last.bytesDone).toBe(r.restoredBytes);
  });

  it('a restore cancelled while files are being created ahead of their fetches leaves only complete files and no temporaries', async () => {
    const src = path.join(tempDir(), 'many');
    for (let i = 0; i < 2000; i++)
      writeRandomFile(path.join(src, `d${i % 40}`, `f${i}.bin`), 50 + ((i * 7919) % 60_000));
    const { snapshotId } = await engine.backup([src], {}, {});
    const to = tempDir('cairn-restore-cancel-');
    const control = new JobControl();
    const r = await runRestoreJob(
      engine.repo,
      { snapshotId, to, paths: [], overwrite: false, settings: engine.settings(), control },
      { files: (done) => done >= 100 && control.cancel() },
    );
    expect(r.restoredFiles).toBeGreaterThan(0);
    expect(r.restoredFiles).toBeLessThan(2000);
    expect(r.restoredFiles + r.failed.length).toBe(2000);
    expect(r.failed.every((f) => f.message === 'the restore was cancelled')).toBe(true);
    const left: string[] = [];
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true }))
        if (e.isDirectory()) walk(path.join(d, e.name));
        else left.push(path.join(d, e.name));
    };
    walk(to);
    expect(left.filter((p) => p.includes('.cairn-'))).toEqual([]);
    expect(left.length).toBe(r.restoredFiles);
    for (const p of left)
      expect(sha256File(p)).toBe(sha256File(path.join(src, path.relative(path.join(to, 'many'), p))));
  });
});
