import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';
import { Engine } from '../engine/engine.ts';
import { restoreToOriginal } from '../engine/restore-original.ts';

beforeAll(() => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
});
afterAll(() => delete process.env.CAIRN_TEST_WEAK_KDF);

async function engineWithFolder(): Promise<Engine> {
  const e = await Engine.init(path.join(tempDir(), 'home'), 'a passphrase here');
  await e.addTarget('d', { kind: 'dir', path: tempDir('cairn-names-t-') });
  return e;
}

/** Names as the file system holds them (bytes), with the content of each file. */
function listBytes(dir: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: Buffer, rel: string) => {
    for (const n of fs.readdirSync(d, { encoding: 'buffer' })) {
      const full = Buffer.concat([d, Buffer.from('/'), n]);
      const key = `${rel}/${n.toString('hex')}`;
      const st = fs.lstatSync(full);
      if (st.isDirectory()) {
        out.set(key, 'dir');
        walk(full, key);
      } else if (st.isSymbolicLink())
        out.set(key, `link:${fs.readlinkSync(full, { encoding: 'buffer' }).toString('hex')}`);
      else out.set(key, fs.readFileSync(full).toString('hex'));
    }
  };
  walk(dir, '');
  return out;
}

describe('names the file system allows, restored as they were', () => {
  it('names of 240 to 255 bytes restore, into a new folder and to their original place', async () => {
    const src = path.join(tempDir(), 'long');
    fs.mkdirSync(src);
    const names = [
      'a'.repeat(255),
      'b'.repeat(242),
      'é'.repeat(127), // 254 bytes of two-byte characters
      `${'z'.repeat(200)}.${'x'.repeat(54)}`,
    ];
    for (const [i, n] of names.entries()) fs.writeFileSync(path.join(src, n), `content ${i}`);
    fs.mkdirSync(path.join(src, 'd'.repeat(255)));
    fs.writeFileSync(path.join(src, 'd'.repeat(255), 'c'.repeat(250)), 'deep');
    const e = await engineWithFolder();
    try {
      const { snapshotId } = await e.backup([src], {});
      const to = tempDir('cairn-names-to-');
      const r = await e.restore(snapshotId, { to });
      expect(r.failed).toEqual([]);
      expect(listBytes(Buffer.from(path.join(to, 'long')))).toEqual(listBytes(Buffer.from(src)));
      fs.rmSync(src, { recursive: true });
      const back = await restoreToOriginal(e, snapshotId, { paths: [], overwrite: false });
      expect(back.failed).toEqual([]);
      expect(listBytes(Buffer.from(src))).toEqual(listBytes(Buffer.from(path.join(to, 'long'))));
    } finally {
      e.close();
    }
  });

  it.runIf(process.platform === 'linux')(
    'a name that is not UTF-8 backs up and restores byte for byte; the others around it too',
    async () => {
      const src = Buffer.from(path.join(tempDir(), 'bytes'));
      const name = (s: string) => Buffer.concat([src, Buffer.from('/'), Buffer.from(s, 'latin1')]);
      fs.mkdirSync(src);
      fs.writeFileSync(name('bad\xff\xfeutf8'), 'one');
      fs.writeFileSync(name('bad\xfdutf8'), 'two'); // another invalid name with the same shape
      fs.writeFileSync(name('good'), 'three');
      fs.mkdirSync(name('dir\xe9'));
      fs.writeFileSync(Buffer.concat([name('dir\xe9'), Buffer.from('/in\x80side')]), 'four');
      fs.symlinkSync(Buffer.from('target\xff', 'latin1'), name('link\xfe'));
      const e = await engineWithFolder();
      try {
        const { snapshotId } = await e.backup([src.toString()], {});
        const to = tempDir('cairn-bytes-to-');
        const r = await e.restore(snapshotId, { to });
        expect(r.failed).toEqual([]);
        expect(listBytes(Buffer.from(path.join(to, 'bytes')))).toEqual(listBytes(src));
        // Unchanged: the next backup reads nothing again.
        const again = await e.backup([src.toString()], {});
        expect(again.files).toEqual({ new: 0, changed: 0, unchanged: 4 });
      } finally {
        e.close();
      }
    },
  );

  it('a sparse file restores sparse: its holes are not written', async () => {
    const src = path.join(tempDir(), 'sparse');
    fs.mkdirSync(src);
    const file = path.join(src, 'disk.img');
    const fd = fs.openSync(file, 'w');
    fs.writeSync(fd, Buffer.alloc(4096, 7), 0, 4096, 0);
    fs.writeSync(fd, Buffer.alloc(4096, 9), 0, 4096, 200 << 20);
    fs.ftruncateSync(fd, 256 << 20);
    fs.closeSync(fd);
    const e = await engineWithFolder();
    try {
      const { snapshotId } = await e.backup([src], {});
      const to = tempDir('cairn-sparse-to-');
      const r = await e.restore(snapshotId, { to });
      expect(r.failed).toEqual([]);
      const back = path.join(to, 'sparse', 'disk.img');
      const st = fs.statSync(back);
      expect(st.size).toBe(256 << 20);
      expect(st.blocks * 512).toBeLessThan(32 << 20); // 256 MiB written would be 256 MiB of blocks
      const bytes = fs.readFileSync(back);
      expect(bytes.equals(fs.readFileSync(file))).toBe(true);
    } finally {
      e.close();
    }
  });

  it('hard links restore as hard links (within what is restored), their content once', async () => {
    const src = path.join(tempDir(), 'linked');
    fs.mkdirSync(path.join(src, 'sub'), { recursive: true });
    writeRandomFile(path.join(src, 'a.bin'), 300_000);
    fs.linkSync(path.join(src, 'a.bin'), path.join(src, 'b.bin'));
    fs.linkSync(path.join(src, 'a.bin'), path.join(src, 'sub', 'c.bin'));
    writeRandomFile(path.join(src, 'alone.bin'), 1000);
    const e = await engineWithFolder();
    try {
      const { snapshotId } = await e.backup([src], {});
      const to = tempDir('cairn-links-to-');
      const r = await e.restore(snapshotId, { to });
      expect(r.failed).toEqual([]);
      const at = (p: string) => fs.statSync(path.join(to, 'linked', p));
      expect(at('a.bin').nlink).toBe(3);
      expect(at('b.bin').ino).toBe(at('a.bin').ino);
      expect(at('sub/c.bin').ino).toBe(at('a.bin').ino);
      expect(at('alone.bin').nlink).toBe(1);
      expect(
        fs
          .readFileSync(path.join(to, 'linked', 'sub', 'c.bin'))
          .equals(fs.readFileSync(path.join(src, 'a.bin'))),
      ).toBe(true);
      // Restored again over itself: every name is there already, identical; nothing fails.
      const again = await e.restore(snapshotId, { to });
      expect(again.failed).toEqual([]);
      expect(again.alreadyPresent).toBe(4);
      // Only part of a link group selected: it restores as a file of its own.
      const part = tempDir('cairn-links-part-');
      const p = await e.restore(snapshotId, { to: part, paths: ['linked/sub'] });
      expect(p.failed).toEqual([]);
      expect(fs.statSync(path.join(part, 'linked', 'sub', 'c.bin')).nlink).toBe(1);
    } finally {
      e.close();
    }
  });

  it.runIf(process.platform === 'linux' && process.getuid?.() === 0)(
    'a full disk is named as such, with the file it stopped; nothing half-written is left',
    async () => {
      const src = path.join(tempDir(), 'big');
      writeRandomFile(path.join(src, 'small.bin'), 10_000);
      writeRandomFile(path.join(src, 'large.bin'), 3 << 20);
      const e = await engineWithFolder();
      const to = tempDir('cairn-full-');
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', to]);
      try {
        const { snapshotId } = await e.backup([src], { settings: { chunkSize: 1 << 20 } });
        const r = await e.restore(snapshotId, { to });
        expect(r.failed.map((f) => f.path)).toContain('big/large.bin');
        for (const f of r.failed) {
          expect(f.message).toMatch(/\.bin: the disk is full \(ENOSPC\)$/);
          expect(f.message).not.toMatch(/from target/);
        }
        // What is there is whole; nothing half-written (no temporary) is left.
        const left = fs.existsSync(path.join(to, 'big')) ? fs.readdirSync(path.join(to, 'big')) : [];
        for (const n of left) {
          expect(n).toMatch(/^(small|large)\.bin$/);
          expect(fs.readFileSync(path.join(to, 'big', n)).equals(fs.readFileSync(path.join(src, n)))).toBe(
            true,
          );
        }
        expect(left).not.toContain('large.bin');
      } finally {
        e.close();
        execFileSync('umount', [to]);
      }
    },
  );
});
