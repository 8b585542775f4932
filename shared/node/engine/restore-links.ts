import type { RestoreDestination } from './restore-dest.ts';
import type { Wanted } from './restore-selection.ts';

/**
 * Hard links in a restore: files of the snapshot that were one file on disk (same device and inode,
 * more than one link) are restored once, and the others are made links to it at the end. Only what is
 * restored counts: a link whose other names are not selected is a file of its own. A link whose first
 * name could not be restored is restored on its own.
 */
export class RestoreLinks {
  private readonly leaders = new Map<string, { path: string; ok: boolean | null }>();
  private readonly followers: (Wanted & { link: string })[] = [];

  /** True when `w` is another name of a file already planned: it waits for `finish`. */
  defer(w: Wanted): boolean {
    if (!w.link) return false;
    if (!this.leaders.has(w.link)) {
      this.leaders.set(w.link, { path: w.path, ok: null });
      return false;
    }
    this.followers.push(w as Wanted & { link: string });
    return true;
  }

  /** How the file at `path` ended: restored (or already there, identical), or not. */
  settled(path: string, link: string | undefined, ok: boolean): void {
    const leader = link ? this.leaders.get(link) : undefined;
    if (leader && leader.path === path) leader.ok = ok;
  }

  /**
   * Links every waiting name to its restored first name; returns the names whose first name was not
   * restored, to be restored as files of their own.
   */
  finish(
    dest: RestoreDestination,
    overwrite: boolean,
    done: (w: Wanted, error: string | null) => void,
  ): Wanted[] {
    const alone: Wanted[] = [];
    for (const w of this.followers.splice(0)) {
      const leader = this.leaders.get(w.link)!;
      if (!leader.ok) {
        alone.push({ ...w, link: undefined });
        continue;
      }
      try {
        dest.link(leader.path, w.path, { overwrite });
        done(w, null);
      } catch (err) {
        done(w, (err as Error).message);
      }
    }
    return alone;
  }
}
