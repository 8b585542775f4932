import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCallError, type Method } from '../../api/contract.ts';
import { callAs, jobFinished } from '../../../test/support/app-calls.ts';
import { tempDir } from '../../../test/support/fixtures.ts';
import { AppService } from '../app/service.ts';
import { entryPathIn } from './file-versions.ts';

let app: AppService;
const call = <M extends Method>(method: M, body: unknown) => callAs(app, method, body);
async function backUp(sources: string[]): Promise<string> {
  const job = await call('backup.start', { sources });
  const done = await jobFinished(app, job.id);
  expect(done.state, done.error ?? undefined).toBe('done');
  return done.backupId!;
}

beforeAll(async () => {
  process.env.CAIRN_TEST_WEAK_KDF = '1';
  app = new AppService('web', path.join(tempDir(), 'home'));
  await app.call('app.init', { passphrase: 'a passphrase for the service' });
  const store = path.join(tempDir(), 'store');
  fs.mkdirSync(store);
  await app.call('targets.save', { draft: { name: 'disk', config: { kind: 'dir', path: store } } });
});
afterAll(() => app?.close());

describe('a file’s versions across backups (Browse → Versions)', () => {
  it('finds each content once, with the backups holding it, through any source that held the file', async () => {
    const home = tempDir();
    const docs = path.join(home, 'docs');
    const file = path.join(docs, 'report.txt');
    fs.mkdirSync(docs);
    fs.writeFileSync(file, 'first draft');
    fs.writeFileSync(path.join(docs, 'other.txt'), 'unrelated');
    const first = await backUp([docs]);
    fs.writeFileSync(file, 'second draft, longer');
    const second = await backUp([docs]);
    const third = await backUp([docs]); // unchanged: the same version
    const parent = await backUp([home]); // the same file, reached through its parent folder
    fs.rmSync(file);
    const gone = await backUp([docs]);
    fs.writeFileSync(file, 'first draft'); // back to the first content
    const back = await backUp([docs]);

    const v = await call('backups.versions', { backupId: second, path: 'docs/report.txt' });
    expect(v.path).toBe(file);
    expect(v.versions.map((x) => [x.size, x.foundIn.map((f) => f.snapshotId)])).toEqual([
      [11, [back, first]],
      [20, [parent, third, second]],
    ]);
    expect(v.versions[1]!.foundIn[0]!.path).toBe(`${path.basename(home)}/docs/report.txt`);
    expect(v.snapshotsHolding).toBe(5);
    expect(v.snapshotsLacking).toBe(1); // `gone` backed up the folder without it
    expect(gone).toBeTruthy();

    const wrong = await call('backups.versions', { backupId: second, path: 'elsewhere/x.txt' }).catch(
      (e) => e,
    );
    expect(wrong).toBeInstanceOf(ApiCallError);
    expect(wrong).toMatchObject({
      field: 'path',
      message: expect.stringMatching(/"elsewhere\/x.txt" is not in this backup/),
    });
  });

  it('maps an original path to each snapshot’s entry path, and only under a source', () => {
    expect(entryPathIn(['/home/me/docs'], '/home/me/docs/a/b.txt')).toBe('docs/a/b.txt');
    expect(entryPathIn(['/home/me'], '/home/me/docs/a/b.txt')).toBe('me/docs/a/b.txt');
    expect(entryPathIn(['/home/me/docs/'], '/home/me/docs')).toBe('docs');
    expect(entryPathIn(['/home/me/doc'], '/home/me/docs/a.txt')).toBeNull();
  });
});
