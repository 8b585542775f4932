import fs from 'node:fs';
import os from 'node:os';
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
    const file = path.join(this.dir, `${targetId}.${lockId}`);
    // Whole or not at all: another process must never read a note half-written and take it for dead.
    const temp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, JSON.stringify({ ...this.self, host: os.hostname(), boot: bootId() }), {
      mode: 0o600,
    });
    fs.renameSync(temp, file);
  }

  dropped(targetId: number, lockId: string): void {
    fs.rmSync(path.join(this.dir, `${targetId}.${lockId}`), { force: true });
  }

  /**
   * Locks on `targetId` that processes of this machine wrote and that are gone, leaving them behind.
   * A note of another host (a data folder shared over the network) is not this machine's to judge; one
   * of an earlier boot of this machine is of a process that is gone.
   */
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
      let who: { pid?: unknown; started?: unknown; host?: unknown; boot?: unknown };
      try {
        who = JSON.parse(fs.readFileSync(path.join(this.dir, n), 'utf8')) as typeof who;
      } catch {
        continue; // unreadable: left alone (the lock still goes stale for the others)
      }
      if (who.host !== undefined && who.host !== os.hostname()) continue;
      const pid = typeof who.pid === 'number' ? who.pid : 0;
      const started = typeof who.started === 'string' ? who.started : null;
      const earlierBoot = typeof who.boot === 'string' && bootId() !== null && who.boot !== bootId();
      if (!pid || earlierBoot || !this.running(pid, started)) out.push(m[2]!);
    }
    return out;
  }
}

let boot: string | null | undefined;
/** This boot of the machine (Linux), so a note of an earlier boot is known to be of a process gone. */
function bootId(): string | null {
  if (boot === undefined) {
    try {
      boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      boot = null;
    }
  }
  return boot;
}
