import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { spooledBody, tempDir } from '../../../test/support/fixtures.ts';
import { createLocalDirStorage } from './local-dir.ts';
import type { StorageError } from './storage.ts';

describe('folder storage', () => {
  it('stores objects atomically and lists, ranges and deletes them', async () => {
    const root = tempDir();
    const st = createLocalDirStorage({ label: 'drive', root });
    await st.check();
    await st.put('chunks/ab/abc', Buffer.from('0123456789'));
    await st.put('manifests/x', Buffer.from('m'));
    expect((await st.get('chunks/ab/abc', { start: 2, end: 4 })).toString()).toBe('234');
    const into = Buffer.alloc(8);
    const ranged = await st.get('chunks/ab/abc', { start: 1, end: 6 }, into);
    expect([ranged.toString(), ranged.buffer === into.buffer]).toEqual(['123456', true]);
    expect(await st.head('chunks/ab/abc')).toEqual({ size: 10 });
    const keys: string[] = [];
    for await (const o of st.list('chunks/')) keys.push(o.key);
    expect(keys).toEqual(['chunks/ab/abc']);
    expect(fs.readdirSync(path.join(root, 'chunks/ab'))).toEqual(['abc']); // no temporary files left
    await st.delete('chunks/ab/abc');
    expect(await st.head('chunks/ab/abc')).toBeNull();
  });

  it('stores the first `length` bytes of a spooled body, and the same again', async () => {
    const root = tempDir();
    const st = createLocalDirStorage({ label: 'drive', root });
    const bytes = randomBytes((1 << 20) * 2 + 333); // more than one copy buffer
    const body = spooledBody(bytes);
    await st.put('data/aa/p1', body);
    await st.put('data/aa/p2', body);
    expect((await st.get('data/aa/p1')).equals(bytes)).toBe(true);
    expect((await st.get('data/aa/p2')).equals(bytes)).toBe(true);
  });

  it('refuses keys that escape the folder and reports a missing folder', async () => {
    const st = createLocalDirStorage({ label: 'drive', root: tempDir() });
    await expect(st.put('../evil', Buffer.from('x'))).rejects.toThrow(/invalid object key/);
    const gone = createLocalDirStorage({ label: 'gone', root: '/no/such/folder' });
    await expect(gone.check()).rejects.toSatisfy(
      (e: StorageError) => e.problem === 'no-bucket' && /Folder target "gone"/.test(e.message),
    );
    // An object of a folder that is itself gone: the folder is named as missing, not the object.
    await expect(gone.get('chunks/aa/b')).rejects.toSatisfy((e: StorageError) => e.problem === 'no-bucket');
    const here = createLocalDirStorage({ label: 'here', root: tempDir() });
    await expect(here.get('chunks/aa/b')).rejects.toSatisfy((e: StorageError) => e.problem === 'not-found');
  });
});
