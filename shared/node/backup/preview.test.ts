import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { ExcludePatternError } from './exclude.ts';
import { previewBackup } from './preview.ts';
import { SourceError } from './walk.ts';

function tree(): string {
  const src = path.join(tempDir('cairn-preview-'), 'app');
  const put = (rel: string, bytes: number) => {
    fs.mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
    fs.writeFileSync(path.join(src, rel), Buffer.alloc(bytes));
  };
  put('index.js', 100);
  put('lib/util.js', 200);
  put('lib/scratch.tmp', 7);
  put('node_modules/a/index.js', 1000);
  put('node_modules/a/node_modules/b/x.js', 2000);
  put('node_modules/c.js', 3000);
  put('packages/p/node_modules/d.js', 4000);
  return src;
}

describe('the preview of what a backup holds and leaves out', () => {
  it('counts the files kept and, for each folder left out, every file and byte below it', async () => {
    const src = tree();
    const p = await previewBackup([src], ['node_modules/', '*.tmp']);
    expect({ files: p.files, bytes: p.bytes, dirs: p.dirs }).toEqual({ files: 2, bytes: 300, dirs: 4 });
    expect(p.leftOut.count).toBe(3);
    expect(p.leftOut.files).toBe(5);
    expect(p.leftOut.bytes).toBe(7 + 1000 + 2000 + 3000 + 4000);
    expect(p.leftOut.entries.map((e) => [path.relative(src, e.path), e.kind, e.files, e.bytes])).toEqual([
      ['lib/scratch.tmp', 'file', 1, 7],
      ['node_modules', 'dir', 3, 6000],
      ['packages/p/node_modules', 'dir', 1, 4000],
    ]);
    expect(p.partial).toBe(false);
  });

  it('with no patterns leaves nothing out; past its budget it says its counts are partial', async () => {
    const src = tree();
    const all = await previewBackup([src], [], {
      suggest: ['node_modules/', '*.tmp', '.cache/'],
      entries: 1e6,
      ms: 10_000,
      shown: 5,
    });
    expect(all.files).toBe(7);
    expect(all.leftOut.count).toBe(0);
    // Offered patterns that would take something here: node_modules at three depths, one temp file.
    expect(all.suggestions).toEqual([
      { pattern: 'node_modules/', matches: 3 },
      { pattern: '*.tmp', matches: 1 },
    ]);
    const cut = await previewBackup([src], [], { entries: 3, ms: 10_000, shown: 5 });
    expect(cut.partial).toBe(true);
    expect(cut.files).toBeLessThan(7);
  });

  it('refuses what the backup would refuse, naming it', async () => {
    const src = tree();
    await expect(previewBackup([src], ['a[b'])).rejects.toThrow(ExcludePatternError);
    await expect(previewBackup([src], ['a[b'])).rejects.toThrow(/"a\[b"/);
    await expect(previewBackup([path.join(src, 'missing')], [])).rejects.toThrow(SourceError);
  });
});
