import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { Engine } from './engine.ts';

beforeAll(() => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
});
afterAll(() => delete process.env.CAIRN_TEST_WEAK_KDF);

const slotsIn = (dir: string) => fs.readdirSync(path.join(dir, 'keys')).sort();

describe('key slots across targets and machines', () => {
  it('a slot removed from one target is revoked, and deleted from the others, not copied back', async () => {
    const [t1, t2] = [tempDir('cairn-t1-'), tempDir('cairn-t2-')];
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, 'the first passphrase');
    await a.addTarget('one', { kind: 'dir', path: t1 });
    await a.addTarget('two', { kind: 'dir', path: t2 });
    const added = await a.keys.add({ passphrase: 'a second passphrase' });
    expect(slotsIn(t1)).toEqual(slotsIn(t2));
    expect(slotsIn(t1)).toContain(added.id);
    a.close();

    // Another machine that knew only target one removed the slot there.
    fs.rmSync(path.join(t1, 'keys', added.id));
    const again = await Engine.unlock(home, { passphrase: 'the first passphrase' });
    try {
      await again.refresh();
      expect(again.keys.list().map((k) => k.id)).not.toContain(added.id);
      expect(slotsIn(t2)).not.toContain(added.id);
      expect(slotsIn(t1)).toEqual(slotsIn(t2));
    } finally {
      again.close();
    }
    await expect(Engine.unlock(home, { passphrase: 'a second passphrase' })).rejects.toThrow(
      /Wrong passphrase/,
    );
  });

  it('a copy of the bucket made before a slot was added joins without revoking it: it gets the slot', async () => {
    const t1 = tempDir('cairn-t1-');
    const copy = path.join(tempDir(), 'copy');
    const home = path.join(tempDir(), 'home');
    const a = await Engine.init(home, 'the first passphrase');
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
    const a = await Engine.init(home, 'the first passphrase');
    await a.addTarget('one', { kind: 'dir', path: t });
    a.close();
    const b = await Engine.connect(other, 'one', { kind: 'dir', path: t }, undefined, {
      passphrase: 'the first passphrase',
    });
    await b.keys.add({ passphrase: 'added on machine B' });
    b.close();
    const again = await Engine.unlock(home, { passphrase: 'the first passphrase' });
    await again.refresh();
    again.close();
    (await Engine.unlock(home, { passphrase: 'added on machine B' })).close();
  });
});
