import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../test/support/cli.ts';
import { startEngineEnv, stopEngineEnv, type EngineEnv } from '../../../test/support/engine-env.ts';
import { describeTree, tempDir, writeRandomFile } from '../../../test/support/fixtures.ts';

const PASSPHRASE = 'a passphrase for damage marks';
let env: EngineEnv | undefined;
const home = path.join(tempDir('cairn-marks-'), 'home');
beforeAll(async () => {
  env = await startEngineEnv({ passphrase: PASSPHRASE, home });
});
afterAll(async () => {
  await stopEngineEnv(env);
});

describe('blobs marked damaged by another process (issue 29)', () => {
  it('a long-running engine (web mode) stores them again in its next backup, which restores', async () => {
    const { engine, s3 } = env!;
    const src = path.join(tempDir(), 'photos');
    for (let i = 0; i < 4; i++) writeRandomFile(path.join(src, `p${i}.jpg`), 1 << 20);
    await engine.backup([src], { settings: { chunkSize: 256 << 10 } });

    // Every pack of the bucket has a byte changed, then a check in another process (the CLI) marks it.
    const bucket = fs.readdirSync(s3.dataDir).find((b) => fs.existsSync(path.join(s3.dataDir, b, 'data')))!;
    const data = path.join(s3.dataDir, bucket, 'data');
    for (const f of fs.readdirSync(data, { recursive: true, encoding: 'utf8' })) {
      const file = path.join(data, f);
      if (!fs.statSync(file).isFile()) continue;
      const body = fs.readFileSync(file);
      body[Math.floor(body.length / 2)]! ^= 0x10;
      fs.writeFileSync(file, body);
    }
    const cli = { env: { CAIRN_HOME: home, CAIRN_PASSPHRASE: PASSPHRASE, CAIRN_TEST_WEAK_KDF: '1' } };
    const check = await runCli(['check', '--read-data'], cli);
    expect(check.code, check.stdout + check.stderr).not.toBe(0);

    const again = await engine.backup([src], { settings: { chunkSize: 256 << 10 } });
    const out = tempDir('cairn-marks-out-');
    const restored = await runCli(['restore', again.snapshotId, '--to', out], cli);
    expect(restored.code, restored.stderr).toBe(0);
    expect(describeTree(path.join(out, 'photos'))).toEqual(describeTree(src));
  });
});
