import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
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

  it.runIf(process.platform === 'linux')(
    'the passphrase is gone from /proc/<pid>/environ of the server and of every process it started',
    async () => {
      const home = path.join(tempDir(), 'home');
      const secret = 'an environ-scrubbed passphrase';
      const env = { CAIRN_HOME: home, CAIRN_PASSPHRASE: secret, CAIRN_TEST_WEAK_KDF: '1' };
      expect((await runCli(['init'], { env })).code).toBe(0);
      expect((await statusOfWebMode(env)).state).toBe('unlocked');
      const family = [proc!.pid!, ...descendants(proc!.pid!)];
      for (const pid of family)
        expect(fs.readFileSync(`/proc/${pid}/environ`, 'latin1'), `process ${pid}`).not.toContain(secret);
    },
  );
});

/** Every process started by `pid`, and by those, as /proc says now. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    const file = `/proc/${pid}/task/${tid}/children`;
    const kids = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean) : [];
    for (const k of kids.map(Number)) out.push(k, ...descendants(k));
  }
  return out;
}
