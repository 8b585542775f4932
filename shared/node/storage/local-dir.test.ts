import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
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

  it('refuses keys that escape the folder and reports a missing folder', async () => {
    const st = createLocalDirStorage({ label: 'drive', root: tempDir() });
    await expect(st.put('../evil', Buffer.from('x'))).rejects.toThrow(/invalid object key/);
    const gone = createLocalDirStorage({ label: 'gone', root: '/no/such/folder' });
    await expect(gone.check()).rejects.toSatisfy(
      (e: StorageError) => e.problem === 'no-bucket' && /Folder target "gone"/.test(e.message),
    );
    await expect(gone.get('chunks/aa/b')).rejects.toSatisfy((e: StorageError) => e.problem === 'not-found');
  });
});
