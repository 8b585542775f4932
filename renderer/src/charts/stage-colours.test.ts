import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BACKUP_STAGES, RESTORE_STAGES } from '../../../shared/stats.ts';

describe('stage colours', () => {
  it('every stage a backup or a restore reports has a colour (the split bar and its legend)', () => {
    const css = fs.readFileSync(new URL('../styles.css', import.meta.url), 'utf8');
    const missing = [...new Set([...BACKUP_STAGES, ...RESTORE_STAGES])].filter(
      (s) => !new RegExp(`\\.stage-${s}\\s*\\{[^}]*background:`).test(css),
    );
    expect(missing).toEqual([]);
  });
});
