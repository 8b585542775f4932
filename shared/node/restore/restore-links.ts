import { DestinationError, type RestoreDestination } from '../pipeline/restore-dest.ts';
import type { Wanted } from './restore-selection.ts';

/** Errors of a file system that cannot link these two (or any) names: the file is written on its own. */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK', 'ENOSYS']);

/**
 * Hard links in a restore: files of the snapshot that were one file on disk (same device and inode,
 * more than one link, and the same content as the snapshot recorded it) are restored once, and the
 * others are made links to it at the end. Only what is restored counts: a link whose other names are
 * not selected is a file of its own. A name whose first name could not be restored, or that the
 * destination cannot link, is restored as a file of its own.
 */
export class RestoreLinks {
  private readonly leaders = new Map<string, { path: string; ok: boolean | null; same: string }>();
  private readonly followers: (Wanted & { link: string })[] = [];

  /** True when `w` is another name of a file already planned: it waits for `finish`. */
  defer(w: Wanted): boolean {
    if (!w.link) return false;
    const same = `${w.size}:${w.mtimeMs}:${w.content.join(',')}`;
    const leader = this.leaders.get(w.link);
    if (!leader) {
      this.leaders.set(w.link, { path: w.path, ok: null, same });
      return false;
    }
    // The names were read at different moments of the backup: if the file changed in between, each
    // name keeps the content it was backed up with.
    if (leader.same !== same) return false;
    this.followers.push(w as Wanted & { link: string });
    return true;
  }

  /** The names still waiting (a cancelled restore reports them). */
  pending(): Wanted[] {
    return this.followers.splice(0);
  }

  /** How the file at `path` ended: restored (or already there, identical), or not. */
  settled(path: string, link: string | undefined, ok: boolean): void {
    const leader = link ? this.leaders.get(link) : undefined;
    if (leader && leader.path === path) leader.ok = ok;
  }

  /**
   * Links every waiting name to its restored first name (`done` says 'linked', 'present' when an
   * identical file is there already, or why it failed); returns the names to restore as files of their
   * own: those whose first name was not restored, and those the destination could not link.
   */
  finish(
    dest: RestoreDestination,
    opts: { overwrite: boolean; present: (w: Wanted) => boolean },
    done: (w: Wanted, outcome: 'linked' | 'present' | { error: string }) => void,
  ): Wanted[] {
    const alone: Wanted[] = [];
    for (const w of this.followers.splice(0)) {
      const leader = this.leaders.get(w.link)!;
      const self = { ...w, link: undefined };
      if (!leader.ok) {
        alone.push(self);
        continue;
      }
      try {
        if (!opts.overwrite && dest.exists(w.path) === 'file' && opts.present(w)) done(w, 'present');
        else {
          dest.link(leader.path, w.path, { overwrite: opts.overwrite });
          done(w, 'linked');
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code && NO_LINK.has(code)) alone.push(self);
        else done(w, { error: err instanceof DestinationError ? err.message : (err as Error).message });
      }
    }
    return alone;
  }
}
