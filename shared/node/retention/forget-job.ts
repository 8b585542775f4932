import { ObjectKey } from '../../format/constants.ts';
import type { ForgetGroupView, ForgetResult } from '../../api/retention.ts';
import type { RepoLock } from '../repository/locks.ts';
import type { Repository } from '../repository/repository.ts';
import type { SnapshotDoc } from '../format/snapshot.ts';
import { SettingsError } from '../home-and-settings.ts';
import type { JobListener } from '../jobs/job-events.ts';
import { applyPolicyGrouped, matchesFilter, policyIsEmpty, type KeepPolicy } from './retention-policy.ts';
import { inParallel, PARALLEL_DELETES } from '../jobs/in-parallel.ts';

export interface ForgetOptions {
  /** Snapshots to remove by id (not with a policy). */
  ids?: string[];
  policy?: KeepPolicy;
  hosts?: string[];
  paths?: string[];
  tags?: string[];
  dryRun?: boolean;
  /** How long to wait for a prune's exclusive lock (ms; default 1 minute). */
  lockWaitMs?: number;
}

/**
 * Removes snapshots, by id or by a keep policy (retention-policy.ts): deletes `snapshots/<id>` under a
 * shared lock (forget deletes no data, so it runs beside backups) and drops them from the local cache.
 * The data only they needed stays until `prune`.
 */
export async function runForget(
  repo: Repository,
  opts: ForgetOptions,
  listener: JobListener = {},
): Promise<ForgetResult> {
  const ks = repo.ks;
  const given = opts.ids ?? [];
  const policy = opts.policy ?? {};
  if (given.length === 0 && policyIsEmpty(policy))
    throw new SettingsError(
      'Name the snapshots to forget, or give at least one --keep-* rule (for example --keep-last 10): forget removes nothing otherwise.',
    );
  if (given.length && !policyIsEmpty(policy))
    throw new SettingsError('Give either snapshot ids or --keep-* rules, not both.');
  const targets = ks.listTargets();
  for (const t of targets) await repo.refresh(t);
  // A unique prefix of 4 hex digits or more names a snapshot, as it does for restore.
  const ids = given.map((id) => ks.snapshots.resolveId(id));
  const all = ks.snapshots.list();
  let groups: ForgetGroupView[];
  const view = (d: SnapshotDoc) => ({ id: d.id, time: d.time });
  if (ids.length) {
    const byId = new Map(all.map((s) => [s.id, s.doc]));
    const unknown = ids.filter((id) => !byId.has(id));
    if (unknown.length)
      throw new SettingsError(
        unknown.length === 1
          ? repo.ks.snapshots.notFound(unknown[0]!)
          : `No snapshot with id ${unknown.join(', ')}: "cairn ls" lists them.`,
      );
    const named = new Set(ids);
    groups = [
      {
        host: '',
        sources: [],
        keep: [],
        remove: all.filter((s) => named.has(s.id)).map((s) => view(s.doc)),
      },
    ];
  } else {
    const docs = all.map((s) => s.doc).filter((d) => matchesFilter(d, opts));
    groups = applyPolicyGrouped(docs, policy).map((g) => ({
      host: g.host,
      sources: g.sources,
      keep: g.keep.map((k) => ({ ...view(k.snapshot), reasons: k.reasons })),
      remove: g.remove.map(view),
    }));
  }
  const removed = groups.flatMap((g) => g.remove.map((r) => r.id));
  if (opts.dryRun || removed.length === 0) return { dryRun: Boolean(opts.dryRun), groups, removed };

  const where = new Map(all.map((s) => [s.id, s.targetId]));
  const locks: RepoLock[] = [];
  try {
    for (const t of targets)
      locks.push(
        await repo.lock(t, {
          kind: 'shared',
          operation: 'forget',
          waitMs: opts.lockWaitMs ?? 60_000,
          onWait: (m) => listener.notice?.(m),
        }),
      );
    for (const lock of locks) lock.assertHeld();
    let done = 0;
    await inParallel(removed, PARALLEL_DELETES, async (id) => {
      // Its own target first; a copy under the same name elsewhere goes too.
      const own = targets.find((t) => t.id === where.get(id));
      for (const t of own ? [own, ...targets.filter((x) => x !== own)] : targets)
        await repo.storage(t).delete(ObjectKey.snapshot(id));
      ks.snapshots.remove([id]);
      listener.files?.(++done, removed.length);
    });
  } finally {
    for (const lock of locks) await lock.release();
  }
  return { dryRun: false, groups, removed };
}
