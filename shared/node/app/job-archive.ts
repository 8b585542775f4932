import { POOL_JOB_TARGET, type JobView } from '../../api/views.ts';
import type { JobState } from '../../job-state.ts';
import type { Engine } from '../engine/engine.ts';
import type { LocalView } from '../engine/local-view.ts';
import { titleFor } from './backup-view.ts';
import type { LiveJobs } from './live-jobs.ts';

/** Keystore setting: the cards of ended jobs, newest first, until dismissed. */
const KEY = 'endedJobs';
/** Cards kept; the oldest go first. */
const KEEP = 40;
const ENDED: readonly JobState[] = ['done', 'problems', 'failed', 'cancelled'];
const STOPPED: readonly JobState[] = ['cancelled', 'interrupted', 'failed'];

/**
 * Ended jobs' cards survive a restart until they are dismissed: a failed plan run at night is still
 * there in the morning. Each card is stored as the app last showed it (no statistics: charts are kept
 * for the jobs run since Cairn started). Stopped backups the keystore can resume are listed from their
 * job records (AppService.loadInterrupted), which take precedence over a stored card.
 */
export class JobArchive {
  private ids: Set<string> | null = null;

  constructor(private readonly local: () => LocalView | null) {}

  /** Follows the list: a card that ends is stored, one dismissed or running again is let go. */
  attach(jobs: LiveJobs): void {
    jobs.events.on('job', (v: JobView & { discarded?: boolean }) => {
      const local = this.local();
      if (!local) return;
      // A stopped backup the keystore recorded is the keystore's to list (stoppedBackups): resumed or
      // discarded elsewhere (the CLI), a stored card of it would be stale.
      const recorded = v.kind === 'backup' && v.backupId !== '' && STOPPED.includes(v.state);
      const ended = !v.discarded && !recorded && ENDED.includes(v.state);
      try {
        // Progress frames of running jobs come many times a second: only ended or dropped cards cost a write.
        if (!ended && !this.known(local).has(v.id)) return;
        const kept = this.read(local).filter((x) => x.id !== v.id);
        if (ended) kept.unshift(stored(v));
        this.write(local, kept.slice(0, KEEP));
      } catch {
        // The keystore closed under a run ending during shutdown: that card is not kept, the job is unharmed.
      }
    });
  }

  /** Lists the stored cards again after an unlock (not those already listed). */
  restore(jobs: LiveJobs): void {
    const local = this.local();
    if (!local) return;
    for (const v of this.read(local).reverse()) if (!jobs.has(v.id)) jobs.add(v);
  }

  private known(local: LocalView): Set<string> {
    this.ids ??= new Set(this.read(local).map((v) => v.id));
    return this.ids;
  }

  private read(local: LocalView): JobView[] {
    const list = local.getSetting<JobView[]>(KEY);
    return Array.isArray(list) ? list.filter((v) => v && typeof v.id === 'string') : [];
  }

  private write(local: LocalView, list: JobView[]): void {
    local.setSetting(KEY, list);
    this.ids = new Set(list.map((v) => v.id));
  }
}

/** The card as it ended: nothing moving, no live-only fields. */
function stored(v: JobView & { discarded?: boolean }): JobView {
  const { discarded: _d, ...rest } = v;
  return { ...rest, mbps: 0, etaSeconds: null };
}

/** The cards of backups a previous run left unfinished (interrupted) or the user cancelled: resumable. */
export function stoppedBackups(e: Engine): Parameters<LiveJobs['add']>[0][] {
  const stopped = [
    ...e.interruptedJobs().map((j) => ({ j, state: 'interrupted' as const })),
    ...e.cancelledJobs().map((j) => ({ j, state: 'cancelled' as const })),
  ];
  return stopped.map(({ j, state }) => {
    const stored = e.local.jobStored(j.id);
    // How far it got and how long it worked, as its runs left them (none before its first frame).
    const runs = e.local.jobRunStats(j.id);
    const total = runs?.progress?.bytesTotal ?? 0;
    const worked = runs ? runs.prior.activeMs + runs.current.activeMs : 0;
    return {
      id: j.id,
      kind: 'backup',
      state,
      backupId: j.id,
      title: titleFor(j.sources),
      target: jobTarget(e, j.targetId),
      startedAt: j.createdAt,
      bytesTotal: total,
      bytesDone: total > 0 ? Math.min(total, stored.bytes) : 0,
      ...(worked > 0 ? { elapsedMs: worked } : {}),
      error: state === 'cancelled' ? null : j.error,
      stored,
    };
  });
}

/** Where a backup job stores: its target, or in a pool "the pool" (placement spreads its packs). */
export function jobTarget(e: Engine, targetId: number): string {
  return e.local.inPool() && e.local.targetById(targetId).poolId !== null
    ? POOL_JOB_TARGET
    : e.local.targetById(targetId).name;
}
