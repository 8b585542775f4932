import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import type { Engine } from '../engine/engine.ts';
import { SnapshotBrowser } from './snapshot-browse.ts';
import { searchSnapshots } from './snapshot-search.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';

let engine: Engine;
let env: EngineEnv | undefined;
const work = tempDir('cairn-browse-');
const docs = path.join(work, 'docs');

beforeAll(async () => {
  env = await startEngineEnv({
    passphrase: 'a passphrase for browsing',
    target: 't',
    home: path.join(work, 'home'),
  });
  ({ engine } = env);
});
afterAll(async () => {
  await stopEngineEnv(env);
});

const snapshots = () => engine.listSnapshots().map((s) => ({ doc: s, target: s.target }));

/** What a search of one snapshot finds, as paths under its source. */
function namesFound(snapshotId: string, src: string): (q: string) => Promise<string[]> {
  const one = engine.listSnapshots().find((x) => x.id === snapshotId)!;
  return async (q) =>
    (await searchSnapshots(engine.repo, [{ doc: one, target: one.target }], q, 100)).files.map((f) =>
      path.relative(src, f.path),
    );
}

describe('browsing a backup', () => {
  it('pages one folder: folders first, names in natural order, sizes, counts of local subfolders', async () => {
    const src = path.join(work, 'many');
    for (let i = 0; i < 450; i++) writeRandomFile(path.join(src, `file${i}.bin`), 10 + i);
    for (const d of ['b-dir', 'a-dir', 'C-dir']) writeRandomFile(path.join(src, d, 'x.bin'), 5);
    writeRandomFile(path.join(src, 'a-dir', 'y.bin'), 5);
    fs.symlinkSync('file1.bin', path.join(src, 'link'));
    const { snapshotId } = await engine.backup([src], {});
    const root = engine.snapshot(snapshotId).tree;
    const browser = new SnapshotBrowser(engine.repo);

    const top = await browser.page(root, '', 0, 200);
    expect(top).toMatchObject({ dir: '', total: 1, folders: 1, files: 0 });
    expect(top.entries[0]).toMatchObject({ name: 'many', path: 'many', kind: 'dir', items: 454 });

    const first = await browser.page(root, 'many/', 0, 200);
    expect(first).toMatchObject({ dir: 'many', total: 454, folders: 3, files: 451 });
    expect(first.entries.map((e) => e.name).slice(0, 6)).toEqual([
      'a-dir',
      'b-dir',
      'C-dir',
      'file0.bin',
      'file1.bin',
      'file2.bin',
    ]);
    expect(first.entries[0]).toMatchObject({ path: 'many/a-dir', items: 2 });
    expect(first.entries[3]).toMatchObject({ kind: 'file', size: 10, items: null });
    expect(first.bytes).toBe(Array.from({ length: 450 }, (_, i) => 10 + i).reduce((a, b) => a + b));
    const last = await browser.page(root, 'many', 400, 200);
    expect(last.entries.length).toBe(54);
    expect(last.entries.at(-1)).toMatchObject({ name: 'link', kind: 'symlink', linkTarget: 'file1.bin' });
    // Natural order: file10 after file9, not after file1.
    const names = [...first.entries, ...(await browser.page(root, 'many', 200, 200)).entries].map(
      (e) => e.name,
    );
    expect(names.indexOf('file10.bin')).toBe(names.indexOf('file9.bin') + 1);

    await expect(browser.page(root, 'many/nope/deeper', 0, 10)).rejects.toThrow(
      'No folder "many/nope" in this backup.',
    );
    await expect(browser.page(root, 'many/file1.bin', 0, 10)).rejects.toThrow(/No folder "many\/file1.bin"/);
    await expect(browser.page(root, 'many/../x', 0, 10)).rejects.toThrow(/no "\." or "\.\."/);
  });
});

describe('searching across backups', () => {
  it('finds every version of a file across three backups, grouping equal content, and restores the older one', async () => {
    writeRandomFile(path.join(docs, 'report.docx'), 3000);
    writeRandomFile(path.join(docs, '2024', 'q1', 'invoice-1.pdf'), 100);
    writeRandomFile(path.join(docs, '2024', 'q2', 'invoice-2.pdf'), 100);
    writeRandomFile(path.join(docs, '2023', 'invoice-0.pdf'), 100);
    for (let i = 0; i < 30; i++) writeRandomFile(path.join(docs, 'archive', `d${i}`, `n${i}.txt`), 10);
    const older = sha256File(path.join(docs, 'report.docx'));
    const b1 = await engine.backup([docs], {});
    writeRandomFile(path.join(docs, 'report.docx'), 4000);
    const newer = sha256File(path.join(docs, 'report.docx'));
    const b2 = await engine.backup([docs], {});
    const b3 = await engine.backup([docs], {}); // nothing changed

    const r = await searchSnapshots(engine.repo, snapshots(), 'report.docx', 100);
    expect(r.truncated).toBe(false);
    expect(r.files.map((f) => f.path)).toEqual([path.join(docs, 'report.docx')]);
    const [v2, v1] = r.files[0]!.versions;
    expect(v2!.size).toBe(4000);
    expect(v2!.foundIn.map((x) => x.snapshotId)).toEqual([b3.snapshotId, b2.snapshotId]);
    expect(v1!.size).toBe(3000);
    expect(v1!.foundIn).toEqual([
      expect.objectContaining({ snapshotId: b1.snapshotId, path: 'docs/report.docx', target: 't' }),
    ]);
    expect(v1!.content).not.toBe(v2!.content);
    // Each docs snapshot has 37 trees: root, docs, 2024 (+ q1, q2), 2023, archive (+ 30). The second
    // backup changed only root and docs; the third none: their other folders were not walked again.
    // (The snapshot of the first test adds its 5: root, many, and its three folders.)
    expect(r.treesRead).toBe(37 + 2 + 0 + 5);
    const dest = tempDir();
    const back = await engine.restore(v1!.foundIn[0]!.snapshotId, {
      to: dest,
      paths: [v1!.foundIn[0]!.path],
    });
    expect(back.failed).toEqual([]);
    expect(sha256File(path.join(dest, 'docs', 'report.docx'))).toBe(older);
    expect(older).not.toBe(newer);
  });

  it('globs: names, paths with "**", anchored; more matches than the limit are reported as such', async () => {
    const names = async (q: string) =>
      (await searchSnapshots(engine.repo, snapshots(), q, 100)).files.map((f) => path.relative(work, f.path));
    expect(await names('*.pdf')).toEqual([
      'docs/2023/invoice-0.pdf',
      'docs/2024/q1/invoice-1.pdf',
      'docs/2024/q2/invoice-2.pdf',
    ]);
    expect(await names('2024/**/invoice*')).toEqual([
      'docs/2024/q1/invoice-1.pdf',
      'docs/2024/q2/invoice-2.pdf',
    ]);
    expect(await names('/docs/2023/*')).toEqual(['docs/2023/invoice-0.pdf']);
    expect(await names('/many/2023/*')).toEqual([]);

    const capped = await searchSnapshots(engine.repo, snapshots(), 'n*.txt', 10);
    expect(capped.truncated).toBe(true);
    expect(capped.versions).toBe(10);
    await expect(searchSnapshots(engine.repo, snapshots(), 'a**', 10)).rejects.toThrow(/whole path segment/);
  });

  it('plain text passes over folders whose trees cannot hold it, and still finds names their JSON escapes', async () => {
    const src = path.join(work, 'leaves');
    for (let d = 0; d < 5; d++)
      for (let i = 0; i < 20; i++) writeRandomFile(path.join(src, `d${d}`, `plain-${i}.txt`), 10);
    writeRandomFile(path.join(src, 'd3', 'say "quoted".txt'), 10);
    writeRandomFile(path.join(src, 'd2', 'Deep', 'PLAIN-match.txt'), 10);
    const { snapshotId } = await engine.backup([src], {});
    const names = namesFound(snapshotId, src);
    expect(await names('y "q')).toEqual(['d3/say "quoted".txt']);
    expect(await names('plain-m')).toEqual(['d2/Deep/PLAIN-match.txt']);
    expect(await names('plain-19')).toEqual([
      'd0/plain-19.txt',
      'd1/plain-19.txt',
      'd2/plain-19.txt',
      'd3/plain-19.txt',
      'd4/plain-19.txt',
    ]);
    expect(await names('nowhere')).toEqual([]);
  });

  it('plain text matches names without regard to case, also where a fold leaves ASCII (ſ, the Kelvin sign)', async () => {
    const src = path.join(work, 'folds');
    const files = [
      'd5/ſtar-log.txt',
      'd6/\u212Aey-ring.txt',
      'd7/Café-menu.txt',
      'd8/README.md',
      'd8/other.md',
    ];
    for (const f of files) writeRandomFile(path.join(src, f), 10);
    const { snapshotId } = await engine.backup([src], {});
    const names = namesFound(snapshotId, src);
    expect(await names('STAR-LOG')).toEqual(['d5/ſtar-log.txt']);
    expect(await names('key-r')).toEqual(['d6/\u212Aey-ring.txt']);
    expect(await names('CAFÉ')).toEqual(['d7/Café-menu.txt']);
    expect(await names('fé-M')).toEqual(['d7/Café-menu.txt']);
    expect(await names('readme.')).toEqual(['d8/README.md']);
    expect(await names('-MENU.T')).toEqual(['d7/Café-menu.txt']);
    expect(await names('E-MENU')).toEqual([]);
    expect(await names('ring.txt2')).toEqual([]);
  });
});
