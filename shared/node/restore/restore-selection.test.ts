import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256File, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { WrongPassphraseError } from '../crypto/keys.ts';
import { Engine, keystorePath } from '../engine/engine.ts';
import { selectWhileLocked, type RestoreSelection } from './restore-selection.ts';

const PASSPHRASE = 'a passphrase for early plans';
let home: string;
let src: string;
let snapshotId: string;
beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  home = path.join(tempDir(), 'home');
  const engine = await Engine.init(home, PASSPHRASE);
  await engine.addTarget('drive', { kind: 'dir', path: tempDir('cairn-drive-') });
  src = path.join(tempDir(), 'tree');
  for (let i = 0; i < 60; i++) writeRandomFile(path.join(src, `d${i % 3}`, `f${i}.bin`), 10 + i * 311);
  writeRandomFile(path.join(src, 'big.bin'), 5_000_000); // several blobs
  fs.writeFileSync(path.join(src, 'empty'), '');
  fs.symlinkSync('d0/f0.bin', path.join(src, 'link'));
  snapshotId = (await engine.backup([src], {}, {})).snapshotId;
  engine.close();
});
afterAll(() => delete process.env.CAIRN_TEST_WEAK_KDF);

/** Every non-folder entry under `root`, relative to it, sorted. */
function files(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }))
      if (e.isDirectory()) walk(path.join(d, e.name));
      else out.push(path.relative(root, path.join(d, e.name)));
  };
  walk(root);
  return out.sort();
}

async function restoreWith(paths: string[]): Promise<{ early: RestoreSelection | null; to: string }> {
  const { engine, early } = await Engine.unlockWhile(home, { passphrase: PASSPHRASE }, (ks) =>
    selectWhileLocked(ks, snapshotId, paths),
  );
  const to = tempDir('cairn-early-');
  try {
    const r = await engine.restore(snapshotId, { to, paths, selection: early });
    expect(r.failed).toEqual([]);
  } finally {
    engine.close();
  }
  return { early, to };
}

describe('a restore walked while the key is derived', () => {
  it('plans from the cached trees and index before unlock, and restores byte-identical from that plan', async () => {
    const { early, to } = await restoreWith([]);
    expect(early).not.toBeNull();
    expect(early!.plannedFiles).toBe(62);
    expect(early!.links.map((l) => l.path)).toEqual(['tree/link']);
    expect(
      early!.onlyBatch!.every((w) => w.locs!.length === w.content.length && w.locs!.every(Boolean)),
    ).toBe(true);
    expect(files(path.join(to, 'tree'))).toEqual(files(src));
    for (const rel of files(src))
      if (rel !== 'link')
        expect(sha256File(path.join(to, 'tree', rel))).toBe(sha256File(path.join(src, rel)));
    expect(fs.readlinkSync(path.join(to, 'tree', 'link'))).toBe('d0/f0.bin');
  });

  it('walks only the selected paths', async () => {
    const { early, to } = await restoreWith(['tree/d1']);
    expect(early!.plannedFiles).toBe(20);
    expect(files(to)).toEqual(files(path.join(src, 'd1')).map((f) => `tree/d1/${f}`));
  });

  it('takes paths as they were on disk (as find prints them) as well as in the snapshot', async () => {
    const { early, to } = await restoreWith([path.join(src, 'd1')]);
    expect(early!.plannedFiles).toBe(20);
    expect(files(to)).toEqual(files(path.join(src, 'd1')).map((f) => `tree/d1/${f}`));
  });

  it('a snapshot is named by its id or a unique prefix of 4 digits or more', async () => {
    const engine = await Engine.unlock(home, { passphrase: PASSPHRASE });
    try {
      expect(engine.resolveSnapshotId(snapshotId.slice(0, 4))).toBe(snapshotId);
      expect(engine.resolveSnapshotId(snapshotId)).toBe(snapshotId);
      expect(engine.resolveSnapshotId(snapshotId.slice(0, 3))).toBe(snapshotId.slice(0, 3));
      expect(() => engine.snapshot(engine.resolveSnapshotId('ffffffff'))).toThrow(
        /No snapshot with id ffffffff/,
      );
    } finally {
      engine.close();
    }
  });

  it('leaves a selection larger than one batch to the walk after unlock (its memory would add to Argon2id’s)', async () => {
    const { engine, early } = await Engine.unlockWhile(home, { passphrase: PASSPHRASE }, (ks) =>
      selectWhileLocked(ks, snapshotId, [], 50),
    );
    engine.close();
    expect(early).toBeNull();
  });

  it('a wrong passphrase fails as always, though the walk needed no key', async () => {
    let walked: RestoreSelection | null = null;
    const err = await Engine.unlockWhile(home, { passphrase: 'not the passphrase' }, async (ks) => {
      walked = await selectWhileLocked(ks, snapshotId, []);
      return walked;
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongPassphraseError);
    expect(walked).not.toBeNull();
  });
  it('gives up (null) when a tree is not in the local cache or a path selects nothing; the restore plans after unlock', async () => {
    expect((await restoreWith(['tree/nothing-here']).catch((e: Error) => e)) as Error).toMatchObject({
      message: expect.stringMatching(/No file or folder "tree\/nothing-here"/),
    });
    const db = new Database(keystorePath(home));
    db.prepare('DELETE FROM tree_cache').run();
    db.close();
    const { early, to } = await restoreWith([]);
    expect(early).toBeNull();
    expect(files(path.join(to, 'tree'))).toEqual(files(src));
  });
});
