import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { Engine } from './engine.ts';
import { keySlotProblem } from '../crypto/keys.ts';

beforeAll(() => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
});
afterAll(() => delete process.env.CAIRN_TEST_WEAK_KDF);

const slotsIn = (dir: string) =>
  fs
    .readdirSync(path.join(dir, 'keys'))
    .filter((n) => !n.startsWith('.'))
    .sort();
const PASS = 'the first passphrase';

/** Two folder targets (a pool), a recovery key and one backup, on a fresh machine. */
async function twoTargetsWithBackup(): Promise<{
  t1: string;
  t2: string;
  home: string;
  recoveryKey: string;
}> {
  const [t1, t2] = [tempDir('cairn-t1-'), tempDir('cairn-t2-')];
  const home = path.join(tempDir(), 'home');
  const src = tempDir('cairn-src-');
  writeRandomFile(path.join(src, 'a.bin'), 100_000);
  const a = await Engine.init(home, PASS);
  try {
    await a.addTarget('one', { kind: 'dir', path: t1 });
    await a.addTarget('two', { kind: 'dir', path: t2 });
    const { recoveryKey } = await a.keys.createRecoveryKey();
    await a.backup([src], {});
    return { t1, t2, home, recoveryKey };
  } finally {
    a.close();
  }
}

describe('key slots across targets and machines', () => {
  it('a member that lost keys/ is behind, not an instruction: no slot is revoked, the member gets them back', async () => {
    const { t1, t2, home, recoveryKey } = await twoTargetsWithBackup();
    const before = slotsIn(t2);
    expect(before).toHaveLength(2);
    for (const f of slotsIn(t1)) fs.rmSync(path.join(t1, 'keys', f));

    const again = await Engine.unlock(home, { passphrase: PASS });
    try {
      await again.refresh();
      expect(again.keys.list()).toHaveLength(2);
      expect(again.listSnapshots()).toHaveLength(1);
    } finally {
      again.close();
    }
    expect(slotsIn(t2)).toEqual(before);
    expect(slotsIn(t1)).toEqual(before);
    (await Engine.unlock(home, { passphrase: PASS })).close();
    // A new machine opens the repository through either member, with either secret.
    for (const [dir, secret] of [
      [t2, { passphrase: PASS }],
      [t2, { recoveryKey }],
      [t1, { recoveryKey }],
    ] as const) {
      const other = await Engine.connect(
        path.join(tempDir(), 'other'),
        'one',
        { kind: 'dir', path: dir },
        undefined,
        secret,
      );
      expect(other.listSnapshots()).toHaveLength(1);
      other.close();
    }
  });

  it('the owner keeps its passphrase when the second member lost keys/', async () => {
    const { t1, t2, home } = await twoTargetsWithBackup();
    const before = slotsIn(t1);
    for (const f of slotsIn(t2)) fs.rmSync(path.join(t2, 'keys', f));
    for (let i = 0; i < 2; i++) {
      const e = await Engine.unlock(home, { passphrase: PASS });
      try {
        await e.refresh();
      } finally {
        e.close();
      }
    }
    expect(slotsIn(t2)).toEqual(before);
  });

  it('a slot removed with key rm is revoked everywhere through its revocation record, and never learnt again', async () => {
    const [t1, t2] = [tempDir('cairn-t1-'), tempDir('cairn-t2-')];
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    await a.addTarget('one', { kind: 'dir', path: t1 });
    await a.addTarget('two', { kind: 'dir', path: t2 });
    const added = await a.keys.add({ passphrase: 'a second passphrase' });
    a.close();
    // Machine B knew the slot.
    const other = path.join(tempDir(), 'other');
    const b = await Engine.connect(other, 'two', { kind: 'dir', path: t2 }, undefined, {
      passphrase: PASS,
    });
    expect(b.keys.list().map((k) => k.id)).toContain(added.id);
    b.close();

    const again = await Engine.unlock(home, { passphrase: PASS });
    const keyFile = fs.readFileSync(path.join(t1, 'keys', added.id));
    try {
      await again.keys.remove(added.id);
    } finally {
      again.close();
    }
    expect(slotsIn(t1)).not.toContain(added.id);
    expect(slotsIn(t2)).not.toContain(added.id);
    expect(fs.readdirSync(path.join(t1, 'revoked'))).toEqual([added.id]);
    // A stale copy of the slot turns up on one member (a bucket restored from an old copy).
    fs.writeFileSync(path.join(t1, 'keys', added.id), keyFile);
    const b2 = await Engine.unlock(other, { passphrase: PASS });
    try {
      await b2.refresh();
      expect(b2.keys.list().map((k) => k.id)).not.toContain(added.id);
    } finally {
      b2.close();
    }
    expect(slotsIn(t1)).not.toContain(added.id);
    await expect(Engine.unlock(other, { passphrase: 'a second passphrase' })).rejects.toThrow(
      /Wrong passphrase/,
    );
  });

  it('a session open since before another machine removed a slot cannot remove the last passphrase left', async () => {
    const [t1, t2] = [tempDir('cairn-t1-'), tempDir('cairn-t2-')];
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    await a.addTarget('one', { kind: 'dir', path: t1 });
    await a.addTarget('two', { kind: 'dir', path: t2 });
    const second = await a.keys.add({ passphrase: 'a second passphrase' });
    const first = a.keys.list().find((k) => k.current)!;
    // Machine B (web mode, say) is unlocked with the second passphrase and stays open.
    const b = await Engine.connect(
      path.join(tempDir(), 'other'),
      'two',
      { kind: 'dir', path: t2 },
      undefined,
      {
        passphrase: 'a second passphrase',
      },
    );
    try {
      await a.keys.remove(second.id); // A: B's slot goes; A's own is the last passphrase slot.
      expect(b.keys.list().map((k) => k.id)).toContain(second.id); // B has not read the buckets since
      await expect(b.keys.remove(first.id)).rejects.toThrow(/last passphrase slot/);
      expect(slotsIn(t1)).toEqual([first.id]);
      expect(slotsIn(t2)).toEqual([first.id]);
    } finally {
      b.close();
      a.close();
    }
    const again = await Engine.unlock(home, { passphrase: PASS });
    again.close();
  });

  it('a revocation record that does not authenticate revokes nothing', async () => {
    const { t1, t2, home } = await twoTargetsWithBackup();
    const victim = slotsIn(t1)[0]!;
    fs.mkdirSync(path.join(t2, 'revoked'), { recursive: true });
    fs.writeFileSync(path.join(t2, 'revoked', victim), Buffer.alloc(100, 7));
    const e = await Engine.unlock(home, { passphrase: PASS });
    try {
      await e.refresh();
      expect(e.keys.list().map((k) => k.id)).toContain(victim);
    } finally {
      e.close();
    }
    expect(slotsIn(t1)).toContain(victim);
    expect(slotsIn(t2)).toContain(victim);
  });

  it('a copy of the bucket made before a slot was added joins without revoking it: it gets the slot', async () => {
    const t1 = tempDir('cairn-t1-');
    const copy = path.join(tempDir(), 'copy');
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    try {
      await a.addTarget('one', { kind: 'dir', path: t1 });
      fs.cpSync(t1, copy, { recursive: true });
      const later = await a.keys.add({ passphrase: 'added after the copy' });
      await a.addTarget('copy', { kind: 'dir', path: copy });
      expect(slotsIn(copy)).toContain(later.id);
      expect(slotsIn(t1)).toContain(later.id);
      expect(a.keys.list().map((k) => k.id)).toContain(later.id);
    } finally {
      a.close();
    }
  });

  it('a slot added on another machine is learnt from the bucket', async () => {
    const t = tempDir('cairn-t-');
    const home = path.join(tempDir(), 'home');
    const other = path.join(tempDir(), 'other');
    const a = await Engine.init(home, PASS);
    await a.addTarget('one', { kind: 'dir', path: t });
    a.close();
    const b = await Engine.connect(other, 'one', { kind: 'dir', path: t }, undefined, {
      passphrase: PASS,
    });
    await b.keys.add({ passphrase: 'added on machine B' });
    b.close();
    const again = await Engine.unlock(home, { passphrase: PASS });
    await again.refresh();
    again.close();
    (await Engine.unlock(home, { passphrase: 'added on machine B' })).close();
  });

  it('slots planted in the bucket cannot stall or lock out: costs beyond the bounds, damaged and oversized slots are passed over', async () => {
    const t = tempDir('cairn-t-');
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    await a.addTarget('one', { kind: 'dir', path: t });
    a.close();
    const genuine = JSON.parse(fs.readFileSync(path.join(t, 'keys', slotsIn(t)[0]!), 'utf8'));
    const plant = (id: string, body: string | Buffer) => fs.writeFileSync(path.join(t, 'keys', id), body);
    // Inside the old bounds: 64 passes over 4 GiB (minutes and 4 GB of memory per try).
    plant(
      '00000000000000a1',
      JSON.stringify({
        ...genuine,
        id: '00000000000000a1',
        kdf: { ...genuine.kdf, opslimit: 64, memlimit: 4 * 2 ** 30 },
      }),
    );
    plant(
      '00000000000000a2',
      JSON.stringify({ ...genuine, id: '00000000000000a2', kdf: { ...genuine.kdf, opslimit: 4294967295 } }),
    );
    // 255 lanes would be 255 threads per try; a lane count that is not a number, memory not in whole KiB.
    for (const [id, kdf] of [
      ['00000000000000a5', { lanes: 255 }],
      ['00000000000000a6', { lanes: '4' }],
      ['00000000000000a7', { memlimit: 64 * 2 ** 20 + 1 }],
    ] as const) {
      const slot = { ...genuine, id, kdf: { ...genuine.kdf, ...kdf } };
      expect(keySlotProblem(slot)).toMatch(/lanes|memlimit/);
      plant(id, JSON.stringify(slot));
    }
    plant('00000000000000a3', '{ not json');
    plant('00000000000000a4', Buffer.alloc(1 << 20, 0x20));
    const started = Date.now();
    const again = await Engine.unlock(home, { passphrase: PASS });
    try {
      await again.refresh();
      expect(again.keys.list()).toHaveLength(1);
    } finally {
      again.close();
    }
    const other = await Engine.connect(
      path.join(tempDir(), 'other'),
      'one',
      { kind: 'dir', path: t },
      undefined,
      { passphrase: PASS },
    );
    expect(other.keys.list()).toHaveLength(1);
    other.close();
    expect(Date.now() - started).toBeLessThan(20_000);
    // Planted slots are damage, never removed by a reader.
    expect(slotsIn(t)).toHaveLength(8);
  });

  it('a slot this machine removed before revocation records existed stays removed here, and is deleted nowhere on its word', async () => {
    const t = tempDir('cairn-t-');
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, PASS);
    await a.addTarget('one', { kind: 'dir', path: t });
    const old = await a.keys.add({ passphrase: 'a leaked passphrase' });
    a.close();
    // As an older Cairn left it: the slot gone from the keystore, remembered as revoked, no record.
    const db = new Database(path.join(home, 'keystore.db'));
    db.prepare('DELETE FROM key_slots WHERE id = ?').run(old.id);
    db.prepare('INSERT INTO revoked_key_slots (id, revoked_at) VALUES (?, 1)').run(old.id);
    db.close();
    const again = await Engine.unlock(home, { passphrase: PASS });
    try {
      await again.refresh();
      expect(again.keys.list().map((k) => k.id)).not.toContain(old.id);
    } finally {
      again.close();
    }
    await expect(Engine.unlock(home, { passphrase: 'a leaked passphrase' })).rejects.toThrow(
      /Wrong passphrase/,
    );
    expect(slotsIn(t)).toContain(old.id);
    expect(fs.existsSync(path.join(t, 'revoked'))).toBe(false);
  });
});
