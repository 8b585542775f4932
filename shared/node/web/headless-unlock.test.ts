import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../../test/support/cli.ts';
import { tempDir } from '../../../test/support/fixtures.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
let proc: ChildProcess | null = null;
afterEach(() => void proc?.kill('SIGKILL'));

/** Starts web mode and answers its app.status over the authenticated API, with what it logged. */
async function statusOfWebMode(env: Record<string, string>): Promise<{ state: string; log: string }> {
  proc = spawn(process.execPath, [path.join(ROOT, 'bin', 'web.js')], {
    cwd: ROOT,
    env: { ...process.env, ...env, CAIRN_READY_FD: '3' },
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const ready = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    let out = '';
    (proc!.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(JSON.parse(out) as { url: string; token: string });
    });
    proc!.on('exit', (code) => reject(new Error(`web mode exited with ${code}: ${log}`)));
  });
  const res = await fetch(`${ready.url}/api/app.status`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${ready.token}`,
      'Content-Type': 'application/json',
      Origin: ready.url,
    },
    body: '{}',
  });
  return { state: ((await res.json()) as { result: { state: string } }).result.state, log };
}

describe('web mode started with CAIRN_PASSPHRASE', () => {
  it('unlocks at once, so plans can run with no browser; a wrong one leaves it locked and says why', async () => {
    const home = path.join(tempDir(), 'home');
    const env = { CAIRN_HOME: home, CAIRN_PASSPHRASE: 'a headless passphrase', CAIRN_TEST_WEAK_KDF: '1' };
    expect((await runCli(['init'], { env })).code).toBe(0);
    expect((await statusOfWebMode(env)).state).toBe('unlocked');
    proc!.kill('SIGKILL');
    const wrong = await statusOfWebMode({ ...env, CAIRN_PASSPHRASE: 'not the passphrase' });
    expect(wrong.state).toBe('locked');
    expect(wrong.log).toMatch(/CAIRN_PASSPHRASE did not unlock the keystore \(Wrong passphrase/);
  });
});
