import { describe, expect, it } from 'vitest';
import type { EntryInfo } from '../engine/engine-types.ts';
import { entryLine, writeEntryLines } from './ls-command.ts';
import { table } from './output.ts';

const entry = (i: number): EntryInfo => ({
  path: `data/d${i % 1000}/f${i}.txt`,
  kind: 'file',
  size: 1300 + i,
  mode: 0o100644,
  mtimeMs: Date.UTC(2026, 10, 28),
  linkTarget: null,
});

describe('cairn ls of a snapshot with a million entries', () => {
  it('a table of 300,000 rows is laid out (measuring its columns overflowed the stack)', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => ['file', String(i)]);
    const text = table([['KIND', 'N'], ...rows]);
    expect(text.split('\n')).toHaveLength(300_001);
  });

  it('lines go out while the snapshot is still being read, and the writer waits when the reader is behind', async () => {
    let produced = 0;
    let producedAtFirstWrite = -1;
    async function* entries() {
      for (let i = 0; i < 200_000; i++) {
        produced++;
        yield entry(i);
      }
    }
    let out = '';
    let waits = 0;
    const n = await writeEntryLines(
      entries(),
      (text) => {
        if (producedAtFirstWrite < 0) producedAtFirstWrite = produced;
        out += text;
        return out.length % 3 !== 0;
      },
      async () => {
        waits++;
      },
    );
    expect(n).toBe(200_000);
    expect(producedAtFirstWrite).toBeGreaterThan(0);
    expect(producedAtFirstWrite).toBeLessThan(2_000);
    expect(waits).toBeGreaterThan(0);
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(200_001);
    expect(lines[0]).toMatch(/^KIND +MODE +SIZE +MODIFIED +PATH$/);
    expect(lines[1]).toBe(entryLine(entry(0)));
    expect(lines[1]).toBe(`file     0644  1.27 KiB    2026-11-28T00:00:00.000Z  data/d0/f0.txt`);
  });
});
