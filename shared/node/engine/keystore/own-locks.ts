import fs from 'node:fs';
import path from 'node:path';

/**
 * The lock objects processes of this machine wrote and have not deleted yet: a process notes a lock (a
 * small file `held-locks/<target id>.<lock id>` beside the keystore, holding its pid and start time)
 * before writing it to the bucket, and removes the note once the lock is deleted. A process killed with
 * -9 leaves its notes, and the next run here deletes those locks from the bucket at once: other machines
 * would otherwise wait for them to go stale. Files, not keystore rows: taking a lock changes nothing in
 * the keystore (a dry run leaves it byte for byte as it was).
 */
export class OwnLocks {
  private readonly dir: string;

  constructor(
    keystoreFile: string,
    private readonly self: { pid: number; started: string | null },
    private readonly running: (pid: number, started: string | null) => boolean,
  ) {
    this.dir = path.join(path.dirname(keystoreFile), 'held-locks');
  }

  wrote(targetId: number, lockId: string): void {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(this.dir, `${targetId}.${lockId}`), JSON.stringify(this.self), {
      mode: 0o600,
    });
  }

  dropped(targetId: number, lockId: string): void {
    fs.rmSync(path.join(this.dir, `${targetId}.${lockId}`), { force: true });
  }

  /** Locks on `targetId` that processes of this machine wrote and that are gone, leaving them behind. */
  leftByDeadProcesses(targetId: number): string[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: string[] = [];
    for (const n of names) {
      const m = /^(\d+)\.([0-9a-f]{16})$/.exec(n);
      if (!m || Number(m[1]) !== targetId) continue;
      let who: { pid?: unknown; started?: unknown };
      try {
        who = JSON.parse(fs.readFileSync(path.join(this.dir, n), 'utf8')) as typeof who;
      } catch {
        who = {}; // cut short by the kill: its process is gone
      }
      const pid = typeof who.pid === 'number' ? who.pid : 0;
      const started = typeof who.started === 'string' ? who.started : null;
      if (!pid || !this.running(pid, started)) out.push(m[2]!);
    }
    return out;
  }
}
