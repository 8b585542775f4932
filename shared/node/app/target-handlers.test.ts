import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/fixtures.ts';
import { ApiCallError } from '../../api/contract.ts';
import { AppService } from './service.ts';

describe('folder targets in the app', () => {
  it('a relative folder is refused, naming it, never resolved against where the app runs', async () => {
    process.env.CAIRN_TEST_WEAK_KDF = '1';
    const app = new AppService('web', path.join(tempDir(), 'home'));
    try {
      await app.call('app.init', { passphrase: 'a passphrase for the target test' });
      const draft = { name: 'drive', config: { kind: 'dir' as const, path: 'backups/cairn' } };
      for (const call of [
        () => app.call('targets.test', { draft }),
        () => app.call('targets.save', { draft }),
      ]) {
        const err = await call().then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(ApiCallError);
        expect((err as ApiCallError).message).toBe(
          'The folder "backups/cairn" is not a full path: give one that starts with /.',
        );
        expect((err as ApiCallError).field).toBe('path');
      }
      expect(await app.call('targets.list', {})).toEqual([]);
      const full = tempDir(); // an existing folder
      expect(
        await app.call('targets.test', { draft: { ...draft, config: { kind: 'dir', path: full } } }),
      ).toEqual({
        ok: true,
      });
    } finally {
      app.close();
    }
  });
});
